package sqldb

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb/fanout"
)

// Tool names.
const (
	ToolQuery    = "query_database"
	ToolSample   = "get_sample_data"
	ToolDescribe = "describe_table"
	ToolProfile  = "profile_dataset"
)

// DefaultPreviewRows is how many rows query_database shows the model.
const DefaultPreviewRows = 20

// Config configures the data tools. Only DB is required.
type Config struct {
	DB DB
	// Results stores every fetched table so later tools (run_python,
	// draw_chart, export_excel) can use it by name; default
	// tools.NewMemoryResults(10).
	Results tools.Results
	// Limits bound query_database (and, except MaxRows, the other tools).
	// Tables is the allowlist; TenantID defaults to the call's tenant
	// (agents.CallInfo.TenantID) and Attributes to the call's
	// data-scoping attributes (agents.CallInfo.Attributes).
	Limits Limits
	// PreviewRows is how many rows the model sees (default 20).
	PreviewRows int
	// Minimize is data-minimisation mode: the model sees columns, row
	// counts and per-column min/max/null counts, never row values; the
	// host still gets every row.
	Minimize bool
	// Datasets are the datasets the tools describe, sample and profile.
	// Nil means DB.Introspect (cached for CacheFor).
	Datasets []domain.Dataset
	// CacheFor is how long an introspection is reused (default 1 minute).
	CacheFor time.Duration
	// Bus receives a QueryEvent for every statement the tools run.
	Bus *hooks.Bus
	// Store, when set, keeps each result's CSV under the call's tenant so
	// the host can download the table artifact (its URI is set then).
	// Without it the CSV travels only in the payload.
	Store domain.ArtifactStore
	// DisableFanOutGuard turns off the join fan-out (chasm trap) guard.
	// By default query_database checks each statement it ran against the
	// join cardinalities of the datasets' relationships (see package
	// fanout) and, when an aggregate double counts rows that a
	// one-to-many join repeats, appends a warning with a repair hint to
	// the model's summary and to QueryPayload.FanOut. The statement runs
	// either way.
	DisableFanOutGuard bool
	// Relationships are join cardinalities the fan-out guard uses besides
	// the datasets' own (foreign keys): a semantic layer's joins
	// (semantic.Model.Relationships) or joins confirmed by InferJoins.
	Relationships []domain.Relationship
}

// Tools are the SQL data tools over one database. Build with New.
type Tools struct {
	cfg Config

	mu      sync.Mutex
	cached  []domain.Dataset
	cacheAt time.Time

	fanMu  sync.Mutex
	fanFor []domain.Dataset // the datasets fanChk was built from
	fanChk *fanout.Checker
}

// New checks cfg and returns the tools.
func New(cfg Config) (*Tools, error) {
	if cfg.DB == nil {
		return nil, errors.New("sqldb: Config.DB is required")
	}
	if cfg.Results == nil {
		cfg.Results = tools.NewMemoryResults(10)
	}
	if cfg.PreviewRows <= 0 {
		cfg.PreviewRows = DefaultPreviewRows
	}
	if cfg.CacheFor <= 0 {
		cfg.CacheFor = time.Minute
	}
	return &Tools{cfg: cfg}, nil
}

// Results returns the store query results go to.
func (t *Tools) Results() tools.Results { return t.cfg.Results }

// All returns query_database, get_sample_data, describe_table and
// profile_dataset.
func (t *Tools) All() []agents.Tool {
	return []agents.Tool{t.QueryTool(), t.SampleTool(), t.DescribeTool(), t.ProfileTool()}
}

func (t *Tools) toolTimeout() time.Duration {
	return t.cfg.Limits.WithDefaults().Timeout + 10*time.Second
}

// QueryArgs are the arguments of query_database.
type QueryArgs struct {
	SQL string `json:"sql" jsonschema:"minLength=1,maxLength=20000,description=One read-only SELECT statement (WITH and VALUES allowed). Use schema-qualified dataset names."`
}

