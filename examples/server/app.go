package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/hooks"
	bichatprom "github.com/bichat-go/bichat/hooks/prometheus"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	recipespg "github.com/bichat-go/bichat/kb/recipes/postgres"
	"github.com/bichat-go/bichat/providers"
	"github.com/bichat-go/bichat/redact"
	"github.com/bichat-go/bichat/sandbox/bwrap"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/catalog"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export"
	"github.com/bichat-go/bichat/tools/python"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Options configure New. The zero value serves the scripted analyst or
// the model the environment configures, without a sandbox pool.
type Options struct {
	// Offline uses the scripted analyst even when the environment
	// configures a provider.
	Offline bool
	// Pace is the delay before each fragment the scripted analyst streams
	// (0: as fast as it can).
	Pace time.Duration
	// NoSandbox leaves run_python out even when bubblewrap works here.
	NoSandbox bool
	// SandboxPool is the number of warm bubblewrap workers (0: a fresh
	// sandbox per job).
	SandboxPool int
	// Models are extra model names the picker offers (resolved by the
	// providers registry; see providers.Catalog). The scripted analyst
	// and, when a provider is configured, its available catalog models
	// are offered anyway.
	Models []string
	// Logger reports server errors; nil means slog.Default().
	Logger *slog.Logger
	// DSN, when set, keeps sessions, messages, run logs, leases, named
	// results, artifacts and recipes in PostgreSQL (domain/postgres,
	// migrated at start) instead of in memory, so the server survives a
	// restart and several replicas can share one database.
	DSN string
	// Schema is the PostgreSQL schema of the storage (default "bichat").
	Schema string
	// RunLease is the lease of a run (0: bichat.DefaultRunLease); a
	// replica that dies has its runs failed by another replica's reaper
	// after one lease.
	RunLease time.Duration
	// ConfirmationKey signs confirmation tokens; replicas must share it so
	// that a confirmation asked on one can be approved on another (nil: a
	// random key per process).
	ConfirmationKey []byte
}

// demoPrincipal is the one user of the demo. A real host authenticates
// requests (a session cookie, a bearer token) and maps them to principals.
var demoPrincipal = domain.Principal{TenantID: "acme", UserID: "demo", Roles: []domain.AccessRole{domain.AccessContributor}}

// App is the example server: the bichat service over the SQLite sample
// data, its HTTP API under /api, the page under / and the server-side
// Markdown rendering under /ui. Build it with New; it is an http.Handler.
type App struct {
	// Service is the bichat service the API serves.
	Service *bichat.Service
	// API is the bichat HTTP handler mounted under /api.
	API *bichat.Handler
	// Analyst is the scripted model (used when no provider is configured
	// or Options.Offline is set).
	Analyst *Analyst
	// Dashboards is where pin_chart pins charts.
	Dashboards *Dashboards
	// ModelNote says which model answers and why.
	ModelNote string
	// StorageNote says where sessions are kept.
	StorageNote string
	// SandboxNote says whether run_python is available and why.
	SandboxNote string
	// Tools are the names of the agent's tools.
	Tools []string
	// Metrics is the Prometheus registry the server's metrics are in
	// (hooks/prometheus, fed by the event bus), served at GET /metrics.
	Metrics *prometheus.Registry

	handler http.Handler
	closers []func() error
}

