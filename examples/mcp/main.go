package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/fsartifacts"
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

// options are the command-line flags.
type options struct {
	tenant, user string
	httpAddr     string // serve streamable HTTP here instead of stdio
	token        string // bearer token HTTP clients must send
	filesDir     string // keep charts and workbooks here ("": in memory)
}

func main() {
	var o options
	flag.StringVar(&o.tenant, "tenant", "acme", "tenant the client acts for")
	flag.StringVar(&o.user, "user", "mcp-user", "user the client acts for")
	flag.StringVar(&o.httpAddr, "http", "", "serve streamable HTTP on this address (for example localhost:8080) instead of stdio")
	flag.StringVar(&o.token, "token", os.Getenv("BICHAT_MCP_TOKEN"), "bearer token HTTP clients must send (required with -http; default $BICHAT_MCP_TOKEN)")
	flag.StringVar(&o.filesDir, "files", "", "folder to keep charts and workbooks in (default: in memory)")
	flag.Parse()
	// stdout carries the protocol: every log line goes to stderr.
	log.SetOutput(os.Stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stderr); err != nil {
		log.Fatal(err)
	}
}

// run builds the server over the sample data and serves it until the
// client leaves (stdio) or ctx ends (HTTP).
func run(ctx context.Context, o options, logs io.Writer) error {
	p := domain.Principal{TenantID: o.tenant, UserID: o.user, Roles: []domain.AccessRole{domain.AccessViewer}}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("-tenant and -user: %w", err)
	}
	if o.httpAddr != "" && len(o.token) < 16 {
		return errors.New("-http needs -token (or BICHAT_MCP_TOKEN) of at least 16 characters: clients authenticate with it")
	}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))

	srv, cleanup, err := newServer(ctx, o, logger)
	if err != nil {
		return err
	}
	defer cleanup()

	if o.httpAddr == "" {
		return srv.RunStdio(ctx, p)
	}
	h, err := srv.HTTPHandler(func(r *http.Request) (domain.Principal, error) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(o.token)) != 1 {
			return domain.Principal{}, errors.New("send Authorization: Bearer <token>")
		}
		return p, nil
	}, nil)
	if err != nil {
		return err
	}
	hs := &http.Server{Addr: o.httpAddr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	fmt.Fprintf(logs, "serving MCP over streamable HTTP on http://%s as %s/%s\n", o.httpAddr, p.TenantID, p.UserID)
	if err := hs.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// newServer creates the sample database and the knowledge base and builds
// the MCP server over the data tools.
func newServer(ctx context.Context, o options, logger *slog.Logger) (*mcp.Server, func(), error) {
	var closers []func()
	cleanup := func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	fail := func(err error) (*mcp.Server, func(), error) {
		cleanup()
		return nil, nil, err
	}

	// Data: the generated retail database in SQLite, opened read-only.
	dir, err := os.MkdirTemp("", "bichat-mcp-")
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { os.RemoveAll(dir) })
	dbPath := filepath.Join(dir, "retail.db")
	if err := sampledata.CreateSQLite(ctx, dbPath); err != nil {
		return fail(fmt.Errorf("create sample data: %w", err))
	}
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { db.Close() })

	// Knowledge: the dataset catalog and a few documents, in the tenant's scope.
	datasets, err := db.Introspect(ctx)
	if err != nil {
		return fail(err)
	}
	scope := kb.Scope{TenantID: o.tenant}
	cat, err := kb.Bootstrap(ctx, scope, datasets, kb.CatalogOptions{})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { cat.Close() })
	index, err := docs.New(docs.Options{})
	if err != nil {
		return fail(err)
	}
	closers = append(closers, func() { index.Close() })
	if err := index.AddBatch(ctx, scope, knowledgeBase); err != nil {
		return fail(err)
	}

	// Files: charts and workbooks.
	var store domain.ArtifactStore = memory.NewArtifactStore(0)
	if o.filesDir != "" {
		fs, err := fsartifacts.Open(o.filesDir, fsartifacts.Options{})
		if err != nil {
			return fail(err)
		}
		store = fs
	}

	// Tools, built as for an agent: scoped per call by the CallInfo the MCP
	// server attaches.
	results := tools.NewMemoryResults(20)
	data, err := sqldb.New(sqldb.Config{DB: db, Results: results, Store: store, Datasets: datasets})
	if err != nil {
		return fail(err)
	}
	drawChart, err := chart.New(chart.Config{Results: results, Charts: chart.NewMemoryCharts(0), Store: store})
	if err != nil {
		return fail(err)
	}
	excel, err := export.NewExcel(export.ExcelConfig{Results: results, Store: store})
	if err != nil {
		return fail(err)
	}
	list, err := catalog.ListDatasets(cat)
	if err != nil {
		return fail(err)
	}
	details, err := catalog.GetDatasetDetails(cat)
	if err != nil {
		return fail(err)
	}
	search, err := knowledge.SearchTool(index)
	if err != nil {
		return fail(err)
	}
	srv, err := mcp.NewServer(mcp.ServerOptions{
		Name:    "bichat-retail",
		Version: "example",
		Instructions: "Retail sample data (regions, customers, products, orders, order_items, 2024-2025). " +
			"Call list_datasets, then describe_table before writing SQL for query_database; " +
			"draw_chart and export_excel take a result name such as result_1.",
		Tools:      []agents.Tool{list, details, data.QueryTool(), data.DescribeTool(), data.SampleTool(), drawChart, excel, search},
		Catalog:    cat,
		Attributes: bichat.DefaultAttributes,
		Logger:     logger,
	})
	if err != nil {
		return fail(err)
	}
	return srv, cleanup, nil
}

// knowledgeBase is what kb_search finds.
var knowledgeBase = []docs.Document{
	{ID: "metrics/revenue.md", Title: "Revenue", Tags: []string{"metric"},
		Content: "Revenue is the sum of quantity × unit_price over order_items of orders with status 'completed'. " +
			"Cancelled and pending orders are not revenue."},
	{ID: "metrics/active-customer.md", Title: "Active customer", Tags: []string{"metric"},
		Content: "A customer is active in a month when they placed at least one completed order in that month."},
}
