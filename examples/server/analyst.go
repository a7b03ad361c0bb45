package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/chart"
	"github.com/bichat-go/bichat/tools/export"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// The questions the offline analyst knows; the page offers them as
// suggestions on an empty chat.
const (
	QuestionRegions = "Which region had the highest revenue in 2025? Chart it."
	QuestionMonths  = "Summarise 2025 month by month."
	QuestionPin     = "Pin the chart to a dashboard."
)

// Suggestions are the example questions the page offers on an empty chat.
var Suggestions = []string{QuestionRegions, QuestionMonths, QuestionPin}

// regionsSQL is the statement the scripted analyst writes for revenue per
// region.
const regionsSQL = `SELECT r.name AS region, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue, COUNT(DISTINCT o.id) AS orders
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN regions r ON r.id = c.region_id
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY r.name
ORDER BY revenue DESC`

// monthsSQL is the statement the scripted analyst writes for revenue per
// month.
const monthsSQL = `SELECT substr(o.ordered_at, 1, 7) AS month, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue, COUNT(DISTINCT o.id) AS orders
FROM orders o
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01'
GROUP BY month
ORDER BY month`

// AnalystModel is the model name of the scripted analyst, in the model
// picker and in SessionOptions.Model.
const AnalystModel = "analyst"

// Analyst is the scripted model of the offline demo. It reads each request
// like a model would — the user's last question and the tool results that
// followed it — and plays one of three scripts:
//
//   - revenue per region (QuestionRegions): query_database, then
//     draw_chart and export_excel on the result, then a Markdown answer
//     naming the top region;
//   - a month-by-month summary (QuestionMonths): query_database, then a
//     long Markdown answer with a line per month (the script to watch
//     streaming, or to reload in the middle of);
//   - pinning a chart (QuestionPin): ask_user_question for the dashboard,
//     then pin_chart, a write tool the user must approve, then a short
//     answer saying what happened.
//
// Anything else gets a short help text listing those questions. Pace sets
// the delay before each streamed fragment, so a browser sees text arrive.
type Analyst struct {
	pace atomic.Int64
}

// analystInfo describes the analyst.
var analystInfo = agents.ModelInfo{Provider: "scripted", Name: AnalystModel, ContextWindow: 128000,
	Capabilities: agents.Capabilities{Tools: true, ParallelTools: true, JSON: true}}

// NewAnalyst returns the scripted analyst streaming a fragment every pace.
func NewAnalyst(pace time.Duration) *Analyst {
	a := &Analyst{}
	a.pace.Store(int64(pace))
	return a
}

// SetPace changes the delay before each streamed fragment, for the runs
// that start afterwards.
func (a *Analyst) SetPace(d time.Duration) { a.pace.Store(int64(d)) }

// Info describes the analyst.
func (a *Analyst) Info() agents.ModelInfo { return analystInfo }

// Stream answers req (see Analyst). A scripted.Model per request keeps
// no request history in a long-running server.
func (a *Analyst) Stream(ctx context.Context, req *agents.Request) iter.Seq2[agents.Chunk, error] {
	m := &scripted.Model{ModelInfo: analystInfo, ChunkSize: 12, Respond: a.respond}
	return m.Stream(ctx, req)
}

var _ agents.Model = (*Analyst)(nil)

// turnState is what the analyst reads from a request: the user's last
// question and, by tool name, the results of the calls since.
type turnState struct {
	question string
	results  map[string]domain.ToolResult
	// chart is the name of the latest chart drawn in the conversation.
	chart string
}

var chartName = regexp.MustCompile(`Drew (?:a|an) \w+ chart "([\w-]+)"`)

func readTurn(req *agents.Request) turnState {
	st := turnState{results: map[string]domain.ToolResult{}}
	last := -1
	for i, m := range req.Messages {
		if m.Role != domain.RoleUser {
			continue
		}
		text, tool := "", false
		for _, p := range m.Parts {
			switch {
			case p.ToolResult != nil:
				tool = true
			case p.Type == domain.PartText:
				text += p.Text
			}
		}
		if !tool && strings.TrimSpace(text) != "" {
			last, st.question = i, text
		}
	}
	for i, m := range req.Messages {
		for _, p := range m.Parts {
			r := p.ToolResult
			if r == nil {
				continue
			}
			if r.Name == "draw_chart" && !r.IsError {
				if mm := chartName.FindStringSubmatch(r.Content); mm != nil {
					st.chart = mm[1]
				}
			}
			if i > last {
				st.results[r.Name] = *r
			}
		}
	}
	return st
}

