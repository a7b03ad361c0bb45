package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/hooks"
	bichatprom "github.com/bichat-go/bichat/hooks/prometheus"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/providers"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/redact"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/catalog"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// question is what the analyst asks.
const question = "Which region had the highest revenue in 2025? Chart it and give me a spreadsheet."

// revenueSQL is the statement the scripted analyst writes.
const revenueSQL = `SELECT r.name AS region, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue, COUNT(DISTINCT o.id) AS orders
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN regions r ON r.id = c.region_id
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY r.name
ORDER BY revenue DESC`

// options are the command-line flags.
type options struct {
	offline bool   // use the scripted analyst even when a provider is configured
	saveDir string // folder to save the files in ("": not saved)
	metrics bool   // print a metrics and cost summary at the end
}

func main() {
	var o options
	flag.BoolVar(&o.offline, "offline", false, "use the scripted analyst even when a provider is configured")
	flag.StringVar(&o.saveDir, "out", "", "folder to save the chart, workbook and CSV in (default: not saved)")
	flag.BoolVar(&o.metrics, "metrics", false, "print a summary of the Prometheus metrics and of the cost at the end")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer, o options) error {
	forceOffline, saveDir := o.offline, o.saveDir
	// 1. Data: a SQLite file of generated retail data, opened read-only.
	dir, err := os.MkdirTemp("", "bichat-quickstart-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbPath := filepath.Join(dir, "retail.db")
	if err := sampledata.CreateSQLite(ctx, dbPath); err != nil {
		return fmt.Errorf("create sample data: %w", err)
	}
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		return err
	}
	defer db.Close()

	// 2. Knowledge: a catalog of the tables, searched before each question.
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

	// Events (every step of a run, the tools' SQL statements) go on a bus,
	// through the same redactor as everything else the service sends out:
	// no API key or password reaches a handler.
	redactor := redact.Default()
	bus := hooks.New(hooks.Options{Redact: redactor.Func()})
	defer bus.Close()

	// 3. Tools, sharing one result store (tables by name) and one artifact
	// store (files).
	store := memory.NewArtifactStore(0)
	results := tools.NewMemoryResults(10)
	charts := chart.NewMemoryCharts(0)
	data, err := sqldb.New(sqldb.Config{DB: db, Results: results, Store: store, Datasets: datasets, Bus: bus})
	if err != nil {
		return err
	}
	drawChart, err := chart.New(chart.Config{Results: results, Charts: charts, Store: store})
	if err != nil {
		return err
	}
	excel, err := export.NewExcel(export.ExcelConfig{Results: results, Store: store})
	if err != nil {
		return err
	}
	list, err := catalog.ListDatasets(cat)
	if err != nil {
		return err
	}
	toolset := append(data.All(), drawChart, excel, list)

	// 4. The model: a real one when the environment configures it.
	model, note, err := providers.FromEnv()
	if err != nil {
		return err
	}
	if forceOffline || model.Info().Provider == "scripted" {
		model = analyst()
		note = "offline demo: a scripted analyst stands in for the LLM (set a provider key to use a real model)"
	}
	fmt.Fprintf(out, "model: %s/%s\n%s\n", model.Info().Provider, model.Info().Name, note)

	var reg *prometheus.Registry
	if o.metrics {
		// Metrics go to a registry of our own (a web host would serve it
		// with promhttp.HandlerFor); tool and model labels come from the
		// configured sets, so no label grows without bound.
		reg = prometheus.NewRegistry()
		names := make([]string, len(toolset))
		for i, t := range toolset {
			names[i] = t.Spec().Name
		}
		m, err := bichatprom.New(reg, bichatprom.Options{Tools: names, Models: []string{model.Info().Name}, Bus: bus})
		if err != nil {
			return err
		}
		if _, err := bus.Subscribe(m); err != nil {
			return err
		}
	}
	if _, err := hooks.Listen(bus, func(_ context.Context, e *bichat.DiscoveryEvent) error {
		fmt.Fprintf(out, "\n== discovery: %s\n", strings.Join(e.Datasets, ", "))
		return nil
	}); err != nil {
		return err
	}

	svc, err := bichat.New(bichat.Config{
		Agent: agents.Config{
			Model: model,
			System: "You are a careful BI analyst. Answer from data: find the tables, query them with " +
				"query_database, chart results with draw_chart and export them with export_excel when asked. " +
				"Never invent numbers.",
			Tools: toolset,
		},
		ArtifactStore: store,
		Knowledge:     bichat.Knowledge{Catalog: cat},
		Bus:           bus,
		Redactor:      redactor,
	})
	if err != nil {
		return err
	}

	ana := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, err := svc.CreateSession(ctx, ana, bichat.SessionOptions{})
	if err != nil {
		return err
	}

	fmt.Fprintln(out, "\n== streamed events")
	var answerID string
	for ev, err := range svc.Send(ctx, ana, sess.ID, question) {
		if err != nil {
			return err
		}
		answerID = ev.Header().MessageID
		switch e := ev.(type) {
		case *agents.TextDelta:
			fmt.Fprintf(out, "text      %q\n", e.Text)
		case *agents.ToolCallStarted:
			fmt.Fprintf(out, "tool call %s\n", e.Name)
		case *agents.ToolCallFinished:
			status := "ok"
			if e.Error != "" {
				status = "error: " + e.Summary
			}
			fmt.Fprintf(out, "tool done %s (%s), %d artifact(s)\n", e.Name, status, len(e.Artifacts))
		case *agents.RunFinished:
			fmt.Fprintf(out, "finished  %s, %d tokens\n", e.Reason, e.Usage.TotalTokens)
		case *agents.RunFailed:
			fmt.Fprintf(out, "failed    %s: %s\n", e.Code, e.Message)
		}
	}

	fmt.Fprintln(out, "\n== persisted")
	msgs, err := svc.Messages(ctx, ana, sess.ID, domain.MessageListOptions{})
	if err != nil {
		return err
	}
	for _, m := range msgs {
		fmt.Fprintf(out, "%-9s %-8s %s\n", m.Role, m.Status, strings.ReplaceAll(m.Text(), "\n", " "))
		for _, tc := range m.Metadata.ToolCalls {
			fmt.Fprintf(out, "          tool %s in %d ms\n", tc.Name, tc.DurationMS)
		}
		if len(m.Metadata.DatasetsUsed) > 0 {
			fmt.Fprintf(out, "          datasets %s\n", strings.Join(m.Metadata.DatasetsUsed, ", "))
		}
	}

	fmt.Fprintln(out, "\n== files")
	arts, err := svc.Artifacts(ctx, ana, answerID)
	if err != nil {
		return err
	}
	for _, a := range arts {
		rc, meta, err := svc.ArtifactContent(ctx, ana, a.ID)
		if err != nil {
			return err
		}
		n, err := saveArtifact(rc, saveDir, meta.Name)
		rc.Close()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%-6s %-28s %6d bytes  %s\n", meta.Kind, meta.Name, n, meta.MediaType)
	}
	if !o.metrics {
		return nil
	}
	fmt.Fprintln(out, "\n== metrics")
	if err := printMetrics(out, reg); err != nil {
		return err
	}
	fmt.Fprintln(out, "\n== cost")
	answer, err := svc.Message(ctx, ana, answerID)
	if err != nil {
		return err
	}
	sessionCost, err := svc.Costs().SessionCost(ctx, ana.TenantID, sess.ID)
	if err != nil {
		return err
	}
	today, err := svc.Costs().TenantDayCost(ctx, ana.TenantID, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "answer   $%.6f  (%d tokens in, %d out)\n", answer.Metadata.CostUSD,
		answer.Metadata.Usage.PromptTokens, answer.Metadata.Usage.CompletionTokens)
	fmt.Fprintf(out, "session  $%.6f\n", sessionCost)
	fmt.Fprintf(out, "%s today $%.6f\n", ana.TenantID, today)
	return nil
}