// QueryPayload is what the host receives from query_database and
// get_sample_data (the model sees only the summary).
type QueryPayload struct {
	// Table holds every fetched row; Table.Name is the result name.
	Table tools.Table `json:"table"`
	// Rows is the number of rows fetched.
	Rows int `json:"rows"`
	// Truncated reports that more rows existed than were fetched.
	Truncated bool          `json:"truncated"`
	CutCells  int           `json:"cut_cells,omitempty"`
	Duration  time.Duration `json:"duration"`
	// CSV is the table as CSV, the content of the table artifact.
	CSV []byte `json:"csv"`
	// FanOut lists the aggregates of the statement that a one-to-many
	// join inflates (query_database only; see Config.DisableFanOutGuard).
	FanOut []fanout.Warning `json:"fan_out,omitempty"`
}

// QueryTool returns query_database.
func (t *Tools) QueryTool() agents.Tool {
	desc := fmt.Sprintf("Run one read-only SQL SELECT on the %s database and get the result. "+
		"The result is stored under a name (result_N) that run_python, draw_chart and the export tools accept. "+
		"At most %d rows are fetched; aggregate in SQL rather than fetching raw rows.", t.cfg.DB.Dialect(), t.cfg.Limits.WithDefaults().MaxRows)
	return agents.MustTool(ToolQuery, desc, func(ctx context.Context, in QueryArgs) (agents.Result, error) {
		lim := t.limits(ctx)
		res, err := t.cfg.DB.Query(ctx, in.SQL, lim)
		t.publish(ctx, ToolQuery, in.SQL, res, err)
		if err != nil {
			return agents.Result{}, err
		}
		r, err := t.tableResult(ctx, res, lim, "")
		if err != nil {
			return r, err
		}
		if ws := t.fanOut(ctx, in.SQL); len(ws) > 0 {
			if p, ok := r.Payload.(*QueryPayload); ok {
				p.FanOut = ws
			}
			r.Summary = FanOutSummary(r.Summary, ws)
		}
		return r, nil
	}, agents.WithParallel(), agents.WithTimeout(t.toolTimeout()))
}

// fanOut checks sql for join fan-out against the known datasets; nil when
// the guard is off or the datasets cannot be read (it never fails a
// query).
func (t *Tools) fanOut(ctx context.Context, sql string) []fanout.Warning {
	if t.cfg.DisableFanOutGuard {
		return nil
	}
	ds, err := t.datasets(ctx)
	if err != nil || len(ds) == 0 {
		return nil
	}
	t.fanMu.Lock()
	if t.fanChk == nil || len(t.fanFor) != len(ds) || &t.fanFor[0] != &ds[0] {
		t.fanChk, t.fanFor = fanout.New(t.cfg.Relationships, ds), ds
	}
	chk := t.fanChk
	t.fanMu.Unlock()
	return chk.Check(sql)
}

// FanOutSummary appends the fan-out warnings to a query_database summary,
// one paragraph each, as the model reads them.
func FanOutSummary(summary string, ws []fanout.Warning) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(summary, "\n"))
	for _, w := range ws {
		b.WriteString("\n\nWARNING (join fan-out, the numbers above are likely inflated): ")
		b.WriteString(w.String())
	}
	b.WriteString("\n")
	return b.String()
}

// limits are the configured limits with the call's tenant and
// data-scoping attributes where the configuration leaves them unset.
func (t *Tools) limits(ctx context.Context) Limits {
	lim := t.cfg.Limits.WithDefaults()
	if info, ok := agents.CallInfoFromContext(ctx); ok {
		if lim.TenantID == "" {
			lim.TenantID = info.TenantID
		}
		if lim.Attributes == nil {
			lim.Attributes = info.Attributes
		}
	}
	return lim
}

// tableResult stores res and builds the two-track result.
func (t *Tools) tableResult(ctx context.Context, res *Result, lim Limits, title string) (agents.Result, error) {
	p, art, err := StoreResult(ctx, t.cfg.Results, t.cfg.Store, res)
	if err != nil {
		return agents.Result{}, err
	}
	var b strings.Builder
	if title != "" {
		b.WriteString(title + "\n")
	}
	b.WriteString(Summary(p.Table.Name, res, lim.MaxRows, t.cfg.PreviewRows, t.cfg.Minimize))
	return agents.Result{Summary: b.String(), Payload: p, Artifacts: []domain.Artifact{art}, Datasets: res.Datasets}, nil
}