func (a *Analyst) respond(_ context.Context, req *agents.Request) (scripted.Turn, error) {
	st := readTurn(req)
	t, err := script(st)
	t.Delay = time.Duration(a.pace.Load())
	return t, err
}

// script picks the next turn for st.
func script(st turnState) (scripted.Turn, error) {
	q := strings.ToLower(st.question)
	switch {
	case strings.Contains(q, "pin"):
		return pinScript(st)
	case strings.Contains(q, "month"):
		return monthsScript(st)
	case strings.Contains(q, "region") || strings.Contains(q, "revenue"):
		return regionsScript(st)
	}
	return scripted.Turn{Text: "I am the offline analyst of this demo, so I only know a few questions. Try one of these:\n\n" +
		"- " + QuestionRegions + "\n- " + QuestionMonths + "\n- " + QuestionPin + "\n\n" +
		"Set `OPENAI_API_KEY`, `ANTHROPIC_API_KEY`, `GEMINI_API_KEY` or `OLLAMA_HOST` and restart the server to ask a real model anything."}, nil
}

func regionsScript(st turnState) (scripted.Turn, error) {
	query, ok := st.results[sqldb.ToolQuery]
	switch {
	case !ok:
		return scripted.Turn{
			Text:      "I'll sum the 2025 revenue of completed orders per region.\n\n",
			ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, sqldb.QueryArgs{SQL: regionsSQL})},
		}, nil
	case query.IsError:
		return scripted.Turn{Text: "The query failed: " + query.Content}, nil
	case st.results["draw_chart"].Content == "":
		ref := resultName(query.Content)
		return scripted.Turn{ToolCalls: []scripted.Call{
			scripted.CallJSON("draw_chart", chart.Input{Type: "bar", Data: chart.Data{Ref: ref}, X: "region", Y: "revenue",
				Title: "Revenue by region, 2025 (EUR)"}),
			scripted.CallJSON("export_excel", export.ExcelInput{Title: "Revenue by region 2025",
				Sheets: []export.SheetInput{{Name: "Revenue", Data: chart.Data{Ref: ref}}}}),
		}}, nil
	}
	rows, err := tableRows(query.Content)
	if err != nil {
		return scripted.Turn{}, err
	}
	top := rows[0]
	var b strings.Builder
	fmt.Fprintf(&b, "**%s** had the highest revenue in 2025: **€%s** from %s completed orders.\n\n", top[0], money(top[1]), top[2])
	b.WriteString("| Region | Revenue (EUR) | Orders |\n| --- | ---: | ---: |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s |\n", r[0], money(r[1]), r[2])
	}
	b.WriteString("\nThe chart and the workbook are attached below.")
	return scripted.Turn{Text: b.String()}, nil
}

func monthsScript(st turnState) (scripted.Turn, error) {
	query, ok := st.results[sqldb.ToolQuery]
	switch {
	case !ok:
		return scripted.Turn{
			Text:      "I'll total the completed orders of 2025 per month.\n\n",
			ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, sqldb.QueryArgs{SQL: monthsSQL})},
		}, nil
	case query.IsError:
		return scripted.Turn{Text: "The query failed: " + query.Content}, nil
	}
	rows, err := tableRows(query.Content)
	if err != nil {
		return scripted.Turn{}, err
	}
	best := slices.MaxFunc(rows, func(x, y []string) int { return compareAmount(x[1], y[1]) })
	worst := slices.MinFunc(rows, func(x, y []string) int { return compareAmount(x[1], y[1]) })
	var b strings.Builder
	b.WriteString("## 2025 month by month\n\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "- **%s**: €%s from %s completed orders\n", r[0], money(r[1]), r[2])
	}
	fmt.Fprintf(&b, "\nThe strongest month was **%s** (€%s) and the weakest **%s** (€%s).", best[0], money(best[1]), worst[0], money(worst[1]))
	return scripted.Turn{Text: b.String()}, nil
}