// printMetrics prints the non-zero series of reg: counters and gauges as
// their value, histograms as their count and sum.
func printMetrics(out io.Writer, reg *prometheus.Registry) error {
	families, err := reg.Gather()
	if err != nil {
		return err
	}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			name := f.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetCounter() != nil && m.GetCounter().GetValue() != 0:
				fmt.Fprintf(out, "%-72s %g\n", name, m.GetCounter().GetValue())
			case m.GetGauge() != nil && m.GetGauge().GetValue() != 0:
				fmt.Fprintf(out, "%-72s %g\n", name, m.GetGauge().GetValue())
			case m.GetHistogram() != nil && m.GetHistogram().GetSampleCount() != 0:
				h := m.GetHistogram()
				fmt.Fprintf(out, "%-72s count=%d sum=%.4g\n", name, h.GetSampleCount(), h.GetSampleSum())
			}
		}
	}
	return nil
}

// saveArtifact copies content to dir/name when dir is set, and counts it.
func saveArtifact(content io.Reader, dir, name string) (int64, error) {
	if dir == "" {
		return io.Copy(io.Discard, content)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	f, err := root.Create(filepath.Base(name))
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// analyst is the scripted model of the offline demo. It reads the request
// like a model would: with no tool result yet it queries, then charts and
// exports the result it was told about, then answers from the query's
// table.
func analyst() *scripted.Model {
	return &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "scripted-analyst", ContextWindow: 128_000,
		Capabilities: agents.Capabilities{Tools: true, ParallelTools: true},
		// Demo prices (US dollars per million tokens), so -metrics has a
		// cost to show; a real model's come from the provider registry.
		Pricing: agents.Pricing{InputPerMTok: 2.5, CachedInputPerMTok: 0.25, OutputPerMTok: 10}},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			results := map[string]string{}
			for _, m := range req.Messages {
				for _, p := range m.Parts {
					if p.ToolResult != nil {
						results[p.ToolResult.Name] = p.ToolResult.Content
					}
				}
			}
			query, ok := results[sqldb.ToolQuery]
			switch {
			case !ok:
				return scripted.Turn{
					Text:      "I'll sum 2025 revenue of completed orders per region.\n",
					ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, sqldb.QueryArgs{SQL: revenueSQL})},
				}, nil
			case results["draw_chart"] == "":
				ref := resultName(query)
				return scripted.Turn{ToolCalls: []scripted.Call{
					scripted.CallJSON("draw_chart", chart.Input{Type: "bar", Data: chart.Data{Ref: ref}, X: "region", Y: "revenue",
						Title: "Revenue by region, 2025 (EUR)"}),
					scripted.CallJSON("export_excel", export.ExcelInput{Title: "Revenue by region 2025",
						Sheets: []export.SheetInput{{Name: "Revenue", Data: chart.Data{Ref: ref}}}}),
				}}, nil
			}
			region, revenue, orders, err := topRow(query)
			if err != nil {
				return scripted.Turn{}, err
			}
			return scripted.Turn{Text: fmt.Sprintf("**%s** had the highest revenue in 2025: €%s from %s completed orders. "+
				"The chart and the workbook are attached.", region, revenue, orders)}, nil
		}}
}

// resultName finds the name query_database gave its result ("result_1").
func resultName(summary string) string {
	_, after, ok := strings.Cut(summary, `Refer to it as "`)
	if !ok {
		return "result_1"
	}
	name, _, _ := strings.Cut(after, `"`)
	return name
}

// topRow reads the first data row of the markdown preview in a
// query_database summary.
func topRow(summary string) (region, revenue, orders string, err error) {
	lines := strings.Split(summary, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "| ---") && i+1 < len(lines) {
			cells := strings.Split(strings.Trim(lines[i+1], "| "), " | ")
			if len(cells) == 3 {
				return cells[0], cells[1], cells[2], nil
			}
		}
	}
	return "", "", "", errors.New("analyst: no table in the query result")
}
