package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// question is what the user asks.
const question = "Forecast our monthly revenue for the first quarter of 2026 from the last two years of sales."

// options are the command-line flags.
type options struct {
	offline bool   // use the scripted analyst even when a provider is configured
	dbPath  string // an existing sample database ("": generate one)
}

func main() {
	var o options
	flag.BoolVar(&o.offline, "offline", false, "use the scripted analyst even when a provider is configured")
	flag.StringVar(&o.dbPath, "db", "", "SQLite file holding the sample retail tables (default: generate one in a temporary folder)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

// outcome is what a run left behind, for the tests.
type outcome struct {
	svc       *bichat.Service
	user      domain.Principal
	messageID string
	// analyst is the scripted model (nil when a real model answered).
	analyst *scripted.Model
	// forecasts are the payloads the host received, decoded as a UI would.
	forecasts []forecast
	answer    string
}

func run(ctx context.Context, out io.Writer, o options) error {
	_, err := runDemo(ctx, out, o)
	return err
}

func runDemo(ctx context.Context, out io.Writer, o options) (*outcome, error) {
	// The sample retail database, opened read-only.
	dbPath := o.dbPath
	if dbPath == "" {
		dir, err := os.MkdirTemp("", "bichat-customtool-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		dbPath = filepath.Join(dir, "retail.db")
		if err := sampledata.CreateSQLite(ctx, dbPath); err != nil {
			return nil, fmt.Errorf("create sample data: %w", err)
		}
	}
	db, err := sqlite.Open(dbPath, sqlite.Options{})
	if err != nil {
		return nil, err
	}
	defer db.Close()

	// The host's own tool: typed input, checked by schema and by code.
	tool, err := newForecastTool(db)
	if err != nil {
		return nil, err
	}

	model, note, err := providers.FromEnv()
	if err != nil {
		return nil, err
	}
	res := &outcome{}
	if o.offline || model.Info().Provider == "scripted" {
		res.analyst = analyst()
		model = res.analyst
		note = "offline demo: a scripted analyst stands in for the LLM (set a provider key to use a real model)"
	}
	fmt.Fprintf(out, "model: %s/%s\n%s\n", model.Info().Provider, model.Info().Name, note)

	svc, err := bichat.New(bichat.Config{Agent: agents.Config{
		Model: model,
		System: "You are a careful BI analyst. For revenue forecasts call forecast_revenue; " +
			"if it reports invalid arguments, fix them and call it again. Never invent numbers.",
		Tools: []agents.Tool{tool},
	}})
	if err != nil {
		return nil, err
	}
	defer svc.Close(context.WithoutCancel(ctx))
	res.svc = svc
	res.user = domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, err := svc.CreateSession(ctx, res.user, bichat.SessionOptions{})
	if err != nil {
		return nil, err
	}

	fmt.Fprintf(out, "\n== %s\n", question)
	var text strings.Builder
	flush := func() {
		if t := strings.TrimSpace(text.String()); t != "" {
			fmt.Fprintf(out, "assistant  %s\n", strings.ReplaceAll(t, "\n", " "))
		}
		text.Reset()
	}
	for ev, err := range svc.Send(ctx, res.user, sess.ID, question) {
		if err != nil {
			return nil, err
		}
		res.messageID = ev.Header().MessageID
		switch e := ev.(type) {
		case *agents.TextDelta:
			text.WriteString(e.Text)
		case *agents.ToolCallStarted:
			flush()
			fmt.Fprintf(out, "tool call  %s %s\n", e.Name, e.Arguments)
		case *agents.ToolCallFinished:
			if e.Error != "" {
				fmt.Fprintf(out, "tool error %s (%s); the model reads:\n           %s\n", e.Name, e.ErrorCode, e.Summary)
				continue
			}
			fmt.Fprintf(out, "tool done  %s; the model reads:\n           %s\n", e.Name, e.Summary)
			if e.Name != toolForecast {
				continue
			}
			f, err := decodeForecast(e.Payload)
			if err != nil {
				return nil, err
			}
			res.forecasts = append(res.forecasts, f)
			fmt.Fprintln(out, "payload    the host draws (never sent to the model):")
			render(out, f)
		case *agents.RunFinished:
			flush()
			res.answer = e.Text
			fmt.Fprintf(out, "finished   %s after %d turns and %d tool calls\n", e.Reason, e.Turns, e.ToolCalls)
		case *agents.RunFailed:
			flush()
			fmt.Fprintf(out, "failed     %s: %s\n", e.Code, e.Message)
		}
	}

	fmt.Fprintln(out, "\n== persisted")
	msg, err := svc.Message(ctx, res.user, res.messageID)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "assistant %s: %s\n", msg.Status, strings.ReplaceAll(msg.Text(), "\n", " "))
	for _, tc := range msg.Metadata.ToolCalls {
		status := "ok"
		if tc.Error != "" {
			status = "error"
		}
		fmt.Fprintf(out, "  tool %s %s %s\n", tc.Name, status, tc.Arguments)
	}
	return res, nil
}

// decodeForecast reads the payload of a forecast_revenue call the way a
// UI that got it over JSON (the SSE handler) would.
func decodeForecast(payload any) (forecast, error) {
	var f forecast
	b, err := json.Marshal(payload)
	if err != nil {
		return f, fmt.Errorf("encode payload: %w", err)
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return f, fmt.Errorf("decode %s payload: %w", toolForecast, err)
	}
	if len(f.History) == 0 {
		return f, fmt.Errorf("decode %s payload: no history in %s", toolForecast, b)
	}
	return f, nil
}

// render draws the forecast as a text bar chart: history (█) with the
// fitted trend, then the forecast months (░).
func render(out io.Writer, f forecast) {
	fmt.Fprintf(out, "           %s, %s to %s, %s: trend %+.2f per month, R² %.2f\n", f.Region, f.From, f.To, f.Currency, f.Slope, f.R2)
	top := 0.0
	for _, p := range append(f.History, f.Forecast...) {
		top = max(top, p.Revenue)
	}
	bar := func(v float64, c string) string {
		if top <= 0 || v <= 0 {
			return ""
		}
		return strings.Repeat(c, int(v/top*40+0.5))
	}
	for _, p := range f.History {
		fmt.Fprintf(out, "           %s %-40s %10.2f  trend %10.2f\n", p.Month, bar(p.Revenue, "█"), p.Revenue, p.Trend)
	}
	for _, p := range f.Forecast {
		fmt.Fprintf(out, "           %s %-40s %10.2f  forecast\n", p.Month, bar(p.Revenue, "░"), p.Revenue)
	}
}

var (
	// lastMonthRE finds the month the tool says the data ends at.
	lastMonthRE = regexp.MustCompile(`last month with data \((\d{4}-\d{2})\)`)
	// forecastRE reads "2026-01 12345.67" pairs from the tool summary.
	forecastRE = regexp.MustCompile(`(\d{4}-\d{2}) (-?\d+\.\d{2})`)
	// trendRE reads the slope from the tool summary.
	trendRE = regexp.MustCompile(`linear trend ([+-]\d+\.\d{2}) per month`)
)

// analyst is the scripted model of the offline demo. It reads each
// request like a model would: first it asks for the forecast with the
// quarter to forecast wrongly inside the history (a typical slip), then it
// repairs the call from the error it gets back, then it answers from the
// summary.
func analyst() *scripted.Model {
	return &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "scripted-analyst", ContextWindow: 128_000,
		Capabilities: agents.Capabilities{Tools: true}},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			var last *domain.ToolResult
			for _, m := range req.Messages {
				for _, p := range m.Parts {
					if p.ToolResult != nil && p.ToolResult.Name == toolForecast {
						last = p.ToolResult
					}
				}
			}
			switch {
			case last == nil:
				return scripted.Turn{
					Text: "I'll fit a linear trend to the monthly revenue since January 2024 and extend it by three months.\n",
					ToolCalls: []scripted.Call{scripted.CallJSON(toolForecast,
						forecastInput{From: "2024-01", To: "2026-03", Months: 3})},
				}, nil
			case last.IsError:
				m := lastMonthRE.FindStringSubmatch(last.Content)
				if m == nil {
					return scripted.Turn{Text: "I could not run the forecast: " + last.Content}, nil
				}
				return scripted.Turn{
					Text: fmt.Sprintf("The history has to end at %s, the last month with data; retrying.\n", m[1]),
					ToolCalls: []scripted.Call{scripted.CallJSON(toolForecast,
						forecastInput{From: "2024-01", To: m[1], Months: 3})},
				}, nil
			}
			_, after, _ := strings.Cut(last.Content, "Forecast:")
			pairs := forecastRE.FindAllStringSubmatch(after, -1)
			trend := trendRE.FindStringSubmatch(last.Content)
			if len(pairs) == 0 || trend == nil {
				return scripted.Turn{Text: "The forecast tool returned no forecast: " + last.Content}, nil
			}
			months := make([]string, len(pairs))
			for i, p := range pairs {
				months[i] = fmt.Sprintf("%s: €%s", p[1], p[2])
			}
			direction := "grown"
			if strings.HasPrefix(trend[1], "-") {
				direction = "fallen"
			}
			return scripted.Turn{Text: fmt.Sprintf("Monthly revenue has %s by about €%s a month since January 2024. "+
				"If the trend holds, the first quarter of 2026 brings %s. The chart shows the history and the trend line.",
				direction, strings.TrimLeft(trend[1], "+-"), strings.Join(months, ", "))}, nil
		}}
}
