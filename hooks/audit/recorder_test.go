package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/hooks/audit"
)

// TestHandleEvents publishes bichat's events on a real bus and checks the
// entries the Recorder made of them.
func TestHandleEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sink := audit.NewMemory()
	rec, err := audit.New(sink, audit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var handlerErrs []error
	var mu sync.Mutex
	bus := hooks.New(hooks.Options{OnError: func(he *hooks.HandlerError) { mu.Lock(); handlerErrs = append(handlerErrs, he); mu.Unlock() }})
	defer bus.Close()
	if _, err := bus.Subscribe(rec); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.Local)
	m := hooks.Meta{Time: at, TenantID: "acme", UserID: "ann", SessionID: "s1", MessageID: "m1", RunID: "r1"}
	events := []struct {
		ev       hooks.Event
		typ      string // "" when not recorded
		wantData string
	}{
		{&hooks.MessageSave{Meta: m, Role: domain.RoleUser, Status: domain.StatusComplete, Text: "Revenue by month?"}, audit.TypeQuestion, `{"text":"Revenue by month?"}`},
		{&hooks.AgentStart{Meta: m, Model: "gpt"}, "", ""},
		{&hooks.LLMRequest{Meta: m, Model: "gpt"}, "", ""},
		{&hooks.LLMResponse{Meta: m, Provider: "openai", Model: "gpt-5", Turn: 1, Attempt: 2, Usage: domain.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120},
			StopReason: "tool_use", ToolCalls: 1, CostUSD: 0.0025, Err: errors.New("stream reset")}, audit.TypeModelCall,
			`{"attempt":2,"cost_usd":0.0025,"error":"stream reset","model":"gpt-5","provider":"openai","stop_reason":"tool_use","tool_calls":1,"turn":1,"usage":{"cached_tokens":0,"completion_tokens":20,"prompt_tokens":100,"reasoning_tokens":0,"total_tokens":120}}`},
		{&hooks.ToolStart{Meta: m, CallID: "c1", Tool: "sql_query", Arguments: json.RawMessage(`{ "query": "SELECT 1", "limit": 10 }`)}, audit.TypeToolCall,
			`{"arguments":{"limit":10,"query":"SELECT 1"},"call_id":"c1","tool":"sql_query"}`},
		{&hooks.ToolStart{Meta: m, CallID: "c2", Tool: "broken", Arguments: json.RawMessage(`{not json`)}, audit.TypeToolCall,
			`{"arguments":"{not json","call_id":"c2","tool":"broken"}`},
		{&hooks.ToolFinish{Meta: m, Tool: "sql_query"}, "", ""},
		{&hooks.SQLQuery{Meta: m, CallID: "c1", Tool: "sql_query", Dialect: "postgres", SQL: "SELECT 1", Rows: 1}, audit.TypeSQL,
			`{"call_id":"c1","dialect":"postgres","rows":1,"sql":"SELECT 1","tool":"sql_query","truncated":false}`},
		{&hooks.SQLQuery{Meta: m, CallID: "c3", Tool: "sql_query", Dialect: "postgres", SQL: "DELETE FROM t", Error: "rejected", Reason: "only SELECT is allowed"}, audit.TypeDecision,
			`{"call_id":"c3","outcome":"refused","policy":"sql_read_only","reason":"only SELECT is allowed","sql":"DELETE FROM t","tool":"sql_query"}`},
		{&hooks.Interrupt{Meta: m, Reason: "confirmation", Tool: "send_email", CallID: "c4"}, audit.TypeInterrupt, `{"call_id":"c4","reason":"confirmation","tool":"send_email"}`},
		{&hooks.Decision{Meta: m, Policy: "confirmation", Outcome: hooks.DecisionDenied, Tool: "send_email", CallID: "c4", Reason: "not now"}, audit.TypeDecision,
			`{"call_id":"c4","outcome":"denied","policy":"confirmation","reason":"not now","tool":"send_email"}`},
		{&hooks.ArtifactSave{Meta: m, CallID: "c5", Tool: "chart", ArtifactID: "a1", Name: "chart.png", MediaType: "image/png", SHA256: "ab12", Size: 1 << 40}, audit.TypeArtifact,
			`{"artifact_id":"a1","call_id":"c5","media_type":"image/png","name":"chart.png","sha256":"ab12","size":1099511627776,"tool":"chart"}`},
		{&hooks.BudgetExceeded{Meta: m, Scope: hooks.BudgetSession, LimitUSD: 1, SpentUSD: 1.25}, audit.TypeBudgetExceeded, `{"limit_usd":1,"scope":"session","spent_usd":1.25}`},
		{&hooks.QuotaExceeded{Meta: m, Scope: "tenant", Limit: "requests_per_minute", RetryAfter: 1500 * time.Millisecond}, audit.TypeQuotaExceeded,
			`{"limit":"requests_per_minute","retry_after_ms":1500,"scope":"tenant"}`},
		{&hooks.MessageSave{Meta: m, Role: domain.RoleAssistant, Status: domain.StatusGenerating}, "", ""},
		{&hooks.MessageSave{Meta: m, Role: domain.RoleAssistant, Status: domain.StatusComplete, Text: "Up 4%.", CostUSD: 0.01, Usage: domain.Usage{TotalTokens: 7}}, audit.TypeAnswer,
			`{"cost_usd":0.01,"text":"Up 4%.","usage":{"cached_tokens":0,"completion_tokens":0,"prompt_tokens":0,"reasoning_tokens":0,"total_tokens":7}}`},
		{&hooks.MessageSave{Meta: m, Role: domain.RoleAssistant, Status: domain.StatusFailed, ErrorCode: "budget_exceeded", CostUSD: 0.02}, audit.TypeFailure,
			`{"cost_usd":0.02,"error_code":"budget_exceeded"}`},
		{&hooks.AgentError{Meta: m, Agent: "analyst", Code: "provider", Err: errors.New("503")}, audit.TypeRunError, `{"agent":"analyst","code":"provider","error":"503"}`},
		{&hooks.SessionCreate{Meta: m, Title: "t"}, "", ""},
	}
	var want []string
	for _, e := range events {
		bus.Publish(ctx, e.ev)
		if e.typ != "" {
			want = append(want, e.typ+" "+e.wantData)
		}
	}
	if len(handlerErrs) > 0 {
		t.Fatalf("handler errors: %v", handlerErrs)
	}
	var got []string
	for e, err := range sink.Entries(ctx, "acme") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Type+" "+string(e.Data))
		if e.UserID != "ann" || e.SessionID != "s1" || e.MessageID != "m1" || e.RunID != "r1" ||
			!e.Time.Equal(at.Truncate(time.Microsecond)) || e.Time.Location() != time.UTC {
			t.Errorf("entry %d: header %+v", e.Seq, e)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatal(err)
	}
	// Kinds lists exactly the kinds that produce entries.
	kinds := map[hooks.Kind]bool{}
	for _, k := range audit.Kinds() {
		kinds[k] = true
	}
	for _, e := range events {
		if (e.typ != "") && !kinds[e.ev.Kind()] {
			t.Errorf("Kinds misses %s", e.ev.Kind())
		}
		if e.ev.Kind() != hooks.KindMessageSave && e.typ == "" && kinds[e.ev.Kind()] {
			t.Errorf("Kinds lists %s, which is not recorded", e.ev.Kind())
		}
	}
}

