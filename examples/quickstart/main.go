// Command quickstart runs bichat end to end on one machine with no servers
// and no API key: an in-memory store, a scripted model standing in for an
// LLM, and one typed tool over sample sales data that the program generates.
//
//	go run ./examples/quickstart
//
// It creates a session, asks a question, prints the streamed events (text,
// tool call, tool result for the host, usage) and then the message as it was
// persisted.
package main

import (
	"context"
	"fmt"
	"log"
	"sort"
	"strings"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// RevenueQuery is the typed input of the revenue_by_region tool. Its JSON
// Schema is generated from the struct; the model's arguments are validated
// against it before the function runs.
type RevenueQuery struct {
	Year    int    `json:"year" jsonschema:"minimum=2024,maximum=2025,description=Calendar year"`
	Quarter string `json:"quarter,omitempty" jsonschema:"enum=Q1,enum=Q2,enum=Q3,enum=Q4,description=Optional quarter"`
}

// RegionRevenue is one row of the tool's result.
type RegionRevenue struct {
	Region  string  `json:"region"`
	Revenue float64 `json:"revenue_eur"`
	Orders  int     `json:"orders"`
}

// RevenueTable is the tool's output: the host renders Rows; the model reads
// the summary.
type RevenueTable struct {
	Rows []RegionRevenue `json:"rows"`
}

// ToolSummary is what the model sees: a compact table, not the raw payload.
func (t RevenueTable) ToolSummary() string {
	var b strings.Builder
	b.WriteString("region | revenue_eur | orders\n")
	for _, r := range t.Rows {
		fmt.Fprintf(&b, "%s | %.2f | %d\n", r.Region, r.Revenue, r.Orders)
	}
	return b.String()
}

// sales generates deterministic sample orders: four regions over 2024-2025.
func sales() map[string][]RegionRevenue {
	regions := []string{"EMEA", "Americas", "APAC", "LATAM"}
	out := map[string][]RegionRevenue{}
	for y := 2024; y <= 2025; y++ {
		for q := 1; q <= 4; q++ {
			key := fmt.Sprintf("%d-Q%d", y, q)
			for i, r := range regions {
				orders := 120 + 37*i + 11*q + (y-2024)*25
				out[key] = append(out[key], RegionRevenue{Region: r, Orders: orders,
					Revenue: float64(orders) * (410 + 55*float64(i) + 3*float64(q))})
			}
		}
	}
	return out
}

func revenueByRegion(data map[string][]RegionRevenue) func(context.Context, RevenueQuery) (RevenueTable, error) {
	return func(_ context.Context, q RevenueQuery) (RevenueTable, error) {
		totals := map[string]*RegionRevenue{}
		for key, rows := range data {
			if !strings.HasPrefix(key, fmt.Sprint(q.Year)) || (q.Quarter != "" && !strings.HasSuffix(key, q.Quarter)) {
				continue
			}
			for _, r := range rows {
				t := totals[r.Region]
				if t == nil {
					t = &RegionRevenue{Region: r.Region}
					totals[r.Region] = t
				}
				t.Revenue += r.Revenue
				t.Orders += r.Orders
			}
		}
		var out RevenueTable
		for _, t := range totals {
			out.Rows = append(out.Rows, *t)
		}
		sort.Slice(out.Rows, func(i, j int) bool { return out.Rows[i].Revenue > out.Rows[j].Revenue })
		return out, nil
	}
}

func main() {
	if err := run(context.Background()); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context) error {
	tool, err := agents.NewTool("revenue_by_region",
		"Total revenue in EUR and order count per sales region for a year, optionally one quarter.",
		revenueByRegion(sales()), agents.WithParallel())
	if err != nil {
		return err
	}

	// The scripted model plays an analyst: it calls the tool, then answers
	// from the tool's summary. A real provider plugs in here instead.
	model := &scripted.Model{
		Turns: []scripted.Turn{{
			Text:      "Let me pull revenue by region for 2025.\n",
			ToolCalls: []scripted.Call{scripted.CallJSON("revenue_by_region", RevenueQuery{Year: 2025})},
		}},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			last := req.Messages[len(req.Messages)-1]
			summary := last.Parts[0].ToolResult.Content
			lines := strings.Split(strings.TrimSpace(summary), "\n")
			top := strings.Split(lines[1], " | ")
			return scripted.Turn{Text: fmt.Sprintf("**%s** led 2025 with €%s of revenue from %s orders.", top[0], top[1], top[2])}, nil
		},
	}

	svc, err := bichat.New(bichat.Config{
		Agent: agents.Config{
			Model:  model,
			System: "You are a careful BI analyst. Use the tools; never invent numbers.",
			Tools:  []agents.Tool{tool},
		},
	})
	if err != nil {
		return err
	}

	analyst := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	sess, err := svc.CreateSession(ctx, analyst, bichat.SessionOptions{})
	if err != nil {
		return err
	}

	fmt.Println("== streamed events")
	for ev, err := range svc.Send(ctx, analyst, sess.ID, "Which region had the highest revenue in 2025?") {
		if err != nil {
			return err
		}
		switch e := ev.(type) {
		case *agents.TextDelta:
			fmt.Printf("text      %q\n", e.Text)
		case *agents.ToolCallStarted:
			fmt.Printf("tool call %s %s\n", e.Name, e.Arguments)
		case *agents.ToolCallFinished:
			fmt.Printf("tool done %s: %d rows for the host, %d bytes for the model\n",
				e.Name, len(e.Payload.(RevenueTable).Rows), len(e.Summary))
		case *agents.RunFinished:
			fmt.Printf("finished  %s, %d tokens\n", e.Reason, e.Usage.TotalTokens)
		default:
			fmt.Printf("%-9s seq=%d\n", e.Type(), e.Header().Seq)
		}
	}

	fmt.Println("\n== persisted")
	msgs, err := svc.Messages(ctx, analyst, sess.ID, domain.MessageListOptions{})
	if err != nil {
		return err
	}
	for _, m := range msgs {
		fmt.Printf("%-9s %-8s %s\n", m.Role, m.Status, strings.ReplaceAll(m.Text(), "\n", " "))
		for _, tc := range m.Metadata.ToolCalls {
			fmt.Printf("          tool %s(%s) in %d ms\n", tc.Name, tc.Arguments, tc.DurationMS)
		}
	}
	s, err := svc.GetSession(ctx, analyst, sess.ID)
	if err != nil {
		return err
	}
	fmt.Printf("\nsession %q\n", s.Title)
	fmt.Println("(offline demo: a scripted model stood in for the LLM)")
	return nil
}
