package mcp_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/quota"
	"github.com/bichat-go/bichat/tools/catalog"
	"github.com/bichat-go/bichat/tools/mcp"
)

func toolNames(t *testing.T, cs *sdk.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// The data tools over the sample database, as an MCP client sees them.
func TestServerDataTools(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	cs := f.connect(t, acme)

	names := toolNames(t, cs)
	for _, want := range []string{"list_datasets", "get_dataset_details", "query_database", "describe_table",
		"draw_chart", "export_excel", "kb_search"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}
	if slices.Contains(names, "delete_order") {
		t.Errorf("the destructive tool is listed in WriteHide mode: %v", names)
	}

	// list_datasets: scoped by the tenant the server attached.
	res, text := call(t, cs, "list_datasets", map[string]any{})
	if res.IsError {
		t.Fatalf("list_datasets failed: %s", text)
	}
	var list catalog.ListOutput
	structured(t, res, &list)
	if list.Count != 5 || !strings.Contains(text, "- orders") {
		t.Errorf("list_datasets: count %d, text %q", list.Count, text)
	}

	// query_database: markdown summary as text, every row as structured content.
	res, text = call(t, cs, "query_database", map[string]any{
		"sql": "SELECT category, count(*) AS products FROM products GROUP BY category ORDER BY category"})
	if res.IsError {
		t.Fatalf("query_database failed: %s", text)
	}
	if !strings.Contains(text, "| Books | 8 |") {
		t.Errorf("query_database text lacks the Books row:\n%s", text)
	}
	var q struct {
		Rows  int `json:"rows"`
		Table struct {
			Name string  `json:"name"`
			Rows [][]any `json:"rows"`
		} `json:"table"`
	}
	structured(t, res, &q)
	if q.Rows != 5 || q.Table.Name != "result_1" || len(q.Table.Rows) != 5 || q.Table.Rows[0][0] != "Books" {
		t.Errorf("query_database structured content: %+v", q)
	}
	if res.Meta["bichat/artifacts"] == nil {
		t.Errorf("query_database result carries no artifacts in _meta: %v", res.Meta)
	}

	// The result is kept for the session: draw_chart and export_excel use it by name.
	res, text = call(t, cs, "draw_chart", map[string]any{"type": "bar", "data": map[string]any{"ref": "result_1"},
		"x": "category", "y": "products"})
	if res.IsError || !strings.Contains(text, "chart_1") {
		t.Errorf("draw_chart on result_1: error %v, %s", res.IsError, text)
	}
	res, text = call(t, cs, "export_excel", map[string]any{"title": "Products",
		"sheets": []any{map[string]any{"data": map[string]any{"ref": "result_1"}}}})
	if res.IsError || !strings.Contains(text, ".xlsx") {
		t.Errorf("export_excel on result_1: error %v, %s", res.IsError, text)
	}

	res, text = call(t, cs, "describe_table", map[string]any{"datasets": []string{"orders"}})
	if res.IsError || !strings.Contains(text, "customer_id") {
		t.Errorf("describe_table: error %v, %s", res.IsError, text)
	}
	res, text = call(t, cs, "get_dataset_details", map[string]any{"names": []string{"regions"}})
	if res.IsError || !strings.Contains(text, "regions") {
		t.Errorf("get_dataset_details: error %v, %s", res.IsError, text)
	}
	res, text = call(t, cs, "kb_search", map[string]any{"query": "revenue"})
	if res.IsError || !strings.Contains(text, "Revenue definition") {
		t.Errorf("kb_search: error %v, %s", res.IsError, text)
	}
}

// Every call carries a CallInfo for the connection's principal, with the
// host's data-scoping attributes and a session id stable per connection.
func TestServerCallInfo(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	who := func(cs *sdk.ClientSession) whoamiOut {
		res, text := call(t, cs, "whoami", nil)
		if res.IsError {
			t.Fatalf("whoami: %s", text)
		}
		var w whoamiOut
		structured(t, res, &w)
		return w
	}
	a := f.connect(t, acme)
	w1, w2 := who(a), who(a)
	if w1.Tenant != "acme" || w1.User != "ana" || w1.Tool != "whoami" {
		t.Errorf("CallInfo %+v", w1)
	}
	if w1.Attributes["tenant_id"] != "acme" || w1.Attributes["user_id"] != "ana" || w1.Attributes["roles"] != "contributor" {
		t.Errorf("attributes %v", w1.Attributes)
	}
	if w1.Session == "" || w1.Session != w2.Session || w1.Run != w1.Session {
		t.Errorf("session ids %q and %q (run %q): want one per connection", w1.Session, w2.Session, w1.Run)
	}
	if w1.Call == w2.Call {
		t.Errorf("two calls share the call id %q", w1.Call)
	}
	w3 := who(f.connect(t, globex))
	if w3.Tenant != "globex" || w3.User != "gil" || w3.Session == w1.Session {
		t.Errorf("second connection: %+v (first session %s)", w3, w1.Session)
	}
}

func TestServerTenantIsolation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	g := f.connect(t, globex)
	res, text := call(t, g, "list_datasets", nil)
	if res.IsError || !strings.Contains(text, "globex_payroll") || strings.Contains(text, "orders") {
		t.Errorf("globex list_datasets: %s", text)
	}
	a := f.connect(t, acme)
	_, text = call(t, a, "list_datasets", nil)
	if strings.Contains(text, "globex_payroll") {
		t.Errorf("acme sees globex's dataset: %s", text)
	}
	_, text = call(t, a, "get_dataset_details", map[string]any{"names": []string{"globex_payroll"}})
	if strings.Contains(text, "salary") {
		t.Errorf("acme reads globex's dataset definition: %s", text)
	}
}

