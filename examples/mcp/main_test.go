package main

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdio builds the program, starts it as a stdio subprocess with the
// SDK's CommandTransport, lists its tools and resources and queries the
// sample data.
func TestStdio(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "bichat-mcp")
	build := exec.Command("go", "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-tenant", "acme", "-user", "ana")
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "example-test", Version: "v1"}, nil).
		Connect(ctx, &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	defer cs.Close()

	if info := cs.InitializeResult().ServerInfo; info.Name != "bichat-retail" {
		t.Errorf("server %+v", info)
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	for _, want := range []string{"list_datasets", "get_dataset_details", "query_database", "describe_table",
		"draw_chart", "export_excel", "kb_search"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %v lack %s", names, want)
		}
	}

	// Completed orders per region: five rows, one per region.
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "query_database", Arguments: map[string]any{
		"sql": `SELECT r.name AS region, COUNT(DISTINCT o.id) AS orders
FROM orders o JOIN customers c ON c.id = o.customer_id JOIN regions r ON r.id = c.region_id
WHERE o.status = 'completed' GROUP BY r.name ORDER BY r.name`}})
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*sdk.TextContent).Text
	if res.IsError || !strings.Contains(text, "| region | orders |\n| --- | --- |\n| Central | 592 |\n| East | 447 |\n"+
		"| North | 291 |\n| South | 498 |\n| West | 536 |") {
		t.Errorf("query_database: error %v\n%s", res.IsError, text)
	}
	table, _ := res.StructuredContent.(map[string]any)["table"].(map[string]any)
	if rows, _ := table["rows"].([]any); len(rows) != 5 || table["name"] != "result_1" {
		t.Errorf("structured content: %v", res.StructuredContent)
	}

	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "draw_chart", Arguments: map[string]any{
		"type": "bar", "data": map[string]any{"ref": "result_1"}, "x": "region", "y": "orders"}})
	if err != nil || res.IsError {
		t.Errorf("draw_chart: %v %+v", err, res)
	}
	res, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "kb_search", Arguments: map[string]any{"query": "revenue"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "completed") {
		t.Errorf("kb_search: %v %+v", err, res)
	}
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: "bichat://datasets/orders"})
	if err != nil || !strings.Contains(rr.Contents[0].Text, "customer_id") {
		t.Errorf("orders resource: %v %+v", err, rr)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if strings.Contains(stderr.String(), "ERROR") {
		t.Errorf("server logged errors:\n%s", stderr.String())
	}
}

// TestHTTP serves the program's streamable HTTP handler (run with -http)
// and checks that the bearer token is required.
func TestHTTP(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	const token = "0123456789abcdef-test"
	go func() {
		done <- run(ctx, options{tenant: "acme", user: "ana", httpAddr: addr, token: token}, os.Stderr)
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	url := "http://" + addr
	connect := func(tok string) (*sdk.ClientSession, error) {
		hc := &http.Client{Transport: bearer{tok}}
		return sdk.NewClient(&sdk.Implementation{Name: "t"}, nil).Connect(ctx,
			&sdk.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	}
	var cs *sdk.ClientSession
	for deadline := time.Now().Add(30 * time.Second); ; {
		cs, err = connect(token)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // the listener is not up yet
	}
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "list_datasets", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*sdk.TextContent).Text, "order_items") {
		t.Errorf("list_datasets over HTTP: %v %+v", err, res)
	}
	if _, err := connect("wrong-token"); err == nil {
		t.Error("a client with the wrong token connected")
	}
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

func TestRunRefusesBadFlags(t *testing.T) {
	t.Parallel()
	for _, o := range []options{
		{tenant: "", user: "ana"},
		{tenant: "acme", user: "ana", httpAddr: "127.0.0.1:0", token: "short"},
	} {
		if err := run(t.Context(), o, os.Stderr); err == nil || errors.Is(err, http.ErrServerClosed) {
			t.Errorf("run(%+v) = %v; want an error", o, err)
		}
	}
}
