package main

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/agents/eval"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/bichat-go/bichat/providers"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/catalog"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// sampleSet is the default question set, over the sample retail data.
//
//go:embed sample.yaml
var sampleSet []byte

// options are the command-line flags.
type options struct {
	set         string // question set file ("": the embedded sample)
	out         string // output folder
	concurrency int
	compare     string // earlier report.json to compare with
	seed        bool   // seed verified recipes from the set first
	offline     bool   // scripted analyst even with a provider configured
	// onResult is called with each new result (tests interrupt with it).
	onResult func(eval.Result)
	// dbPath is an existing sample database to use instead of generating
	// one (tests share one).
	dbPath string
}

func main() {
	var o options
	flag.StringVar(&o.set, "set", "", "question set, YAML or JSONL (default: the built-in sample over the retail data)")
	flag.StringVar(&o.out, "out", "eval-out", "folder for report.json, report.md, report.html and results.jsonl")
	flag.IntVar(&o.concurrency, "concurrency", 4, "questions run at once")
	flag.StringVar(&o.compare, "compare", "", "an earlier report.json: list the questions that got better or worse")
	flag.BoolVar(&o.seed, "seed", false, "save the set's questions as verified recipes before running")
	flag.BoolVar(&o.offline, "offline", false, "use the scripted analyst even when a provider is configured")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Stdout, os.Stderr, o); err != nil {
		fmt.Fprintln(os.Stderr, "eval:", err)
		if errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "eval: interrupted; run the same command again to resume")
		}
		os.Exit(1)
	}
}

// run evaluates the set and writes the reports; progress goes to
// progress, the summary to out.
func run(ctx context.Context, out, progress io.Writer, o options) error {
	set, err := loadSet(o.set)
	if err != nil {
		return err
	}
	if o.out == "" {
		return errors.New("-out is required")
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}

	// Data: the retail sample in SQLite, opened read-only.
	dbPath := o.dbPath
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "bichat-eval-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "retail.db")
		if err := sampledata.CreateSQLite(ctx, dbPath); err != nil {
			return fmt.Errorf("create sample data: %w", err)
		}
	}
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		return err
	}
	defer db.Close()

	// Knowledge: the catalog searched by the discovery step, and the
	// recipe memory -seed fills.
	datasets, err := db.Introspect(ctx)
	if err != nil {
		return err
	}
	scope := kb.Scope{TenantID: "acme"}
	cat, err := kb.Bootstrap(ctx, scope, datasets, kb.CatalogOptions{})
	if err != nil {
		return err
	}
	defer cat.Close()
	memory := recipes.New(kb.NewHashEmbedder(kb.HashEmbedderOptions{}), recipes.Options{})
	if o.seed {
		n, err := eval.SeedRecipes(ctx, memory, scope, set, cat, db)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "seeded %d verified recipes\n", n)
	}

	data, err := sqldb.New(sqldb.Config{DB: db, Results: tools.NewMemoryResults(10), Datasets: datasets})
	if err != nil {
		return err
	}
	list, err := catalog.ListDatasets(cat)
	if err != nil {
		return err
	}
	model, note, err := providers.FromEnv()
	if err != nil {
		return err
	}
	if o.offline || model.Info().Provider == "scripted" {
		model = analyst()
		note = "offline: a scripted analyst answers the sample set (two answers wrong on purpose)"
	}
	fmt.Fprintf(out, "model: %s/%s\n%s\n", model.Info().Provider, model.Info().Name, note)
	svc, err := bichat.New(bichat.Config{
		Agent: agents.Config{
			Model: model,
			System: "You are a careful BI analyst. Answer from data: find the tables, query them with " +
				"query_database (SQLite dialect) and answer from the result. Never invent numbers.",
			Tools: append(data.All(), list),
		},
		Knowledge: bichat.Knowledge{Catalog: cat, Recipes: memory},
	})
	if err != nil {
		return err
	}
	defer svc.Close(context.WithoutCancel(ctx))

	analystUser := domain.Principal{TenantID: scope.TenantID, UserID: "eval", Roles: []domain.AccessRole{domain.AccessContributor}}
	rep, runErr := eval.Run(ctx, set, eval.Config{
		Target:      svc.EvalTarget(analystUser),
		DB:          db,
		Concurrency: o.concurrency,
		Results:     filepath.Join(o.out, "results.jsonl"),
		Progress:    progress,
		OnResult:    o.onResult,
	})
	if rep == nil {
		return runErr
	}
	if err := writeReports(rep, o.out); err != nil {
		return err
	}
	var md bytes.Buffer
	if err := rep.WriteMarkdown(&md); err != nil {
		return err
	}
	t := rep.Totals
	fmt.Fprintf(out, "execution accuracy %.1f%% (%d/%d), mean retrieval recall %.1f%%\n", 100*t.Accuracy, t.Passed, t.Questions, 100*t.MeanRecall)
	for _, r := range rep.Results {
		if !r.OK {
			fmt.Fprintf(out, "FAIL %s: %s\n", r.ID, r.Reason)
		}
	}
	fmt.Fprintf(out, "reports in %s (report.json, report.md, report.html)\n", o.out)
	if runErr != nil {
		return runErr
	}
	if o.compare != "" {
		old, err := eval.ReadReport(o.compare)
		if err != nil {
			return err
		}
		var b bytes.Buffer
		if err := eval.CompareReports(old, rep).WriteMarkdown(&b); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(o.out, "compare.md"), b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "\n%s", b.String())
	}
	return nil
}