// StoreResult keeps res under a new name (result_1, ...) in results and,
// when store is set, its CSV as a table artifact; it returns the payload
// and the artifact the SQL tools give the host (Payload.Table.Name is the
// name). Tools that run SQL of their own (tools/semantic) use it too, so
// their results are addressable the same way.
func StoreResult(ctx context.Context, results tools.Results, store domain.ArtifactStore, res *Result) (*QueryPayload, domain.Artifact, error) {
	tb := res.Table()
	name, err := results.Put(ctx, tb)
	if err != nil {
		return nil, domain.Artifact{}, fmt.Errorf("sqldb: store result: %w", err)
	}
	tb.Name = name
	csv, err := tb.CSV()
	if err != nil {
		return nil, domain.Artifact{}, fmt.Errorf("sqldb: encode result: %w", err)
	}
	p := &QueryPayload{Table: tb, Rows: len(res.Rows), Truncated: res.Truncated, CutCells: res.CutCells, Duration: res.Duration, CSV: csv}
	art := domain.Artifact{
		Kind: domain.ArtifactTable, Name: name + ".csv", MediaType: "text/csv",
		SHA256: domain.ContentHash(csv), Size: int64(len(csv)),
		Metadata: map[string]string{
			"result": name, "rows": strconv.Itoa(len(res.Rows)), "truncated": strconv.FormatBool(res.Truncated),
			"columns": strconv.Itoa(len(res.Columns)),
		},
	}
	if store != nil {
		stored, err := tools.SaveArtifact(ctx, store, art, csv)
		if err != nil {
			return nil, domain.Artifact{}, fmt.Errorf("sqldb: store result %s: %w", name, err)
		}
		art = stored
	}
	return p, art, nil
}

// Summary renders what the model sees of a result: its name, row count,
// truncation, duration, then a markdown table of at most preview rows, or,
// when minimize is set, only columns with types, null counts and min/max.
func Summary(name string, res *Result, maxRows, preview int, minimize bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Result %s: %d column(s), %d row(s)", name, len(res.Columns), len(res.Rows))
	if res.Truncated {
		fmt.Fprintf(&b, ", TRUNCATED at %d rows: more rows exist, so aggregate or filter in SQL instead of reading them all", maxRows)
	}
	fmt.Fprintf(&b, "; took %s.", roundDuration(res.Duration))
	if res.CutCells > 0 {
		fmt.Fprintf(&b, " %d long value(s) were cut.", res.CutCells)
	}
	if name != "" {
		fmt.Fprintf(&b, " Refer to it as %q in run_python, draw_chart and export tools.", name)
	}
	b.WriteString("\n\n")
	if minimize {
		b.WriteString("Values withheld (data minimisation); column statistics over the fetched rows:\n\n")
		b.WriteString(ColumnStats(res).Markdown())
		return b.String()
	}
	if len(res.Rows) == 0 {
		b.WriteString("(no rows)\n")
		return b.String()
	}
	n := min(preview, len(res.Rows))
	b.WriteString(Markdown(res.Columns, res.Rows[:n]))
	if n < len(res.Rows) {
		fmt.Fprintf(&b, "(showing %d of %d rows)\n", n, len(res.Rows))
	}
	return b.String()
}

func roundDuration(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}

// Markdown renders rows as a markdown table; cells are shown with
// tools.FormatCell, cut at 80 characters, with pipes escaped.
func Markdown(cols []tools.Column, rows [][]any) string {
	var b strings.Builder
	b.WriteString("|")
	for _, c := range cols {
		b.WriteString(" " + mdCell(c.Name) + " |")
	}
	b.WriteString("\n|")
	for range cols {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("|")
		for _, v := range r {
			b.WriteString(" " + mdCell(tools.FormatCell(v)) + " |")
		}
		b.WriteString("\n")
	}
	return b.String()
}

func mdCell(s string) string {
	if len(s) > 80 {
		s, _ = cutString(s, 79)
		s += "…"
	}
	s = strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	if s == "" {
		return " "
	}
	return s
}

// Stats are per-column statistics over fetched rows (data-minimisation
// summaries).
type Stats []ColumnStat

// ColumnStat describes one column without its values.
type ColumnStat struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Nulls int    `json:"nulls"`
	// Min and Max are rendered with tools.FormatCell; empty when the
	// column has no comparable values.
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
}

