package postgres_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	dpg "github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/hooks/audit"
	"github.com/bichat-go/bichat/hooks/audit/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

var tenants = []string{"acme", "globex", "initech"}

// freshSchema migrates a schema of its own for t, dropped when t ends.
func freshSchema(t *testing.T, p *pgxpool.Pool) string {
	t.Helper()
	schema := pgtest.Schema(t, p)
	if err := dpg.Migrate(t.Context(), p, schema); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return schema
}

func newSink(t *testing.T, p *pgxpool.Pool, schema string) *postgres.Sink {
	t.Helper()
	s, err := postgres.New(p, postgres.Options{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// buildChain records n entries over the three tenants and returns how
// many each got.
func buildChain(t *testing.T, rec *audit.Recorder, n int) map[string]uint64 {
	t.Helper()
	counts := map[string]uint64{}
	base := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	for i := range n {
		tenant := tenants[(i*i+i/3)%len(tenants)]
		data := fmt.Sprintf(`{"sql":"SELECT sum(total) FROM sales.orders WHERE region = 'r%d'","rows":%d,"cost_usd":0.0125,"size":1099511627776}`, i, i)
		e, err := rec.Record(t.Context(), tenant, audit.Entry{Time: base.Add(time.Duration(i) * 1001 * time.Microsecond),
			Type: "sql", UserID: "u" + tenant, SessionID: fmt.Sprintf("s%d", i/5), MessageID: fmt.Sprintf("m%d", i/2), RunID: fmt.Sprintf("r%d", i/2),
			Data: json.RawMessage(data)})
		if err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
		counts[tenant]++
		if e.Seq != counts[tenant] {
			t.Fatalf("Record %d: seq %d, want %d", i, e.Seq, counts[tenant])
		}
	}
	return counts
}

func wantBreak(t *testing.T, err error, tenant string, seq uint64) {
	t.Helper()
	var be *audit.BreakError
	if !errors.As(err, &be) || be.TenantID != tenant || be.Seq != seq {
		t.Fatalf("want a break of %s at seq %d, got %v", tenant, seq, err)
	}
}

func TestSinkChainAndTampering(t *testing.T) {
	t.Parallel()
	p := pgtest.SharedPool(t, 8)
	ctx := t.Context()
	src := freshSchema(t, p)
	sink := newSink(t, p, src)
	rec, err := audit.New(sink, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	counts := buildChain(t, rec, 50)
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatalf("untouched chain: %v", err)
	}
	got, err := sink.Tenants(ctx)
	if err != nil || len(got) != 3 || got[0] != "acme" || got[2] != "initech" {
		t.Fatalf("Tenants = %v, %v", got, err)
	}
	n := counts["acme"]
	if n < 10 {
		t.Fatalf("acme has %d entries", n)
	}

	// Each case works on a copy of the chain in a schema of its own.
	work := freshSchema(t, p)
	wsink := newSink(t, p, work)
	se, sh := pgx.Identifier{src, "audit_entries"}.Sanitize(), pgx.Identifier{src, "audit_heads"}.Sanitize()
	we, wh := pgx.Identifier{work, "audit_entries"}.Sanitize(), pgx.Identifier{work, "audit_heads"}.Sanitize()
	exec := func(t *testing.T, sql string, args ...any) {
		t.Helper()
		if _, err := p.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// flip changes one byte (ASCII, so the text stays valid UTF-8) of a
	// text column of acme's entry seq.
	flip := func(col string, seq uint64, i int) func(t *testing.T) {
		return func(t *testing.T) {
			var v string
			if err := p.QueryRow(ctx, `SELECT `+col+` FROM `+we+` WHERE tenant_id = 'acme' AND seq = $1`, int64(seq)).Scan(&v); err != nil {
				t.Fatal(err)
			}
			b := []byte(v)
			b[i%len(b)] ^= 1
			exec(t, `UPDATE `+we+` SET `+col+` = $2 WHERE tenant_id = 'acme' AND seq = $1`, int64(seq), string(b))
		}
	}
	type tc struct {
		name    string
		tamper  func(t *testing.T)
		wantSeq uint64
	}
	var cases []tc
	for _, seq := range []uint64{1, n / 2, n} {
		for _, col := range []string{"tenant_id", "type", "user_id", "session_id", "message_id", "run_id", "prev", "hash"} {
			cases = append(cases, tc{fmt.Sprintf("%s of seq %d", col, seq), flip(col, seq, 1), seq})
		}
		cases = append(cases,
			tc{fmt.Sprintf("seq %d moved", seq), func(t *testing.T) {
				exec(t, `UPDATE `+we+` SET seq = seq + 1000 WHERE tenant_id = 'acme' AND seq = $1`, int64(seq))
			}, seq},
			tc{fmt.Sprintf("time of seq %d", seq), func(t *testing.T) {
				exec(t, `UPDATE `+we+` SET occurred_at = occurred_at + interval '1 microsecond' WHERE tenant_id = 'acme' AND seq = $1`, int64(seq))
			}, seq})
	}
	var dataLen int
	if err := p.QueryRow(ctx, `SELECT length(data) FROM `+se+` WHERE tenant_id = 'acme' AND seq = 2`).Scan(&dataLen); err != nil {
		t.Fatal(err)
	}
	for i := range dataLen {
		cases = append(cases, tc{fmt.Sprintf("data byte %d of seq 2", i), flip("data", 2, i), 2})
	}
	forge := func(t *testing.T, seq uint64, prevSeq uint64) {
		var prev string
		if err := p.QueryRow(ctx, `SELECT hash FROM `+we+` WHERE tenant_id = 'acme' AND seq = $1`, int64(prevSeq)).Scan(&prev); err != nil {
			t.Fatal(err)
		}
		f := audit.Entry{TenantID: "acme", Seq: seq, Time: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), Type: "answer",
			Data: json.RawMessage(`{"text":"forged"}`), Prev: prev}
		h, err := f.ComputeHash()
		if err != nil {
			t.Fatal(err)
		}
		exec(t, `INSERT INTO `+we+` VALUES ('acme', $1, $2, $3, '', '', '', '', $4, $5, $6)`, int64(seq), f.Time, f.Type, string(f.Data), f.Prev, h)
	}
	cases = append(cases,
		tc{"swap 2 and 5", func(t *testing.T) {
			exec(t, `UPDATE `+we+` SET seq = 1000002 WHERE tenant_id = 'acme' AND seq = 2`)
			exec(t, `UPDATE `+we+` SET seq = 2 WHERE tenant_id = 'acme' AND seq = 5`)
			exec(t, `UPDATE `+we+` SET seq = 5 WHERE tenant_id = 'acme' AND seq = 1000002`)
		}, 2},
		tc{"delete 3", func(t *testing.T) { exec(t, `DELETE FROM `+we+` WHERE tenant_id = 'acme' AND seq = 3`) }, 3},
		tc{"forged 4 inserted (later entries renumbered)", func(t *testing.T) {
			exec(t, `UPDATE `+we+` SET seq = seq + 1000000 WHERE tenant_id = 'acme' AND seq >= 4`)
			exec(t, `UPDATE `+we+` SET seq = seq - 999999 WHERE tenant_id = 'acme' AND seq > 1000000`)
			forge(t, 4, 3)
		}, 5}, // the forged 4 links to 3; the real 4, now at seq 5, no longer matches its hash
		tc{"forged 4 replacing the real one", func(t *testing.T) {
			exec(t, `DELETE FROM `+we+` WHERE tenant_id = 'acme' AND seq = 4`)
			forge(t, 4, 3)
		}, 5},
		tc{"truncate the end", func(t *testing.T) {
			exec(t, `DELETE FROM `+we+` WHERE tenant_id = 'acme' AND seq > $1`, int64(n-3))
		}, n - 2},
		tc{"truncate the end and forge a new last entry", func(t *testing.T) {
			exec(t, `DELETE FROM `+we+` WHERE tenant_id = 'acme' AND seq = $1`, int64(n))
			forge(t, n, n-1)
		}, n},
		tc{"forged entry appended past the head", func(t *testing.T) { forge(t, n+1, n) }, n + 1},
		tc{"head row deleted", func(t *testing.T) { exec(t, `DELETE FROM `+wh+` WHERE tenant_id = 'acme'`) }, 1},
		tc{"truncate the start", func(t *testing.T) { exec(t, `DELETE FROM `+we+` WHERE tenant_id = 'acme' AND seq <= 2`) }, 1},
		tc{"delete the whole chain", func(t *testing.T) { exec(t, `DELETE FROM `+we+` WHERE tenant_id = 'acme'`) }, 1},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			exec(t, `TRUNCATE `+we+`, `+wh)
			exec(t, `INSERT INTO `+we+` SELECT * FROM `+se)
			exec(t, `INSERT INTO `+wh+` SELECT * FROM `+sh)
			c.tamper(t)
			wantBreak(t, audit.VerifyTenant(ctx, wsink, "acme"), "acme", c.wantSeq)
		})
	}
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatalf("the source chain after the cases: %v", err)
	}
}