func TestServerResources(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	a := f.connect(t, acme)
	var uris []string
	for r, err := range a.Resources(t.Context(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, mcp.DatasetURI("orders")) || slices.Contains(uris, mcp.DatasetURI("globex_payroll")) {
		t.Errorf("acme resources %v", uris)
	}
	rr, err := a.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: mcp.DatasetURI("orders")})
	if err != nil {
		t.Fatal(err)
	}
	if len(rr.Contents) != 1 || rr.Contents[0].MIMEType != mcp.DatasetMIMEType || !strings.Contains(rr.Contents[0].Text, "customer_id") {
		t.Errorf("orders resource: %+v", rr.Contents)
	}
	// Another tenant's dataset is not found, exactly like a missing one.
	for _, name := range []string{"globex_payroll", "no_such_table"} {
		if _, err := a.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: mcp.DatasetURI(name)}); err == nil {
			t.Errorf("acme read %s", name)
		}
	}
	g := f.connect(t, globex)
	rr, err = g.ReadResource(t.Context(), &sdk.ReadResourceParams{URI: mcp.DatasetURI("globex_payroll")})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "salary") {
		t.Errorf("globex reads its dataset: %v", err)
	}
}

func TestServerToolErrors(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	cs := f.connect(t, acme)
	for _, tc := range []struct {
		tool string
		args any
		want string
	}{
		{"query_database", map[string]any{}, "invalid arguments for query_database"},
		{"query_database", map[string]any{"sql": 42}, "/sql"},
		{"query_database", []int{1}, "must be a JSON object"},
		{"query_database", map[string]any{"sql": "SELECT nope FROM orders"}, "nope"},
		{"query_database", map[string]any{"sql": "DELETE FROM orders"}, "query_database failed"},
		{"slow", nil, "slow did not finish within 100ms"},
		{"boom", nil, "boom failed with an internal error"},
	} {
		res, text := call(t, cs, tc.tool, tc.args)
		if !res.IsError || !strings.Contains(text, tc.want) {
			t.Errorf("%s %v: error %v, %q; want an error containing %q", tc.tool, tc.args, res.IsError, text, tc.want)
		}
	}
	// The orders table is still whole: the DELETE never ran.
	_, text := call(t, cs, "query_database", map[string]any{"sql": "SELECT count(*) AS n FROM orders"})
	if !strings.Contains(text, "| 3000 |") {
		t.Errorf("orders count after the refused DELETE: %s", text)
	}
	// Text content is capped (MaxTextBytes 2000 in the fixture) with a note.
	res, text := call(t, cs, "chatty", nil)
	if res.IsError || len(text) > 2100 || !strings.HasSuffix(text, "[truncated: 3000 of 5000 bytes omitted]") {
		t.Errorf("chatty: %d bytes, error %v, tail %q", len(text), res.IsError, text[max(0, len(text)-120):])
	}
}