// New builds the example server: a SQLite file of generated retail data
// (in a temporary folder removed by Close), a dataset catalog, the SQL,
// chart, Excel and pin_chart tools (and run_python in a bubblewrap
// sandbox when bubblewrap works here), an in-memory store and the model.
func New(ctx context.Context, opts Options) (a *App, err error) {
	a = &App{}
	defer func() {
		if err != nil {
			_ = a.Close()
			a = nil
		}
	}()
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}

	// Data: generated retail data in SQLite, opened read-only.
	dir, err := os.MkdirTemp("", "bichat-server-")
	if err != nil {
		return nil, fmt.Errorf("server: temporary folder: %w", err)
	}
	a.closers = append(a.closers, func() error { return os.RemoveAll(dir) })
	dbPath := filepath.Join(dir, "retail.db")
	if err := sampledata.CreateSQLite(ctx, dbPath); err != nil {
		return nil, fmt.Errorf("server: create sample data: %w", err)
	}
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		return nil, fmt.Errorf("server: open sample data: %w", err)
	}
	a.closers = append(a.closers, db.Close)

	// Knowledge: the catalog searched before each question, and the
	// recipes the "good answer" button saves.
	datasets, err := db.Introspect(ctx)
	if err != nil {
		return nil, fmt.Errorf("server: introspect sample data: %w", err)
	}
	cat, err := kb.Bootstrap(ctx, kb.Scope{TenantID: demoPrincipal.TenantID}, datasets, kb.CatalogOptions{})
	if err != nil {
		return nil, fmt.Errorf("server: catalog: %w", err)
	}
	a.closers = append(a.closers, cat.Close)
	embedder := kb.NewHashEmbedder(kb.HashEmbedderOptions{})
	var recipeMemory bichat.RecipeMemory = recipes.New(embedder, recipes.Options{})

	// Events: one bus, scrubbed of secrets by the redactor the service
	// uses too, feeding the Prometheus metrics.
	redactor := redact.Default()
	bus := hooks.New(hooks.Options{Redact: redactor.Func(), OnError: func(he *hooks.HandlerError) {
		logger.Error("server: event handler failed", "kind", string(he.Kind), "error", he.Error())
	}})
	a.closers = append(a.closers, bus.Close)

	// Storage: in memory, or PostgreSQL with -dsn. The tools share one
	// result store (tables by name) and one artifact store (files); the
	// cost ledger follows the storage.
	var costs domain.CostLedger
	var repos domain.Repositories
	var store domain.ArtifactStore = memory.NewArtifactStore(0)
	var results tools.Results = tools.NewMemoryResults(10)
	if opts.DSN != "" {
		schema := cmp.Or(opts.Schema, postgres.DefaultSchema)
		pool, err := pgxpool.New(ctx, opts.DSN)
		if err != nil {
			return nil, fmt.Errorf("server: storage database: %w", err)
		}
		a.closers = append(a.closers, func() error { pool.Close(); return nil })
		if err := postgres.Migrate(ctx, pool, schema); err != nil {
			return nil, fmt.Errorf("server: migrate storage: %w", err)
		}
		pst, err := postgres.New(pool, postgres.Options{Schema: schema})
		if err != nil {
			return nil, fmt.Errorf("server: storage: %w", err)
		}
		a.closers = append(a.closers, func() error { pst.Close(); return nil })
		repos = pst.Repositories()
		store = pst.ArtifactStore(0)
		costs = pst
		results = tools.StoreResults(repos.Results)
		rs, err := recipespg.New(pool, embedder, recipespg.Options{Schema: schema})
		if err != nil {
			return nil, fmt.Errorf("server: recipes: %w", err)
		}
		recipeMemory = rs
		a.StorageNote = "sessions are kept in PostgreSQL (schema " + schema + ")"
	} else {
		a.StorageNote = "sessions are kept in memory (-dsn keeps them in PostgreSQL)"
	}
	data, err := sqldb.New(sqldb.Config{DB: db, Results: results, Store: store, Datasets: datasets, Bus: bus})
	if err != nil {
		return nil, fmt.Errorf("server: SQL tools: %w", err)
	}
	drawChart, err := chart.New(chart.Config{Results: results, Charts: chart.NewMemoryCharts(0), Store: store})
	if err != nil {
		return nil, fmt.Errorf("server: chart tool: %w", err)
	}
	excel, err := export.NewExcel(export.ExcelConfig{Results: results, Store: store})
	if err != nil {
		return nil, fmt.Errorf("server: Excel tool: %w", err)
	}
	list, err := catalog.ListDatasets(cat)
	if err != nil {
		return nil, fmt.Errorf("server: list_datasets: %w", err)
	}
	a.Dashboards = &Dashboards{}
	pin, err := a.Dashboards.Tool()
	if err != nil {
		return nil, fmt.Errorf("server: pin_chart: %w", err)
	}
	toolset := append(data.All(), drawChart, excel, list, pin)
	py, note := a.sandbox(opts, results, store, bus)
	if py != nil {
		toolset = append(toolset, py)
	}
	a.SandboxNote = note
	for _, t := range toolset {
		a.Tools = append(a.Tools, t.Spec().Name)
	}
	// Metrics: tool labels from the configured tools (the model label
	// comes from the offered models below), never the global registry.
	a.Metrics = prometheus.NewRegistry()

	// The model: a real one when the environment configures it, else the
	// scripted analyst.
	a.Analyst = NewAnalyst(opts.Pace)
	registry := providers.New(providers.ConfigFromEnv())
	var model agents.Model = a.Analyst
	offered := []string{}
	real, realNote, err := registry.Default()
	switch {
	case opts.Offline:
		a.ModelNote = "offline demo: the scripted analyst answers (-offline)"
	case err != nil:
		return nil, fmt.Errorf("server: model from the environment: %w", err)
	case real.Info().Provider == "scripted":
		a.ModelNote = "offline demo: the scripted analyst answers (set OPENAI_API_KEY, ANTHROPIC_API_KEY, " +
			"GEMINI_API_KEY or OLLAMA_HOST to use a real model)"
	default:
		model, a.ModelNote = real, realNote
		offered = append(offered, AnalystModel)
		for _, s := range registry.AvailableSpecs() {
			offered = append(offered, s.Info.Provider+"/"+s.Info.Name)
		}
	}
	for _, m := range opts.Models {
		if !slices.Contains(offered, m) {
			offered = append(offered, m)
		}
	}

	metrics, err := bichatprom.New(a.Metrics, bichatprom.Options{Tools: a.Tools, Models: modelNames(offered), Bus: bus})
	if err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	if _, err := bus.Subscribe(metrics); err != nil {
		return nil, fmt.Errorf("server: metrics: %w", err)
	}
	svc, err := bichat.New(bichat.Config{
		Agent: agents.Config{
			Model: model,
			System: "You are a careful BI analyst. Answer from data: find the tables, query them with " +
				"query_database, chart results with draw_chart and export them with export_excel when asked. " +
				"Ask with ask_user_question when the request is ambiguous. Never invent numbers. Answer in Markdown.",
			Tools:           toolset,
			ConfirmationKey: opts.ConfirmationKey,
		},
		Store:         repos,
		ArtifactStore: store,
		Limits:        bichat.Limits{RunLease: opts.RunLease},
		Models:        resolver{analyst: a.Analyst, registry: registry},
		Knowledge:     bichat.Knowledge{Catalog: cat, Recipes: recipeMemory},
		Logger:        logger,
		Bus:           bus,
		Costs:         costs,
		Redactor:      redactor,
	})
	if err != nil {
		return nil, fmt.Errorf("server: service: %w", err)
	}
	a.Service = svc
	// The reaper fails runs whose process died (this replica's or
	// another's) and expires questions nobody answered; Close stops it and
	// then the service, whose running answers end as "shutdown".
	reapCtx, stopReaper := context.WithCancel(context.WithoutCancel(ctx))
	reaped := make(chan struct{})
	go func() {
		defer close(reaped)
		if err := svc.RunReaper(reapCtx); err != nil && reapCtx.Err() == nil {
			logger.Error("server: reaper stopped", "error", err)
		}
	}()
	a.closers = append(a.closers, func() error {
		stopReaper()
		<-reaped
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return svc.Close(cctx)
	})
	a.API = bichat.NewHandler(svc, bichat.HandlerOptions{
		Prefix:       "/api",
		Authenticate: authenticate,
		Models:       offered,
		Logger:       logger,
	})
	a.handler = a.routes(logger)
	return a, nil
}