// TestSinkTwoReplicas appends to the same tenants from two Recorders on
// two pools (two replicas) at once: the chains stay linear and complete.
func TestSinkTwoReplicas(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	shared := pgtest.SharedPool(t, 8)
	schema := freshSchema(t, shared)
	recs := make([]*audit.Recorder, 2)
	sinks := make([]*postgres.Sink, 2)
	for i := range recs {
		sinks[i] = newSink(t, pgtest.NewPool(t, 4), schema)
		var err error
		if recs[i], err = audit.New(sinks[i], audit.Options{}); err != nil {
			t.Fatal(err)
		}
	}
	const workers, each = 6, 15
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				tenant := tenants[(w+i)%2] // two tenants, heavily contended
				if _, err := recs[w%2].Record(ctx, tenant, audit.Entry{Type: "note", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := audit.VerifyAll(ctx, sinks[0]); err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, tenant := range tenants[:2] {
		h, err := sinks[1].Head(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		var rows uint64
		if err := shared.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{schema, "audit_entries"}.Sanitize()+` WHERE tenant_id = $1`, tenant).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if rows != h.Seq {
			t.Fatalf("%s: %d rows, head at seq %d", tenant, rows, h.Seq)
		}
		total += h.Seq
	}
	if total != workers*each {
		t.Fatalf("%d entries, want %d", total, workers*each)
	}
	// A new Recorder (a restarted replica) continues the chain.
	rec, _ := audit.New(newSink(t, shared, schema), audit.Options{})
	h, _ := sinks[0].Head(ctx, "acme")
	e, err := rec.Record(ctx, "acme", audit.Entry{Type: "note"})
	if err != nil || e.Seq != h.Seq+1 || e.Prev != h.Hash {
		t.Fatalf("after restart: %+v, %v (head %+v)", e, err, h)
	}
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	if _, err := postgres.New(nil, postgres.Options{}); err == nil {
		t.Error("nil pool accepted")
	}
	p := pgtest.SharedPool(t, 8)
	if _, err := postgres.New(p, postgres.Options{Schema: "Bad-Schema"}); err == nil {
		t.Error("bad schema accepted")
	}
	// A seal error stores nothing.
	schema := freshSchema(t, p)
	s := newSink(t, p, schema)
	boom := errors.New("boom")
	if _, err := s.Append(context.Background(), "acme", func(audit.Anchor) (audit.Entry, error) { return audit.Entry{}, boom }); !errors.Is(err, boom) {
		t.Fatalf("seal error: %v", err)
	}
	if h, err := s.Head(context.Background(), "acme"); err != nil || h.Seq != 0 || h.Hash != audit.ZeroHash {
		t.Fatalf("head after a failed seal: %+v, %v", h, err)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	pgtest.CloseSharedPool()
	os.Exit(code)
}
