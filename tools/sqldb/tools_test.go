package sqldb_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

var (
	once     sync.Once
	dbPath   string
	setupErr error
)

func sampleDB(t *testing.T) *sqlite.DB {
	t.Helper()
	once.Do(func() {
		dir, err := os.MkdirTemp("", "sqldb-tools-test")
		if err != nil {
			setupErr = err
			return
		}
		dbPath = filepath.Join(dir, "retail.db")
		setupErr = sampledata.CreateSQLite(context.Background(), dbPath)
	})
	if setupErr != nil {
		t.Fatal(setupErr)
	}
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestMain(m *testing.M) {
	code := m.Run()
	if dbPath != "" {
		os.RemoveAll(filepath.Dir(dbPath))
	}
	os.Exit(code)
}

func callCtx(session string) context.Context {
	return agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "acme", UserID: "u1", SessionID: session, RunID: "r1", CallID: "c1"})
}

func call(t *testing.T, tool agents.Tool, ctx context.Context, args any) (agents.Result, error) {
	t.Helper()
	b, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return tool.Call(ctx, b)
}

func TestQueryDatabaseTwoTracks(t *testing.T) {
	t.Parallel()
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	var (
		mu     sync.Mutex
		events []*sqldb.QueryEvent
	)
	if _, err := hooks.Listen(bus, func(_ context.Context, e *sqldb.QueryEvent) error {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	results := tools.NewMemoryResults(10)
	dt, err := sqldb.New(sqldb.Config{DB: sampleDB(t), Results: results, Bus: bus, PreviewRows: 3, Limits: sqldb.Limits{MaxRows: 50}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := callCtx("s1")
	res, err := call(t, dt.QueryTool(), ctx, map[string]string{"sql": "SELECT id, status FROM orders ORDER BY id"})
	if err != nil {
		t.Fatal(err)
	}
	// The model sees a short preview, the name, the truncation and the time.
	for _, want := range []string{"Result result_1: 2 column(s), 50 row(s)", "TRUNCATED at 50 rows", "took ", `Refer to it as "result_1"`,
		"| id | status |\n| --- | --- |\n| 1 | completed |", "(showing 3 of 50 rows)"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.Summary)
		}
	}
	if strings.Count(res.Summary, "\n| ") != 5 {
		t.Errorf("preview rows:\n%s", res.Summary)
	}
	// The host gets every fetched row, a CSV artifact and the datasets.
	p := res.Payload.(*sqldb.QueryPayload)
	if p.Rows != 50 || len(p.Table.Rows) != 50 || !p.Truncated || p.Table.Name != "result_1" || p.Table.SQL == "" {
		t.Errorf("payload %+v", p)
	}
	a := res.Artifacts[0]
	if a.Kind != domain.ArtifactTable || a.MediaType != "text/csv" || a.SHA256 != domain.ContentHash(p.CSV) || a.Size != int64(len(p.CSV)) || a.Metadata["rows"] != "50" || a.Metadata["truncated"] != "true" {
		t.Errorf("artifact %+v", a)
	}
	if !strings.HasPrefix(string(p.CSV), "id,status\n1,completed\n") {
		t.Errorf("csv %q", p.CSV[:40])
	}
	if strings.Join(res.Datasets, ",") != "orders" {
		t.Errorf("datasets %v", res.Datasets)
	}
	// The table is stored for later tools, in this session only.
	stored, err := results.Get(ctx, "result_1")
	if err != nil || len(stored.Rows) != 50 || !stored.Truncated {
		t.Fatalf("stored %v %v", len(stored.Rows), err)
	}
	if _, err := results.Get(callCtx("other"), "result_1"); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("other session sees the result: %v", err)
	}
	// A refused statement is an error for the model, and an event.
	_, err = call(t, dt.QueryTool(), ctx, map[string]string{"sql": "DELETE FROM orders"})
	if !errors.Is(err, sqldb.ErrRejected) {
		t.Errorf("delete: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(events) != 2 {
		t.Fatalf("%d events", len(events))
	}
	e := events[0]
	if e.Tool != sqldb.ToolQuery || e.Rows != 50 || !e.Truncated || e.Duration <= 0 || e.TenantID != "acme" || e.SessionID != "s1" || e.CallID != "c1" || e.Dialect != "sqlite" || e.Error != "" {
		t.Errorf("event %+v", e)
	}
	if events[1].Error != string(sqldb.KindRejected) {
		t.Errorf("failure event %+v", events[1])
	}
}

func TestQueryDatabaseMinimized(t *testing.T) {
	t.Parallel()
	dt, _ := sqldb.New(sqldb.Config{DB: sampleDB(t), Minimize: true})
	res, err := call(t, dt.QueryTool(), callCtx("s"), map[string]string{"sql": "SELECT name, email, region_id FROM customers ORDER BY id"})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Payload.(*sqldb.QueryPayload)
	// No value of any row reaches the model except the min and max.
	stats := sqldb.ColumnStats(&sqldb.Result{Columns: p.Table.Columns, Rows: p.Table.Rows})
	for _, row := range p.Table.Rows {
		for i, v := range row {
			s := tools.FormatCell(v)
			if s != stats[i].Min && s != stats[i].Max && strings.Contains(res.Summary, s) && len(s) > 3 {
				t.Fatalf("value %q leaked into the minimised summary:\n%s", s, res.Summary)
			}
		}
	}
	for _, want := range []string{"200 row(s)", "Values withheld", "| column | type | nulls | min | max |", "| region_id | INTEGER | 0 | 1 | 5 |"} {
		if !strings.Contains(res.Summary, want) {
			t.Errorf("summary lacks %q:\n%s", want, res.Summary)
		}
	}
	if len(p.Table.Rows) != 200 {
		t.Errorf("the host gets %d rows", len(p.Table.Rows))
	}
}

func TestSampleDescribeProfile(t *testing.T) {
	t.Parallel()
	dt, _ := sqldb.New(sqldb.Config{DB: sampleDB(t)})
	ctx := callCtx("s")
	res, err := call(t, dt.SampleTool(), ctx, map[string]any{"dataset": "Products", "limit": 4})
	if err != nil {
		t.Fatal(err)
	}
	if p := res.Payload.(*sqldb.QueryPayload); p.Rows != 4 || p.Truncated || !strings.HasPrefix(res.Summary, "Sample of products:") {
		t.Errorf("sample %+v\n%s", p, res.Summary)
	}
	for _, bad := range []map[string]any{{"dataset": "products", "limit": 51}, {"dataset": "products", "limit": 0}, {"limit": 3}} {
		if _, err := call(t, dt.SampleTool(), ctx, bad); !errors.Is(err, agents.ErrInvalidArguments) {
			t.Errorf("%v: %v", bad, err)
		}
	}
	if _, err := call(t, dt.SampleTool(), ctx, map[string]any{"dataset": "nope"}); !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "available: customers, order_items") {
		t.Errorf("unknown dataset: %v", err)
	}

	res, err = call(t, dt.DescribeTool(), ctx, map[string]any{"datasets": []string{"orders", "missing"}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(res.Summary, "name: orders\nsource: orders\nkind: table\nrow_estimate: 3000\nfields:\n  - name: id\n    type: INTEGER\n    primary_key: true\n") ||
		!strings.Contains(res.Summary, "relationships:\n  - to: customers\n    on: customer_id = id\n") || !strings.Contains(res.Summary, `# dataset "missing" does not exist`) {
		t.Errorf("describe:\n%s", res.Summary)
	}

	res, err = call(t, dt.ProfileTool(), ctx, map[string]any{"dataset": "order_items"})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Payload.(*sqldb.Profile)
	// Check the profile against figures computed here from the generator.
	items := sampledata.Generate(0).OrderItems
	var qty []float64
	for _, it := range items {
		qty = append(qty, float64(it[3].(int64)))
	}
	sort.Float64s(qty)
	var sum float64
	for _, q := range qty {
		sum += q
	}
	mid := len(qty) / 2
	median := qty[mid]
	if len(qty)%2 == 0 {
		median = (qty[mid-1] + qty[mid]) / 2
	}
	q := p.Columns[3]
	if p.Rows != int64(len(items)) || q.Name != "quantity" || q.Nulls != 0 || *q.Distinct != 5 || q.Min != int64(1) || q.Max != int64(5) ||
		math.Abs(*q.Mean-sum/float64(len(qty))) > 1e-9 || *q.Median != median {
		t.Errorf("quantity profile %+v (mean want %v, median want %v)", q, sum/float64(len(qty)), median)
	}
	res, err = call(t, dt.ProfileTool(), ctx, map[string]any{"dataset": "products"})
	if err != nil {
		t.Fatal(err)
	}
	cat := res.Payload.(*sqldb.Profile).Columns[2]
	if cat.Name != "category" || *cat.Distinct != 5 || len(cat.Top) != 5 || cat.Top[0] != (sqldb.ValueCount{Value: "Books", Count: 8}) {
		t.Errorf("category profile %+v", cat)
	}
	if !strings.Contains(res.Summary, "| category | TEXT | 0 | 5 | Books | Toys |   |   | Books (8), Electronics (8)") {
		t.Errorf("profile summary:\n%s", res.Summary)
	}
}

func TestToolsEndToEndThroughExecutor(t *testing.T) {
	t.Parallel()
	dt, _ := sqldb.New(sqldb.Config{DB: sampleDB(t)})
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{Name: sqldb.ToolQuery, Args: `{"sql": "SELECT status, count(*) AS n FROM orders GROUP BY status ORDER BY n DESC"}`}}},
		{Text: "Most orders are completed."},
	}}
	exec, err := agents.NewExecutor(agents.Config{Model: model, Tools: dt.All()})
	if err != nil {
		t.Fatal(err)
	}
	var finished *agents.ToolCallFinished
	for ev, err := range exec.Run(context.Background(), agents.Input{TenantID: "acme", SessionID: "s", Message: agents.UserMessage("orders by status?")}) {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := ev.(*agents.ToolCallFinished); ok {
			finished = f
		}
	}
	if finished == nil {
		t.Fatal("no tool call finished")
	}
	if p, ok := finished.Payload.(*sqldb.QueryPayload); !ok || p.Rows != 3 {
		t.Fatalf("payload %#v", finished.Payload)
	}
	names := make([]string, 0)
	for _, s := range exec.Tools() {
		names = append(names, s.Name)
	}
	for _, want := range []string{sqldb.ToolQuery, sqldb.ToolSample, sqldb.ToolDescribe, sqldb.ToolProfile} {
		if !slices.Contains(names, want) {
			t.Errorf("tool %s missing from %v", want, names)
		}
	}
	// The model saw the summary, not the payload.
	if !strings.Contains(finished.Summary, "| completed |") || finished.Artifacts[0].Kind != domain.ArtifactTable {
		t.Errorf("finished %+v", finished)
	}
}

func TestQueryDatabaseStoresCSV(t *testing.T) {
	t.Parallel()
	store := memory.NewArtifactStore(0)
	dt, err := sqldb.New(sqldb.Config{DB: sampleDB(t), Store: store, Limits: sqldb.Limits{MaxRows: 5}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := call(t, dt.QueryTool(), callCtx("s-store"), map[string]string{"sql": "SELECT id FROM orders ORDER BY id"})
	if err != nil {
		t.Fatal(err)
	}
	a := res.Artifacts[0]
	if a.URI == "" || a.TenantID != "acme" || a.Metadata["rows"] != "5" {
		t.Fatalf("artifact not stored: %+v", a)
	}
	rc, _, err := store.Get(t.Context(), "acme", a.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	body, _ := io.ReadAll(rc)
	if string(body) != "id\n1\n2\n3\n4\n5\n" {
		t.Fatalf("stored CSV %q", body)
	}
	if _, err := store.Stat(t.Context(), "globex", a.SHA256); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("another tenant sees the CSV: %v", err)
	}
}