// TestRedact checks that Redact reaches every free-text value before
// hashing, keeps arguments valid JSON, and that nothing of the secret is
// stored.
func TestRedact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	secret := regexp.MustCompile(`sk-[a-z0-9]+`)
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	rec, err := audit.New(sink, audit.Options{Redact: func(s string) string { return secret.ReplaceAllString(s, "[secret]") }})
	if err != nil {
		t.Fatal(err)
	}
	m := hooks.Meta{TenantID: "acme"}
	for _, ev := range []hooks.Event{
		&hooks.MessageSave{Meta: m, Role: domain.RoleUser, Text: "my key is sk-abc123"},
		&hooks.ToolStart{Meta: m, Tool: "http", Arguments: json.RawMessage(`{"headers":{"auth":"Bearer sk-abc123"},"list":["sk-zz9",1.50],"n":12345678901234567890}`)},
		&hooks.SQLQuery{Meta: m, Tool: "sql", SQL: "SELECT 'sk-abc123'"},
		&hooks.SQLQuery{Meta: m, Tool: "sql", SQL: "DROP TABLE t", Error: "rejected", Reason: "statement sk-abc123 refused"},
		&hooks.Decision{Meta: m, Policy: "confirmation", Outcome: hooks.DecisionDenied, Reason: "because sk-abc123"},
		&hooks.MessageSave{Meta: m, Role: domain.RoleAssistant, Status: domain.StatusComplete, Text: "your key sk-abc123 works"},
		&hooks.LLMResponse{Meta: m, Err: errors.New("401 for key sk-abc123")},
	} {
		if err := rec.Handle(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	var all []string
	for e, err := range sink.Entries(ctx, "acme") {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, string(e.Data))
		if !json.Valid(e.Data) {
			t.Fatalf("data not valid JSON: %s", e.Data)
		}
		if e.Type == audit.TypeToolCall {
			want := `{"arguments":{"headers":{"auth":"Bearer [secret]"},"list":["[secret]",1.5],"n":12345678901234567890},"call_id":"","tool":"http"}`
			if string(e.Data) != want {
				t.Fatalf("arguments\n%s\nwant\n%s", e.Data, want)
			}
		}
	}
	joined := strings.Join(all, "\n")
	if strings.Contains(joined, "sk-") || strings.Count(joined, "[secret]") != 8 {
		t.Fatalf("redaction missed something:\n%s", joined)
	}
	// The hashes cover the redacted text: the chain verifies as stored.
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatal(err)
	}
}

func TestRecordInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if _, err := audit.New(nil, audit.Options{}); err == nil {
		t.Error("nil sink accepted")
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 6789, time.UTC)
	rec, _ := audit.New(audit.NewMemory(), audit.Options{Now: func() time.Time { return now }})
	for _, c := range []struct {
		name   string
		tenant string
		e      audit.Entry
		errHas string
	}{
		{"no type", "acme", audit.Entry{}, "type is empty"},
		{"data not JSON", "acme", audit.Entry{Type: "x", Data: json.RawMessage(`{nope`)}, "not valid JSON"},
		{"data not an object", "acme", audit.Entry{Type: "x", Data: json.RawMessage(`[1]`)}, "not a JSON object"},
		{"tenant not UTF-8", "ac\xffme", audit.Entry{Type: "x"}, "tenant id is not valid UTF-8"},
		{"user with NUL", "acme", audit.Entry{Type: "x", UserID: "a\x00b"}, "user id contains a NUL"},
		{"year 10000", "acme", audit.Entry{Type: "x", Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, "outside years"},
	} {
		if _, err := rec.Record(ctx, c.tenant, c.e); err == nil || !strings.Contains(err.Error(), c.errHas) || !strings.HasPrefix(err.Error(), "audit: record") {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.errHas)
		}
	}
	// Fields Record sets are overwritten; the time defaults to Now.
	e, err := rec.Record(ctx, "acme", audit.Entry{Type: "x", TenantID: "other", Seq: 99, Prev: "p", Hash: "h"})
	if err != nil {
		t.Fatal(err)
	}
	if e.TenantID != "acme" || e.Seq != 1 || e.Prev != audit.ZeroHash || !e.Time.Equal(now.Truncate(time.Microsecond)) || string(e.Data) != "{}" {
		t.Fatalf("recorded %+v", e)
	}
	if h, _ := e.ComputeHash(); h != e.Hash {
		t.Fatalf("hash %s, recomputed %s", e.Hash, h)
	}
	// A cancelled context stops Record before it appends.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := rec.Record(cctx, "acme", audit.Entry{Type: "x"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
