package context

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

func mustBlock(t testing.TB, c *Codecs, kind Kind, codec string, payload any, opts ...BlockOption) Block {
	t.Helper()
	b, err := c.NewBlock(kind, codec, payload, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var (
	ordersDataset = domain.Dataset{Name: "sales.orders", Source: "sales.orders", Kind: "table", Description: "One row per order.",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "customer_id", Type: "bigint"},
			{Name: "created_at", Type: "timestamptz"}, {Name: "total", Type: "numeric(12,2)", Description: "Order total in EUR"}}}
	customersDataset = domain.Dataset{Name: "sales.customers", Source: "sales.customers", Kind: "table",
		Fields: []domain.Field{{Name: "id", Type: "bigint", PrimaryKey: true}, {Name: "region", Type: "text"}}}
	ordersJoin = domain.Relationship{From: "sales.orders", FromColumns: []string{"customer_id"}, To: "sales.customers", ToColumns: []string{"id"},
		Description: "each order has one customer"}
	sqlTool = agents.ToolSpec{Name: "query_database", Description: "Run one read-only SQL query.",
		Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"],"additionalProperties":false}`)}
	schemaTool = agents.ToolSpec{Name: "get_schema", Description: "Describe datasets.",
		Schema: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}}}`)}
)

func call(id, name, args string) domain.Part {
	return domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: id, Name: name, Arguments: json.RawMessage(args)}}
}

func result(id, name, content string) domain.Part {
	return domain.Part{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: id, Name: name, Content: content}}
}

// exchange returns one question-answer exchange with a tool call: user,
// assistant call, tool result, assistant answer.
func exchange(i int) []agents.Message {
	id := fmt.Sprintf("call_%d", i)
	return []agents.Message{
		agents.UserMessage(fmt.Sprintf("Question %d: what was revenue in month %d of 2024 for region %d?", i, i%12+1, i%5)),
		{Role: domain.RoleAssistant, Parts: []domain.Part{domain.TextPart("Let me query the orders."),
			call(id, "query_database", fmt.Sprintf(`{"sql":"SELECT sum(total) FROM sales.orders WHERE extract(month from created_at) = %d"}`, i%12+1))}},
		{Role: domain.RoleTool, Parts: []domain.Part{result(id, "query_database", fmt.Sprintf("1 row: sum=%d.%02d (%s)", 1000+i*37, i%100, strings.Repeat("x", i%40)))}},
		agents.AssistantMessage(fmt.Sprintf("Revenue in month %d was %d.%02d EUR.", i%12+1, 1000+i*37, i%100)),
	}
}

func history(n int) []agents.Message {
	var out []agents.Message
	for i := 0; len(out) < n; i++ {
		out = append(out, exchange(i)...)
	}
	return out[:n]
}

// sessionBlocks builds a representative block set.
func sessionBlocks(t testing.TB, c *Codecs, hist int) []Block {
	t.Helper()
	tbl := &tools.Table{Name: "result_1", Columns: []tools.Column{{Name: "month", Type: "text"}, {Name: "revenue", Type: "numeric"}},
		Rows: [][]any{{"2024-01", 1200.5}, {"2024-02", int64(1300)}, {"2024-03", nil}}, SQL: "SELECT month, revenue FROM monthly"}
	b := NewBuilder(c).
		Rules("You are a careful BI analyst. Answer with numbers and the SQL you used.").
		Tools(sqlTool, schemaTool).
		Datasets(ordersDataset, customersDataset).
		JoinHints(ordersJoin).
		Recipes(Recipe{Question: "monthly revenue", SQL: []string{"SELECT date_trunc('month', created_at), sum(total) FROM sales.orders GROUP BY 1"}, Successes: 3}).
		KBHits(KBHit{Title: "Revenue definition", Snippet: "Revenue excludes VAT and refunds.", Citation: domain.Citation{Source: "kb", DocumentID: "doc-7"}, Score: 0.82}).
		State(State{Page: "dashboard/revenue", Dataset: "sales.orders", Visible: []string{"chart: revenue by month"}}).
		QueryResult(tbl, 42*time.Millisecond).
		History(history(hist)...).
		Turn(TextTurn("And by region?"))
	blocks, err := b.Blocks()
	if err != nil {
		t.Fatal(err)
	}
	return blocks
}

// must panics on err: for constructors that fail only on corrupt embedded
// data.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func openAI(testing.TB) Renderer { return must(NewOpenAIRenderer("gpt-4.1")) }