// ColumnStats computes null counts and min/max per column of res.
func ColumnStats(res *Result) Stats {
	out := make(Stats, len(res.Columns))
	for i, c := range res.Columns {
		st := ColumnStat{Name: c.Name, Type: c.Type}
		var lo, hi any
		for _, r := range res.Rows {
			v := r[i]
			if v == nil {
				st.Nulls++
				continue
			}
			if lo == nil || less(v, lo) {
				lo = v
			}
			if hi == nil || less(hi, v) {
				hi = v
			}
		}
		if lo != nil {
			if _, isBytes := lo.([]byte); !isBytes {
				st.Min, st.Max = tools.FormatCell(lo), tools.FormatCell(hi)
			}
		}
		out[i] = st
	}
	return out
}

// less orders values of the same kind; values of different kinds compare
// by their text.
func less(a, b any) bool {
	switch x := a.(type) {
	case int64:
		switch y := b.(type) {
		case int64:
			return x < y
		case float64:
			return float64(x) < y
		}
	case float64:
		switch y := b.(type) {
		case float64:
			return x < y
		case int64:
			return x < float64(y)
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Before(y)
		}
	case bool:
		if y, ok := b.(bool); ok {
			return !x && y
		}
	case string:
		if y, ok := b.(string); ok {
			return x < y
		}
	}
	return tools.FormatCell(a) < tools.FormatCell(b)
}

// Markdown renders the statistics as a markdown table.
func (s Stats) Markdown() string {
	var b strings.Builder
	b.WriteString("| column | type | nulls | min | max |\n| --- | --- | --- | --- | --- |\n")
	for _, c := range s {
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s |\n", mdCell(c.Name), mdCell(c.Type), c.Nulls, mdCell(c.Min), mdCell(c.Max))
	}
	return b.String()
}

