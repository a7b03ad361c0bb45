package semantic

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// ToolName is the name of the query_metrics tool.
const ToolName = "query_metrics"

// Config configures query_metrics. Model and DB are required.
type Config struct {
	// Model is the semantic layer, checked with Validate against DB.
	Model *Model
	// DB runs the generated statement through its read-only path (the
	// same checks, transaction, timeout and row cap as query_database).
	DB sqldb.DB
	// Results stores each result so run_python, draw_chart and the
	// export tools can use it by name; default tools.NewMemoryResults(10).
	// Pass the data tools' store to share the names.
	Results tools.Results
	// Limits bound the statement; TenantID and Attributes default to the
	// call's (agents.CallInfo), as in the data tools.
	Limits sqldb.Limits
	// PreviewRows is how many rows the model sees (default
	// sqldb.DefaultPreviewRows).
	PreviewRows int
	// Minimize shows the model column statistics instead of row values.
	Minimize bool
	// Store, when set, keeps each result's CSV for download.
	Store domain.ArtifactStore
}

// NewTool returns query_metrics: the model names metrics, dimensions
// (time ones with a grain), filters, a time range, order and limit; the
// tool writes the SQL for DB's dialect (Model.SQL), runs it with
// DB.Query and returns the two-track result of query_database: a summary
// with a preview for the model, a *sqldb.QueryPayload (every row, the SQL
// as Table.SQL, the CSV) and a CSV artifact for the host.
func NewTool(cfg Config) (agents.Tool, error) {
	if cfg.Model == nil || cfg.DB == nil {
		return nil, errors.New("semantic: Config.Model and Config.DB are required")
	}
	if d := cfg.DB.Dialect(); d != sqldb.DialectPostgres && d != sqldb.DialectSQLite {
		return nil, fmt.Errorf("semantic: dialect %q is not supported (want %s or %s)", d, sqldb.DialectPostgres, sqldb.DialectSQLite)
	}
	if cfg.Results == nil {
		cfg.Results = tools.NewMemoryResults(10)
	}
	if cfg.PreviewRows <= 0 {
		cfg.PreviewRows = sqldb.DefaultPreviewRows
	}
	m := cfg.Model
	desc := "Query metrics of the semantic layer without writing SQL: name metrics, dimensions to group by " +
		"(a time dimension with a grain: name__month), filters, a time range, order and limit. " +
		"The joins are written for you and nothing double counts. Metrics: " + strings.Join(m.metricNames(), ", ") +
		". Dimensions: " + strings.Join(m.dimensionNames(), ", ") + ". The result is stored under a name (result_N) like query_database's."
	timeout := cfg.Limits.WithDefaults().Timeout + 10*time.Second
	return agents.NewTool(ToolName, desc, func(ctx context.Context, q Query) (agents.Result, error) {
		stmt, datasets, err := m.build(cfg.DB.Dialect(), q)
		if err != nil {
			return agents.Result{}, err
		}
		lim := cfg.Limits.WithDefaults()
		if info, ok := agents.CallInfoFromContext(ctx); ok {
			if lim.TenantID == "" {
				lim.TenantID = info.TenantID
			}
			if lim.Attributes == nil {
				lim.Attributes = info.Attributes
			}
		}
		res, err := cfg.DB.Query(ctx, stmt, lim)
		if err != nil {
			return agents.Result{}, fmt.Errorf("semantic: query_metrics: %w", err)
		}
		if len(res.Datasets) == 0 {
			res.Datasets = datasets
		}
		return cfg.result(ctx, q, res, lim)
	}, agents.WithParallel(), agents.WithTimeout(timeout))
}

// result stores res and builds the two-track result.
func (cfg Config) result(ctx context.Context, q Query, res *sqldb.Result, lim sqldb.Limits) (agents.Result, error) {
	p, art, err := sqldb.StoreResult(ctx, cfg.Results, cfg.Store, res)
	if err != nil {
		return agents.Result{}, fmt.Errorf("semantic: %w", err)
	}
	title := "Metrics " + strings.Join(q.Metrics, ", ")
	if len(q.Dimensions) > 0 {
		title += " by " + strings.Join(q.Dimensions, ", ")
	}
	summary := title + "\n" + sqldb.Summary(p.Table.Name, res, lim.MaxRows, cfg.PreviewRows, cfg.Minimize)
	return agents.Result{Summary: summary, Payload: p, Artifacts: []domain.Artifact{art}, Datasets: res.Datasets}, nil
}
