package neo4j

import (
	"context"

	driver "github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

// FromDriver adapts a neo4j-go-driver DriverWithContext to Sessions.
// database names the database; empty means the server's default.
func FromDriver(d driver.DriverWithContext, database string) Sessions {
	return driverSessions{d: d, database: database}
}

type driverSessions struct {
	d        driver.DriverWithContext
	database string
}

func (s driverSessions) NewSession(ctx context.Context) Session {
	return driverSession{s: s.d.NewSession(ctx, driver.SessionConfig{DatabaseName: s.database})}
}

type driverSession struct{ s driver.SessionWithContext }

func (s driverSession) ExecuteRead(ctx context.Context, work func(Tx) (any, error)) (any, error) {
	return s.s.ExecuteRead(ctx, func(tx driver.ManagedTransaction) (any, error) { return work(driverTx{tx}) })
}

func (s driverSession) ExecuteWrite(ctx context.Context, work func(Tx) (any, error)) (any, error) {
	return s.s.ExecuteWrite(ctx, func(tx driver.ManagedTransaction) (any, error) { return work(driverTx{tx}) })
}

func (s driverSession) Close(ctx context.Context) error { return s.s.Close(ctx) }

type driverTx struct{ tx driver.ManagedTransaction }

func (t driverTx) Run(ctx context.Context, cypher string, params map[string]any) ([]Record, error) {
	res, err := t.tx.Run(ctx, cypher, params)
	if err != nil {
		return nil, err
	}
	recs, err := res.Collect(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Record, len(recs))
	for i, r := range recs {
		out[i] = r.AsMap()
	}
	return out, nil
}
