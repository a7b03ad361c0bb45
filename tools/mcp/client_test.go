package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/mcp"
)

type lookupIn struct {
	Customer string `json:"customer" jsonschema:"the customer's name"`
}

type lookupOut struct {
	Customer string `json:"customer"`
	Score    int    `json:"score"`
}

// externalServer is an MCP server of another vendor, in process.
func externalServer(t *testing.T) *sdk.ClientSession {
	t.Helper()
	srv := sdk.NewServer(&sdk.Implementation{Name: "crm", Version: "v2"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "lookup", Description: "Look up a customer's health score."},
		func(_ context.Context, _ *sdk.CallToolRequest, in lookupIn) (*sdk.CallToolResult, lookupOut, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Customer + " scores 87"}}},
				lookupOut{Customer: in.Customer, Score: 87}, nil
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return nil, nil, errors.New("crm is read-only today")
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "sleepy", Description: "Never answers in time."},
		func(ctx context.Context, _ *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			<-ctx.Done()
			return nil, nil, ctx.Err()
		})
	sdk.AddTool(srv, &sdk.Tool{Name: "untitled"},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "ok"}}}, nil, nil
		})
	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bichat"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

func TestClientTools(t *testing.T) {
	t.Parallel()
	cs := externalServer(t)
	ts, err := mcp.Tools(t.Context(), cs, mcp.ClientOptions{
		Prefix:      "crm_",
		Permission:  agents.PermRead,
		Permissions: map[string]agents.Permission{"fail": agents.PermWrite},
		Timeout:     200 * time.Millisecond,
		Exclude:     []string{"untitled"},
	})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]agents.Tool{}
	for _, tool := range ts {
		byName[tool.Spec().Name] = tool
	}
	if len(byName) != 3 || byName["crm_lookup"] == nil || byName["crm_fail"] == nil || byName["crm_sleepy"] == nil {
		t.Fatalf("adapted tools %v", byName)
	}
	spec := byName["crm_lookup"].Spec()
	var schema struct {
		Type       string `json:"type"`
		Required   []string
		Properties map[string]struct {
			Type        string `json:"type"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(spec.Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if spec.Description != "Look up a customer's health score." || spec.Permission != agents.PermRead || spec.Timeout != 200*time.Millisecond ||
		schema.Type != "object" || schema.Properties["customer"].Description != "the customer's name" || len(schema.Required) != 1 {
		t.Errorf("crm_lookup spec %+v, schema %s", spec, spec.Schema)
	}
	if p := byName["crm_fail"].Spec().Permission; p != agents.PermWrite {
		t.Errorf("crm_fail permission %s; want write", p)
	}

	res, err := byName["crm_lookup"].Call(t.Context(), json.RawMessage(`{"customer":"Initech"}`))
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := res.Payload.(map[string]any)
	if res.Summary != "Initech scores 87" || payload["score"] != float64(87) || payload["customer"] != "Initech" {
		t.Errorf("crm_lookup result %+v", res)
	}
	// Arguments are checked against the server's schema before the call.
	if _, err := byName["crm_lookup"].Call(t.Context(), json.RawMessage(`{"customer":5}`)); !errors.Is(err, agents.ErrInvalidArguments) {
		t.Errorf("bad arguments: %v", err)
	}
	if _, err := byName["crm_fail"].Call(t.Context(), json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), "crm is read-only today") {
		t.Errorf("crm_fail: %v", err)
	}
	start := time.Now()
	if _, err := byName["crm_sleepy"].Call(t.Context(), json.RawMessage(`{}`)); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("crm_sleepy: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("crm_sleepy took %s with a 200ms timeout", d)
	}

	// Without a description the tool gets one naming it and its server.
	all, err := mcp.Tools(t.Context(), cs, mcp.ClientOptions{Include: []string{"untitled"}})
	if err != nil || len(all) != 1 || !strings.Contains(all[0].Spec().Description, "untitled of MCP server crm") {
		t.Errorf("untitled: %v %v", all, err)
	}
	for _, opts := range []mcp.ClientOptions{
		{Include: []string{"lookup", "no_such_tool"}},
		{Permissions: map[string]agents.Permission{"no_such_tool": agents.PermWrite}},
		{Prefix: "bad prefix "},
	} {
		if _, err := mcp.Tools(t.Context(), cs, opts); err == nil {
			t.Errorf("Tools(%+v) succeeded", opts)
		}
	}
}

// An agent run calls an external MCP server's tool through the adapter.
func TestClientAgentRun(t *testing.T) {
	t.Parallel()
	cs := externalServer(t)
	ts, err := mcp.Tools(t.Context(), cs, mcp.ClientOptions{Prefix: "crm_", Include: []string{"lookup"}})
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{scripted.CallJSON("crm_lookup", map[string]any{"customer": "Initech"})}},
		{Text: "Initech is healthy."},
	}}
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: ts})
	if err != nil {
		t.Fatal(err)
	}
	var finished *agents.ToolCallFinished
	var answer string
	for ev, err := range ex.Run(t.Context(), agents.Input{TenantID: "acme", UserID: "ana", Message: agents.UserMessage("How is Initech?")}) {
		if err != nil {
			t.Fatal(err)
		}
		switch e := ev.(type) {
		case *agents.ToolCallFinished:
			finished = e
		case *agents.RunFinished:
			answer = e.Text
		}
	}
	if finished == nil || finished.Error != "" || finished.Summary != "Initech scores 87" || finished.Payload == nil {
		t.Fatalf("tool call %+v", finished)
	}
	if answer != "Initech is healthy." {
		t.Errorf("answer %q", answer)
	}
	reqs := model.Requests()
	if len(reqs) != 2 || !strings.Contains(toolResultsText(reqs[1]), "Initech scores 87") {
		t.Errorf("the model did not receive the tool's summary: %+v", reqs)
	}
}

// bichat's own server, adapted back into agent tools: an agent elsewhere
// queries the sample data through MCP, scoped to the connection's user.
func TestClientRoundTrip(t *testing.T) {
	t.Parallel()
	f := newFixture(t, nil)
	cs := f.connect(t, acme)
	ts, err := mcp.Tools(t.Context(), cs, mcp.ClientOptions{Prefix: "bi_", Include: []string{"query_database", "whoami"}})
	if err != nil {
		t.Fatal(err)
	}
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{
			scripted.CallJSON("bi_query_database", map[string]any{"sql": "SELECT count(*) AS n FROM customers"}),
			scripted.CallJSON("bi_whoami", map[string]any{}),
		}},
		{Text: "There are 200 customers."},
	}}
	ex, err := agents.NewExecutor(agents.Config{Model: model, Tools: ts})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	// The agent's own run is another tenant's: the data scope is the MCP
	// connection's, never what the calling agent claims.
	for ev, err := range ex.Run(t.Context(), agents.Input{TenantID: "other", UserID: "x", Message: agents.UserMessage("How many customers?")}) {
		if err != nil {
			t.Fatal(err)
		}
		if e, ok := ev.(*agents.ToolCallFinished); ok {
			got[e.Name] = e.Summary + e.Error
		}
	}
	if !strings.Contains(got["bi_query_database"], "| 200 |") || got["bi_whoami"] != "acme/ana" {
		t.Errorf("tool results %v", got)
	}
}

func toolResultsText(r agents.Request) string {
	var b strings.Builder
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			if p.ToolResult != nil {
				b.WriteString(p.ToolResult.Content)
			}
		}
	}
	return b.String()
}
