package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/catalog"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export"
	"github.com/bichat-go/bichat/tools/knowledge"
	"github.com/bichat-go/bichat/tools/mcp"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// dbPath is the SQLite sample database every test reads.
var dbPath string

// helperEnv makes the test binary an MCP stdio server (see TestStdio).
const helperEnv = "BICHAT_MCP_TEST_STDIO_PRINCIPAL"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "bichat-mcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dbPath = filepath.Join(dir, "retail.db")
	code := func() int {
		defer os.RemoveAll(dir)
		if err := sampledata.CreateSQLite(context.Background(), dbPath); err != nil {
			fmt.Fprintln(os.Stderr, "sample data:", err)
			return 1
		}
		if p := os.Getenv(helperEnv); p != "" {
			return serveStdio(p)
		}
		return m.Run()
	}()
	os.Exit(code)
}

// serveStdio runs the fixture server over stdin/stdout for tenant/user p.
func serveStdio(p string) int {
	tenant, user, _ := strings.Cut(p, "/")
	f, err := buildFixture(context.Background(), nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.close()
	if err := f.server.RunStdio(context.Background(), domain.Principal{TenantID: tenant, UserID: user}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// fixture is a server over the sample data with two tenants: acme sees
// the retail tables, globex only its own dataset.
type fixture struct {
	server  *mcp.Server
	cat     *kb.MemoryCatalog
	index   *docs.Index
	db      *sqlite.DB
	deletes *atomic.Int64 // runs of the destructive tool
	close   func()
}

var (
	acme   = domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	acmeBo = domain.Principal{TenantID: "acme", UserID: "bo", Roles: []domain.AccessRole{domain.AccessContributor}}
	viewer = domain.Principal{TenantID: "acme", UserID: "vic", Roles: []domain.AccessRole{domain.AccessViewer}}
	globex = domain.Principal{TenantID: "globex", UserID: "gil"}
)

// attributes mirrors bichat.DefaultAttributes (the root package cannot be
// imported here): the data-scoping attributes of agent runs.
func attributes(_ context.Context, p domain.Principal) (map[string]string, error) {
	m := map[string]string{"tenant_id": p.TenantID, "user_id": p.UserID}
	if len(p.Roles) > 0 {
		roles := make([]string, len(p.Roles))
		for i, r := range p.Roles {
			roles[i] = string(r)
		}
		m["roles"] = strings.Join(roles, ",")
	}
	return m, nil
}

// whoami reports the CallInfo the server attached.
type whoamiOut struct {
	Tenant     string            `json:"tenant"`
	User       string            `json:"user"`
	Session    string            `json:"session"`
	Run        string            `json:"run"`
	Call       string            `json:"call"`
	Tool       string            `json:"tool"`
	Attributes map[string]string `json:"attributes"`
}

func (w whoamiOut) ToolSummary() string { return w.Tenant + "/" + w.User }

func buildFixture(ctx context.Context, edit func(*mcp.ServerOptions)) (*fixture, error) {
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	datasets, err := db.Introspect(ctx)
	if err != nil {
		db.Close()
		return nil, err
	}
	cat, err := kb.Bootstrap(ctx, kb.Scope{TenantID: "acme"}, datasets, kb.CatalogOptions{NoEmbeddings: true})
	if err != nil {
		db.Close()
		return nil, err
	}
	if err := cat.Put(ctx, kb.Scope{TenantID: "globex"}, domain.Dataset{Name: "globex_payroll", Source: "globex_payroll",
		Description: "Globex salaries.", Fields: []domain.Field{{Name: "id", Type: "integer"}, {Name: "salary", Type: "numeric"}}}); err != nil {
		return nil, err
	}
	index, err := docs.New(docs.Options{})
	if err != nil {
		return nil, err
	}
	if err := index.Add(ctx, kb.Scope{TenantID: "acme"}, docs.Document{ID: "revenue.md", Title: "Revenue definition",
		Content: "Revenue is the sum of quantity times unit price of completed orders."}); err != nil {
		return nil, err
	}
	store := memory.NewArtifactStore(0)
	results := tools.NewMemoryResults(10)
	data, err := sqldb.New(sqldb.Config{DB: db, Results: results, Store: store, Datasets: datasets})
	if err != nil {
		return nil, err
	}
	drawChart, err := chart.New(chart.Config{Results: results, Charts: chart.NewMemoryCharts(0), Store: store})
	if err != nil {
		return nil, err
	}
	excel, err := export.NewExcel(export.ExcelConfig{Results: results, Store: store})
	if err != nil {
		return nil, err
	}
	list, err := catalog.ListDatasets(cat)
	if err != nil {
		return nil, err
	}
	details, err := catalog.GetDatasetDetails(cat)
	if err != nil {
		return nil, err
	}
	search, err := knowledge.SearchTool(index)
	if err != nil {
		return nil, err
	}
	deletes := new(atomic.Int64)
	deleteOrder := agents.MustTool("delete_order", "Delete one order by id.",
		func(_ context.Context, in struct {
			ID int `json:"id"`
		}) (string, error) {
			deletes.Add(1)
			return fmt.Sprintf("order %d deleted", in.ID), nil
		}, agents.WithPermission(agents.PermDestructive))
	whoami := agents.MustTool("whoami", "Report who the call runs as.",
		func(ctx context.Context, _ struct{}) (whoamiOut, error) {
			info, ok := agents.CallInfoFromContext(ctx)
			if !ok {
				return whoamiOut{}, errors.New("no CallInfo")
			}
			return whoamiOut{info.TenantID, info.UserID, info.SessionID, info.RunID, info.CallID, info.Tool, info.Attributes}, nil
		})
	slow := agents.MustTool("slow", "Wait until stopped.",
		func(ctx context.Context, _ struct{}) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}, agents.WithTimeout(100*time.Millisecond))
	chatty := agents.MustTool("chatty", "Say a lot.",
		func(context.Context, struct{}) (string, error) { return strings.Repeat("word ", 1000), nil })
	boom := agents.MustTool("boom", "Panic.",
		func(context.Context, struct{}) (string, error) { panic("kaboom") })

	opts := mcp.ServerOptions{
		Name:       "bichat-test",
		Tools:      append(data.All(), drawChart, excel, list, details, search, deleteOrder, whoami, slow, chatty, boom),
		Catalog:    cat,
		Attributes: attributes,
		Limits:     mcp.Limits{MaxTextBytes: 2000},
	}
	if edit != nil {
		edit(&opts)
	}
	srv, err := mcp.NewServer(opts)
	if err != nil {
		return nil, err
	}
	return &fixture{server: srv, cat: cat, index: index, db: db, deletes: deletes, close: func() {
		index.Close()
		cat.Close()
		db.Close()
	}}, nil
}

func newFixture(t *testing.T, edit func(*mcp.ServerOptions)) *fixture {
	t.Helper()
	f, err := buildFixture(t.Context(), edit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.close)
	return f
}

// connect runs the server in process for p and returns a client session.
func (f *fixture) connect(t *testing.T, p domain.Principal) *sdk.ClientSession {
	t.Helper()
	ct, st := sdk.NewInMemoryTransports()
	ss, err := f.server.Connect(t.Context(), st, p)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "test-client", Version: "v1"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// call calls a tool and returns the result and its text.
func call(t *testing.T, cs *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return res, strings.Join(texts, "\n")
}

// structured decodes a result's structured content into v.
func structured(t *testing.T, res *sdk.CallToolResult, v any) {
	t.Helper()
	if res.StructuredContent == nil {
		t.Fatal("no structured content")
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("structured content %s: %v", b, err)
	}
}