func TestServerWriteHidden(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	cs := f.connect(t, acme)
	if slices.Contains(f.server.ToolNames(), "delete_order") {
		t.Errorf("ToolNames %v include the hidden tool", f.server.ToolNames())
	}
	res, err := cs.CallTool(t.Context(), &sdk.CallToolParams{Name: "delete_order", Arguments: map[string]any{"id": 1}})
	if err == nil && !res.IsError {
		t.Errorf("hidden delete_order ran: %+v", res)
	}
	if n := f.deletes.Load(); n != 0 {
		t.Errorf("delete_order ran %d times", n)
	}
}

func TestServerWriteConfirm(t *testing.T) {
	t.Parallel()
	var approvals []mcp.Approval
	approve := true
	var approveErr error
	f := newFixture(t, func(o *mcp.ServerOptions) {
		o.WriteTools = mcp.WriteConfirm
		o.Approve = func(_ context.Context, a mcp.Approval) (bool, error) {
			approvals = append(approvals, a)
			return approve, approveErr
		}
	})
	cs := f.connect(t, acme)
	if !slices.Contains(toolNames(t, cs), "delete_order") {
		t.Fatal("delete_order is not listed in WriteConfirm mode")
	}
	token := func(args map[string]any) string {
		t.Helper()
		res, text := call(t, cs, "delete_order", args)
		var cr mcp.ConfirmationRequired
		structured(t, res, &cr)
		if !res.IsError || !cr.ConfirmationRequired || cr.Token == "" || !strings.Contains(text, "NOT run") {
			t.Fatalf("first call: error %v, %s", res.IsError, text)
		}
		return cr.Token
	}
	tok := token(map[string]any{"id": 7})
	if n := f.deletes.Load(); n != 0 || len(approvals) != 0 {
		t.Fatalf("the first call ran the tool (%d) or asked for approval (%d)", n, len(approvals))
	}
	// Same arguments, in any key order, with the token: approved and run once.
	res, text := call(t, cs, "delete_order", map[string]any{mcp.ConfirmationTokenArgument: tok, "id": 7})
	if res.IsError || text != "order 7 deleted" || f.deletes.Load() != 1 {
		t.Fatalf("confirmed call: error %v, %q, runs %d", res.IsError, text, f.deletes.Load())
	}
	if len(approvals) != 1 || approvals[0].Tool != "delete_order" || approvals[0].Principal.UserID != "ana" ||
		string(approvals[0].Arguments) != `{"id":7}` || approvals[0].Token != tok {
		t.Errorf("approval request %+v", approvals)
	}
	refused := func(args map[string]any, want string) {
		t.Helper()
		before := f.deletes.Load()
		res, text := call(t, cs, "delete_order", args)
		if !res.IsError || !strings.Contains(text, want) || f.deletes.Load() != before {
			t.Errorf("%v: error %v, %q, runs %d→%d; want a refusal containing %q", args, res.IsError, text, before, f.deletes.Load(), want)
		}
	}
	refused(map[string]any{"id": 7, mcp.ConfirmationTokenArgument: tok}, "already used")
	refused(map[string]any{"id": 8, mcp.ConfirmationTokenArgument: token(map[string]any{"id": 9})}, "not issued for this")
	refused(map[string]any{"id": 7, mcp.ConfirmationTokenArgument: tok + "x"}, "signature")
	refused(map[string]any{"id": 7, mcp.ConfirmationTokenArgument: "garbage"}, "malformed")

	// Another user of the same tenant cannot use ana's token.
	other := token(map[string]any{"id": 3})
	bo := f.connect(t, acmeBo)
	res, text = call(t, bo, "delete_order", map[string]any{"id": 3, mcp.ConfirmationTokenArgument: other})
	if !res.IsError || !strings.Contains(text, "not issued for this") {
		t.Errorf("bo with ana's token: %s", text)
	}

	// A viewer may not approve changes: no token is issued.
	res, text = call(t, f.connect(t, viewer), "delete_order", map[string]any{"id": 3})
	if !res.IsError || res.StructuredContent != nil || !strings.Contains(text, "no write permission") {
		t.Errorf("viewer: %s", text)
	}

	// The host's Approve has the last word.
	approve = false
	refused(map[string]any{"id": 5, mcp.ConfirmationTokenArgument: token(map[string]any{"id": 5})}, "did not approve")
	approve, approveErr = true, errors.New("approval service down")
	refused(map[string]any{"id": 5, mcp.ConfirmationTokenArgument: token(map[string]any{"id": 5})}, "approval service down")
	if f.deletes.Load() != 1 {
		t.Errorf("delete_order ran %d times; want 1", f.deletes.Load())
	}
}