// datasets returns the known datasets (configured or introspected).
func (t *Tools) datasets(ctx context.Context) ([]domain.Dataset, error) {
	if t.cfg.Datasets != nil {
		return t.cfg.Datasets, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cached != nil && time.Since(t.cacheAt) < t.cfg.CacheFor {
		return t.cached, nil
	}
	ds, err := t.cfg.DB.Introspect(ctx)
	if err != nil {
		return nil, err
	}
	if tables := t.cfg.Limits.Tables; len(tables) > 0 {
		ds = slices.DeleteFunc(slices.Clone(ds), func(d domain.Dataset) bool {
			return !slices.Contains(tables, d.Source) && !slices.Contains(tables, d.Name)
		})
	}
	t.cached, t.cacheAt = ds, time.Now()
	return ds, nil
}

// Dataset finds a dataset by name: exact, then case-insensitive, then by
// its unqualified name when that is unique. The error lists what exists.
func (t *Tools) Dataset(ctx context.Context, name string) (domain.Dataset, error) {
	ds, err := t.datasets(ctx)
	if err != nil {
		return domain.Dataset{}, err
	}
	return findDataset(ds, name)
}

func findDataset(ds []domain.Dataset, name string) (domain.Dataset, error) {
	name = strings.TrimSpace(name)
	for _, d := range ds {
		if d.Name == name || d.Source == name {
			return d, nil
		}
	}
	var matches []domain.Dataset
	for _, d := range ds {
		if strings.EqualFold(d.Name, name) || strings.EqualFold(unqualified(d.Name), unqualified(name)) {
			matches = append(matches, d)
		}
	}
	if len(matches) == 1 {
		return matches[0], nil
	}
	names := make([]string, 0, len(ds))
	for _, d := range ds {
		names = append(names, d.Name)
	}
	if len(names) > 30 {
		names = append(names[:30], "...")
	}
	if len(matches) > 1 {
		return domain.Dataset{}, fmt.Errorf("dataset %q is ambiguous; qualify it: %s: %w", name, datasetNames(matches), domain.ErrNotFound)
	}
	return domain.Dataset{}, fmt.Errorf("dataset %q does not exist; available: %s: %w", name, strings.Join(names, ", "), domain.ErrNotFound)
}

func datasetNames(ds []domain.Dataset) string {
	n := make([]string, len(ds))
	for i, d := range ds {
		n[i] = d.Name
	}
	return strings.Join(n, ", ")
}

func unqualified(n string) string {
	if i := strings.LastIndexByte(n, '.'); i >= 0 {
		return n[i+1:]
	}
	return n
}

// SampleArgs are the arguments of get_sample_data.
type SampleArgs struct {
	Dataset string `json:"dataset" jsonschema:"minLength=1,description=The dataset name as describe_table or the dataset list shows it."`
	Limit   int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=50,default=10,description=How many rows (1-50)."`
}

// SampleTool returns get_sample_data.
func (t *Tools) SampleTool() agents.Tool {
	return agents.MustTool(ToolSample, "Show a few example rows of a dataset, to see what its values look like before writing SQL.",
		func(ctx context.Context, in SampleArgs) (agents.Result, error) {
			d, err := t.Dataset(ctx, in.Dataset)
			if err != nil {
				return agents.Result{}, err
			}
			n := in.Limit
			if n == 0 {
				n = 10
			}
			lim := t.limits(ctx)
			lim.MaxRows = n
			q := "SELECT * FROM " + QuoteQualified(d.Source) + " LIMIT " + strconv.Itoa(n)
			res, err := t.cfg.DB.Query(ctx, q, lim)
			t.publish(ctx, ToolSample, "", res, err)
			if err != nil {
				return agents.Result{}, err
			}
			res.Truncated = false // a sample is a sample
			r, err := t.tableResult(ctx, res, lim, "Sample of "+d.Name+":")
			if err == nil && len(r.Datasets) == 0 {
				r.Datasets = []string{d.Name}
			}
			return r, err
		}, agents.WithParallel(), agents.WithTimeout(t.toolTimeout()))
}

// DescribeArgs are the arguments of describe_table.
type DescribeArgs struct {
	Datasets []string `json:"datasets" jsonschema:"minItems=1,maxItems=20,description=Dataset names to describe."`
}

// DescribeTool returns describe_table.
func (t *Tools) DescribeTool() agents.Tool {
	return agents.MustTool(ToolDescribe, "Get the YAML definitions (columns, types, keys, descriptions, join paths) of datasets before querying them.",
		func(ctx context.Context, in DescribeArgs) (agents.Result, error) {
			var (
				b     strings.Builder
				found []domain.Dataset
				errs  []error
			)
			for _, name := range in.Datasets {
				d, err := t.Dataset(ctx, name)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				if b.Len() > 0 {
					b.WriteString("---\n")
				}
				b.WriteString(d.YAML())
				found = append(found, d)
			}
			if len(found) == 0 {
				return agents.Result{}, errors.Join(errs...)
			}
			for _, err := range errs {
				b.WriteString("# " + err.Error() + "\n")
			}
			names := make([]string, len(found))
			for i, d := range found {
				names[i] = d.Name
			}
			return agents.Result{Summary: b.String(), Payload: found, Datasets: names}, nil
		}, agents.WithParallel())
}

// publish sends a QueryEvent when a bus is configured; sql is the
// statement as asked (the result's, when there is one, wins).
func (t *Tools) publish(ctx context.Context, tool, sql string, res *Result, err error) {
	if t.cfg.Bus == nil {
		return
	}
	e := &QueryEvent{Tool: tool, Dialect: t.cfg.DB.Dialect(), SQL: sql}
	e.Time = time.Now()
	if info, ok := agents.CallInfoFromContext(ctx); ok {
		e.TenantID, e.UserID, e.SessionID, e.MessageID, e.RunID, e.ParentRunID = info.TenantID, info.UserID, info.SessionID, info.MessageID, info.RunID, info.ParentRunID
		e.CallID = info.CallID
	}
	if res != nil {
		e.Rows, e.Truncated, e.Duration, e.SQL = len(res.Rows), res.Truncated, res.Duration, res.SQL
	}
	if err != nil {
		e.Error = string(KindOf(err))
		e.Reason = err.Error()
	}
	t.cfg.Bus.Publish(ctx, e)
}

// KindQuery is the hooks kind of QueryEvent.
const KindQuery = hooks.KindSQLQuery

// QueryEvent is published on Config.Bus for every statement the data tools
// run or refuse (see hooks.SQLQuery).
type QueryEvent = hooks.SQLQuery