func pinScript(st turnState) (scripted.Turn, error) {
	ask, asked := st.results[agents.ToolAskUserQuestion]
	pin, pinned := st.results[ToolPinChart]
	chartRef := st.chart
	if chartRef == "" {
		chartRef = "chart_1"
	}
	switch {
	case !asked:
		return scripted.Turn{
			Text: "Sure. Which dashboard should it go on?\n",
			ToolCalls: []scripted.Call{scripted.CallJSON(agents.ToolAskUserQuestion, agents.AskUserQuestionArgs{
				Questions: []agents.AskedQuestion{{ID: "dashboard", Question: "Which dashboard should the chart go on?",
					Options: []agents.QuestionOption{
						{Label: "Sales overview", Description: "The team's weekly dashboard"},
						{Label: "Executive summary", Description: "The board's monthly dashboard"},
					}, AllowOther: true}},
			})},
		}, nil
	case !pinned:
		board := answerOf(ask.Content)
		return scripted.Turn{
			Text:      fmt.Sprintf("I'll pin %s to %s.\n", chartRef, board),
			ToolCalls: []scripted.Call{scripted.CallJSON(ToolPinChart, PinArgs{Chart: chartRef, Dashboard: board})},
		}, nil
	case pin.IsError:
		return scripted.Turn{Text: "Understood, I did not pin the chart."}, nil
	}
	return scripted.Turn{Text: "Done: " + pin.Content}, nil
}

// answerOf reads the answer out of the ask_user_question result ("The
// user answered:\n- question → answer").
func answerOf(content string) string {
	_, after, ok := strings.Cut(content, "→")
	if !ok {
		return "Sales overview"
	}
	line, _, _ := strings.Cut(after, "\n")
	if s := strings.TrimSpace(line); s != "" {
		return s
	}
	return "Sales overview"
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

// tableRows reads the data rows of the Markdown preview in a
// query_database summary.
func tableRows(summary string) ([][]string, error) {
	var rows [][]string
	in := false
	for l := range strings.Lines(summary) {
		l = strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(l, "| ---"):
			in = true
		case in && strings.HasPrefix(l, "|"):
			rows = append(rows, strings.Split(strings.Trim(l, "| "), " | "))
		case in:
			in = false
		}
	}
	if len(rows) == 0 || len(rows[0]) < 3 {
		return nil, errors.New("analyst: no table in the query result")
	}
	return rows, nil
}

func compareAmount(x, y string) int {
	a, _ := strconv.ParseFloat(x, 64)
	b, _ := strconv.ParseFloat(y, 64)
	return cmp.Compare(a, b)
}

// money formats an amount read from a result preview with two decimals
// and thousands separators ("390331.1" → "390,331.10"); anything that is
// not a number is returned as it is.
func money(s string) string {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return s
	}
	whole, frac, _ := strings.Cut(strconv.FormatFloat(math.Abs(f), 'f', 2, 64), ".")
	var b strings.Builder
	if f < 0 {
		b.WriteByte('-')
	}
	for i, r := range whole {
		if i > 0 && (len(whole)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	return b.String() + "." + frac
}

// ToolPinChart is the name of the demo write tool.
const ToolPinChart = "pin_chart"

// PinArgs are the arguments of pin_chart.
type PinArgs struct {
	Chart     string `json:"chart" jsonschema:"minLength=1,maxLength=64,description=The chart's name as draw_chart reported it (chart_1)"`
	Dashboard string `json:"dashboard" jsonschema:"minLength=1,maxLength=100,description=The dashboard to pin it to"`
}

// Dashboards is the demo's write target: charts pinned per tenant and
// dashboard, in memory. It stands in for whatever a real host would
// change (a dashboard service, a ticket, an e-mail).
type Dashboards struct {
	mu     sync.Mutex
	boards map[string]map[string][]string // tenant -> dashboard -> charts
}

// Pinned returns the charts pinned to dashboard for tenant, in order.
func (d *Dashboards) Pinned(tenant, dashboard string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.boards[tenant][dashboard])
}

// Tool returns pin_chart: a write tool (agents.PermWrite), so the
// executor asks the user to confirm every call before it runs.
func (d *Dashboards) Tool() (agents.Tool, error) {
	return agents.NewTool(ToolPinChart,
		"Pin a chart drawn with draw_chart to one of the user's dashboards. The user must approve it.",
		func(ctx context.Context, in PinArgs) (string, error) {
			info, ok := agents.CallInfoFromContext(ctx)
			if !ok || info.TenantID == "" {
				return "", errors.New("pin_chart: the call has no tenant")
			}
			d.mu.Lock()
			defer d.mu.Unlock()
			if d.boards == nil {
				d.boards = map[string]map[string][]string{}
			}
			if d.boards[info.TenantID] == nil {
				d.boards[info.TenantID] = map[string][]string{}
			}
			b := d.boards[info.TenantID]
			if !slices.Contains(b[in.Dashboard], in.Chart) {
				b[in.Dashboard] = append(b[in.Dashboard], in.Chart)
			}
			return fmt.Sprintf("%s is pinned to **%s** (%d chart(s) there now).", in.Chart, in.Dashboard, len(b[in.Dashboard])), nil
		}, agents.WithPermission(agents.PermWrite))
}