func TestNewServerErrors(t *testing.T) {
	t.Parallel()
	read := agents.MustTool("r", "Read.", func(context.Context, struct{}) (string, error) { return "", nil })
	write := agents.MustTool("w", "Write.", func(context.Context, struct{}) (string, error) { return "", nil },
		agents.WithPermission(agents.PermWrite))
	for _, tc := range []struct {
		name string
		opts mcp.ServerOptions
		want string
	}{
		{"no tools", mcp.ServerOptions{}, "Tools is empty"},
		{"duplicate", mcp.ServerOptions{Tools: []agents.Tool{read, read}}, "two tools are named r"},
		{"confirm without approve", mcp.ServerOptions{Tools: []agents.Tool{write}, WriteTools: mcp.WriteConfirm}, "Approve is nil"},
		{"only hidden tools", mcp.ServerOptions{Tools: []agents.Tool{write}}, "nothing would be exposed"},
		{"short key", mcp.ServerOptions{Tools: []agents.Tool{read}, ConfirmationKey: []byte("short")}, "at least 16 bytes"},
		{"nil tool", mcp.ServerOptions{Tools: []agents.Tool{nil}}, "Tools[0] is nil"},
	} {
		if _, err := mcp.NewServer(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v; want %q", tc.name, err, tc.want)
		}
	}
}

// The service's quota applies to MCP tool calls: over the user's request
// limit a call is refused with the limit and the wait, and runs nothing;
// another user of the same tenant still gets through.
func TestServerQuota(t *testing.T) {
	t.Parallel()
	lim, err := quota.NewMemory(quota.Policy{User: quota.Limits{RequestsPerMinute: 2}}, quota.MemoryOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *mcp.ServerOptions) { o.Quota = lim })
	cs := f.connect(t, acme)
	for i := range 2 {
		if res, text := call(t, cs, "query_database", map[string]any{"sql": "SELECT 1 AS one"}); res.IsError {
			t.Fatalf("call %d within the limit: %s", i+1, text)
		}
	}
	res, text := call(t, cs, "query_database", map[string]any{"sql": "SELECT 1 AS one"})
	if !res.IsError || !strings.Contains(text, "query_database was not run") || !strings.Contains(text, "try again in") {
		t.Errorf("third call over 2 requests per minute: error %v, %q", res.IsError, text)
	}
	other := acme
	other.UserID = "bo"
	if res, text := call(t, f.connect(t, other), "query_database", map[string]any{"sql": "SELECT 1 AS one"}); res.IsError {
		t.Errorf("another user is limited by ana's bucket: %s", text)
	}
}