// sandbox returns run_python in a bubblewrap sandbox when bubblewrap
// works here, and a note saying what was chosen.
func (a *App) sandbox(opts Options, results tools.Results, store domain.ArtifactStore, bus *hooks.Bus) (agents.Tool, string) {
	if opts.NoSandbox {
		return nil, "run_python is off (-no-sandbox)"
	}
	sb, err := bwrap.New(bwrap.Config{PoolSize: opts.SandboxPool, IdleTimeout: 10 * time.Minute})
	if err != nil {
		return nil, "run_python is off: " + err.Error()
	}
	a.closers = append(a.closers, sb.Close)
	py, err := python.New(python.Config{Sandbox: sb, Results: results, Store: store, Bus: bus})
	if err != nil {
		return nil, "run_python is off: " + err.Error()
	}
	return py, "run_python runs in a bubblewrap sandbox"
}

// ServeHTTP serves the page, the API and the rendering routes.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) { a.handler.ServeHTTP(w, r) }

// Close releases the sandbox, the catalog and the database and removes
// the sample data.
func (a *App) Close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		errs = append(errs, a.closers[i]())
	}
	a.closers = nil
	return errors.Join(errs...)
}

// resolver finds the model a session asks for: the scripted analyst by
// its name, anything else through the providers registry.
type resolver struct {
	analyst  *Analyst
	registry *providers.Registry
}

func (r resolver) Model(name string) (agents.Model, error) {
	if name == AnalystModel {
		return r.analyst, nil
	}
	return r.registry.Model(name)
}

// modelNames returns the model names (as events carry them: without the
// provider) of the offered "provider/model" entries.
func modelNames(offered []string) []string {
	var out []string
	for _, m := range offered {
		if i := strings.LastIndexByte(m, '/'); i >= 0 {
			m = m[i+1:]
		}
		if m != "" && !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}
