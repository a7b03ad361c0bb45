package hooks

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// logOne handles e with a JSON slog handler and returns the decoded record
// and the raw output.
func logOne(t *testing.T, opts SlogOptions, e Event) (map[string]any, string) {
	t.Helper()
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := NewSlogHandler(l, opts).Handle(t.Context(), e); err != nil {
		t.Fatalf("Handle: %v", err)
	}
	out := buf.String()
	if n := strings.Count(out, "\n"); n != 1 {
		t.Fatalf("%d records logged, want 1:\n%s", n, out)
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	return rec, out
}

func TestSlogHandler(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-customer-ssn-123-45-6789"
	ids := Meta{RunID: "run-1", TenantID: "tenant-1"}
	tests := []struct {
		name   string
		opts   SlogOptions
		event  Event
		level  string
		attrs  map[string]any // JSON numbers decode as float64
		absent []string       // keys that must not be present
		notIn  []string       // strings that must not appear in the output
	}{
		{
			name:   "sql query logs the size of the statement only",
			event:  &SQLQuery{Meta: ids, Tool: "query_database", Dialect: "postgres", SQL: "SELECT '" + secret + "'", Rows: 3},
			level:  "INFO",
			attrs:  map[string]any{"tool": "query_database", "sql_len": float64(len("SELECT '" + secret + "'")), "rows": 3.0},
			absent: []string{"sql"},
			notIn:  []string{secret},
		},
		{
			name:  "rejected sql is WARN",
			event: &SQLQuery{Tool: "query_database", SQL: "DELETE FROM t", Error: "rejected", Reason: "not a SELECT"},
			level: "WARN",
			attrs: map[string]any{"error": "rejected"},
			notIn: []string{"DELETE"},
		},
		{
			name:  "message save logs the size of the text only",
			event: &MessageSave{Meta: ids, Role: domain.RoleUser, Status: domain.StatusComplete, Text: secret, CostUSD: 0.25},
			level: "INFO",
			attrs: map[string]any{"text_len": float64(len(secret)), "cost_usd": 0.25},
			notIn: []string{secret},
		},
		{
			name:  "sandbox run with a limit not enforced is WARN",
			event: &SandboxRun{Outcome: "ok", Unenforced: []string{"cpu: no cgroup"}},
			level: "WARN",
			attrs: map[string]any{"outcome": "ok"},
		},
		{
			name:  "budget exceeded is WARN",
			event: &BudgetExceeded{Scope: BudgetSession, LimitUSD: 5, SpentUSD: 5.5},
			level: "WARN",
			attrs: map[string]any{"scope": "session", "limit_usd": 5.0, "spent_usd": 5.5},
		},
		{
			name:  "quota exceeded is WARN",
			event: &QuotaExceeded{Scope: "user", Limit: "requests_per_minute", RetryAfter: time.Second},
			level: "WARN",
			attrs: map[string]any{"scope": "user", "limit": "requests_per_minute", "retry_after": float64(time.Second)},
		},
		{
			name:  "decision",
			event: &Decision{Policy: "confirmation", Outcome: DecisionApproved, Tool: "apply_discount", Reason: secret},
			level: "INFO",
			attrs: map[string]any{"policy": "confirmation", "outcome": "approved", "tool": "apply_discount"},
			notIn: []string{secret},
		},
		{
			name:  "agent start",
			event: &AgentStart{Meta: ids, Agent: "analyst", Model: "gpt-test"},
			level: "INFO",
			attrs: map[string]any{"run_id": "run-1", "tenant_id": "tenant-1", "model": "gpt-test", "agent": "analyst", "resumed": false},
		},
		{
			name:  "agent finish",
			event: &AgentFinish{Meta: ids, Reason: "end_turn", Turns: 3, ToolCalls: 2, Usage: domain.Usage{TotalTokens: 99}, Duration: time.Second},
			level: "INFO",
			attrs: map[string]any{"reason": "end_turn", "turns": 3.0, "tool_calls": 2.0, "total_tokens": 99.0, "duration": float64(time.Second)},
		},
		{
			name:  "agent error is ERROR",
			event: &AgentError{Meta: ids, Code: "provider", Err: errors.New("upstream 502")},
			level: "ERROR",
			attrs: map[string]any{"code": "provider", "error": "upstream 502", "run_id": "run-1"},
		},
		{
			name:   "agent error without Err",
			event:  &AgentError{Code: "cancelled"},
			level:  "ERROR",
			attrs:  map[string]any{"code": "cancelled"},
			absent: []string{"error"},
		},
		{
			name:  "agent error stays ERROR with a lower configured level",
			opts:  SlogOptions{Level: slog.LevelDebug},
			event: &AgentError{Code: "x"},
			level: "ERROR",
		},
		{
			name:  "tool error is WARN",
			event: &ToolError{Meta: ids, Tool: "sql", CallID: "c1", Code: "timeout", Err: errors.New("deadline exceeded after 30s"), Stack: []byte(secret)},
			level: "WARN",
			attrs: map[string]any{"tool": "sql", "call_id": "c1", "code": "timeout", "error": "deadline exceeded after 30s"},
			notIn: []string{secret}, // the stack is never logged
		},
		{
			name:  "tool error stays WARN at debug level",
			opts:  SlogOptions{Level: slog.LevelDebug},
			event: &ToolError{Code: "panic"},
			level: "WARN",
		},
		{
			name:  "configured level above WARN wins for tool error",
			opts:  SlogOptions{Level: slog.LevelError},
			event: &ToolError{Code: "panic"},
			level: "ERROR",
		},
		{
			name:   "tool start logs the size of the arguments only",
			event:  &ToolStart{Meta: ids, Tool: "sql", CallID: "c2", Arguments: json.RawMessage(`{"query":"select * where ssn='` + secret + `'"}`)},
			level:  "INFO",
			attrs:  map[string]any{"tool": "sql", "call_id": "c2", "argument_bytes": float64(len(`{"query":"select * where ssn='` + secret + `'"}`))},
			absent: []string{"arguments"},
			notIn:  []string{secret, "select"},
		},
		{
			name:  "tool finish",
			event: &ToolFinish{Tool: "chart", CallID: "c3", SummaryBytes: 10, Truncated: true, Artifacts: 1},
			level: "INFO",
			attrs: map[string]any{"tool": "chart", "summary_bytes": 10.0, "truncated": true, "artifacts": 1.0},
		},
		{
			name:  "llm request",
			event: &LLMRequest{Provider: "p", Model: "m", Turn: 1, Attempt: 2, Messages: 5, Tools: 4},
			level: "INFO",
			attrs: map[string]any{"provider": "p", "model": "m", "turn": 1.0, "attempt": 2.0, "messages": 5.0, "tools": 4.0},
		},
		{
			name:   "llm response",
			event:  &LLMResponse{Provider: "p", Model: "m", Usage: domain.Usage{PromptTokens: 10, CompletionTokens: 5}, StopReason: "end_turn", CostUSD: 0.5},
			level:  "INFO",
			attrs:  map[string]any{"prompt_tokens": 10.0, "completion_tokens": 5.0, "stop_reason": "end_turn", "cost_usd": 0.5},
			absent: []string{"error"},
		},
		{
			name:  "failed llm response is WARN",
			event: &LLMResponse{Provider: "p", Err: errors.New("rate limited")},
			level: "WARN",
			attrs: map[string]any{"error": "rate limited"},
		},
		{
			name:  "debug level for ordinary events",
			opts:  SlogOptions{Level: slog.LevelDebug},
			event: &ContextCompile{Tokens: 100, Budget: 200},
			level: "DEBUG",
			attrs: map[string]any{"tokens": 100.0, "budget": 200.0},
		},
		{
			name:   "session titles are not logged",
			event:  &SessionCreate{Title: secret},
			level:  "INFO",
			attrs:  map[string]any{"title_len": float64(len(secret))},
			absent: []string{"title"},
			notIn:  []string{secret},
		},
		{
			name:  "session update",
			event: &SessionUpdate{Title: secret, Model: "m2"},
			level: "INFO",
			attrs: map[string]any{"title_len": float64(len(secret)), "model": "m2"},
			notIn: []string{secret},
		},
		{
			name:  "message save",
			event: &MessageSave{Role: "assistant", Status: "complete", Usage: domain.Usage{TotalTokens: 7}},
			level: "INFO",
			attrs: map[string]any{"role": "assistant", "status": "complete", "total_tokens": 7.0},
		},
		{
			name:  "interrupt",
			event: &Interrupt{Reason: "question", Tool: "ask", CallID: "c4"},
			level: "INFO",
			attrs: map[string]any{"reason": "question", "tool": "ask", "call_id": "c4"},
		},
		{
			name:  "session delete has only ids",
			event: &SessionDelete{Meta: Meta{SessionID: "s1"}},
			level: "INFO",
			attrs: map[string]any{"session_id": "s1"},
		},
		{
			name:  "custom event logs its ids",
			event: &customEvent{Meta: Meta{UserID: "u1", MessageID: "m1", ParentRunID: "p1"}, Payload: secret},
			level: "INFO",
			attrs: map[string]any{"user_id": "u1", "message_id": "m1", "parent_run_id": "p1"},
			notIn: []string{secret},
		},
		{
			name:   "empty ids are omitted",
			event:  &AgentStart{Model: "m"},
			level:  "INFO",
			attrs:  map[string]any{"model": "m"},
			absent: []string{"tenant_id", "user_id", "session_id", "message_id", "run_id", "parent_run_id", "agent"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec, out := logOne(t, tt.opts, tt.event)
			if got := rec[slog.MessageKey]; got != string(tt.event.Kind()) {
				t.Errorf("msg = %v, want %q", got, tt.event.Kind())
			}
			if got := rec[slog.LevelKey]; got != tt.level {
				t.Errorf("level = %v, want %s", got, tt.level)
			}
			for k, want := range tt.attrs {
				if got, ok := rec[k]; !ok || got != want {
					t.Errorf("%s = %#v (present %v), want %#v\n%s", k, got, ok, want, out)
				}
			}
			for _, k := range tt.absent {
				if v, ok := rec[k]; ok {
					t.Errorf("%s present (%v), want it omitted\n%s", k, v, out)
				}
			}
			for _, s := range tt.notIn {
				if strings.Contains(out, s) {
					t.Errorf("output contains %q:\n%s", s, out)
				}
			}
		})
	}
}

func TestSlogHandlerOnBus(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	b := New(Options{OnError: failOnError(t)})
	defer b.Close()
	mustSubscribe(t, b, NewSlogHandler(slog.New(slog.NewJSONHandler(&buf, nil)), SlogOptions{}))
	b.Publish(t.Context(), &AgentStart{Meta: Meta{RunID: "r"}, Model: "m"})
	b.Publish(t.Context(), &ToolError{Code: "error"})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"msg":"agent.start"`) || !strings.Contains(lines[1], `"level":"WARN"`) {
		t.Errorf("bus output:\n%s", buf.String())
	}
}

func TestSlogHandlerRespectsLoggerLevel(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	h := NewSlogHandler(l, SlogOptions{})
	h.Handle(t.Context(), &ToolFinish{})
	if buf.Len() != 0 {
		t.Errorf("INFO record written through a WARN logger: %s", buf.String())
	}
	h.Handle(t.Context(), &ToolError{})
	if !strings.Contains(buf.String(), "tool.error") {
		t.Errorf("WARN record missing: %q", buf.String())
	}
}