func loadSet(path string) (*eval.Set, error) {
	if path != "" {
		return eval.LoadSet(path)
	}
	s, err := eval.ParseSet(bytes.NewReader(sampleSet), eval.FormatYAML)
	if err != nil {
		return nil, fmt.Errorf("built-in sample set: %w", err)
	}
	return s, nil
}

// writeReports writes report.json, report.md and report.html into dir.
func writeReports(rep *eval.Report, dir string) error {
	for name, write := range map[string]func(io.Writer) error{
		"report.json": rep.WriteJSON,
		"report.md":   rep.WriteMarkdown,
		"report.html": rep.WriteHTML,
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, name), b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// answers are the offline analyst's statements per question of the
// sample set, one per turn: it repairs a wrong column on
// customers-per-region, forgets the status filter on completed-orders-2025
// and sorts regions-alphabetical the wrong way.
var answers = map[string][]string{
	"How many regions are there?": {"SELECT COUNT(id) AS n FROM regions"},
	"How many products are there in each category?": {
		"SELECT count(*) AS n, category AS product_category FROM products GROUP BY category ORDER BY n DESC"},
	"How many customers does each region have?": {
		"SELECT region, count(*) FROM customers GROUP BY region",
		"SELECT r.name, count(c.id) AS n FROM regions r JOIN customers c ON c.region_id = r.id GROUP BY r.name"},
	"What was the revenue of completed orders per region in 2025, highest first?": {
		`SELECT r.name AS region, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue, COUNT(DISTINCT o.id) AS orders
FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY r.name ORDER BY revenue DESC`,
		`SELECT r.name AS region, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue
FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY r.name ORDER BY revenue DESC`},
	"How many completed orders were placed in 2025?": {
		"SELECT count(*) FROM orders WHERE ordered_at >= '2025-01-01' AND ordered_at < '2026-01-01'"},
	"List the region names in alphabetical order.": {"SELECT name FROM regions ORDER BY name DESC"},
}

// analyst is the scripted model of the offline evaluation: it plays the
// statements of answers for the question, one per turn, then answers
// from the last result. A question it has no script for gets an answer
// without SQL (and fails with "no SQL answer").
func analyst() *scripted.Model {
	return &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "scripted-analyst", ContextWindow: 128_000,
		Capabilities: agents.Capabilities{Tools: true},
		// Demo prices (US dollars per million tokens), so the report has a
		// cost to show.
		Pricing: agents.Pricing{InputPerMTok: 2.5, CachedInputPerMTok: 0.25, OutputPerMTok: 10}},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			question, calls, last := "", 0, ""
			for _, m := range req.Messages {
				for _, p := range m.Parts {
					switch {
					case m.Role == domain.RoleUser && p.Type == domain.PartText:
						question = strings.TrimSpace(p.Text)
					case p.ToolResult != nil:
						calls++
						last = p.ToolResult.Content
					}
				}
			}
			steps := answers[question]
			if calls < len(steps) {
				return scripted.Turn{ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, sqldb.QueryArgs{SQL: steps[calls]})}}, nil
			}
			if len(steps) == 0 {
				return scripted.Turn{Text: "I have no script for this question."}, nil
			}
			first, _, _ := strings.Cut(last, "\n")
			return scripted.Turn{Text: "Answered from the query result: " + first}, nil
		}}
}
