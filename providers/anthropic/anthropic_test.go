package anthropic_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/anthropic"
	"github.com/bichat-go/bichat/providers/providertest"
)

func TestRequestShape(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.AnthropicStream(llmfake.Turn{Text: []string{"ok"}}))
	cfg := providertest.DefaultConfig()
	m, err := anthropic.New(anthropic.Config{Model: "claude-test", APIKey: cfg.APIKey, BaseURL: srv.URL + "/",
		Beta: []string{"a-1", "b-2"}, CacheTTL: "1h", Info: agents.ModelInfo{MaxOutputTokens: 32000}})
	if err != nil {
		t.Fatal(err)
	}
	req := &agents.Request{
		System: "STABLE PREFIX|dynamic",
		Messages: []agents.Message{
			agents.UserMessage("first"),
			{Role: domain.RoleAssistant, Parts: []domain.Part{domain.TextPart("calling"), {Type: domain.PartToolCall,
				ToolCall: &domain.ToolCall{ID: "toolu_1", Name: "run_sql", Arguments: json.RawMessage(`{"sql":"SELECT 1"}`)}}}},
			{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult,
				ToolResult: &domain.ToolResult{CallID: "toolu_1", Name: "run_sql", Content: "1 row"}}}},
			agents.UserMessage("and now?"),
		},
		Tools: []agents.ToolSpec{{Name: "run_sql", Description: "Run SQL",
			Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}`)}},
		Cache: agents.CacheHints{SystemPrefix: len("STABLE PREFIX|"), Messages: []int{2}},
	}
	resp, err := agents.Generate(context.Background(), m, req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Message.Text() != "ok" {
		t.Errorf("text = %q", resp.Message.Text())
	}
	r := srv.Request(0)
	if r.Method != "POST" || r.Path != "/v1/messages" {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	for h, want := range map[string]string{"X-Api-Key": cfg.APIKey, "Anthropic-Version": "2023-06-01",
		"Anthropic-Beta": "a-1,b-2", "Content-Type": "application/json"} {
		if got := r.Header.Get(h); got != want {
			t.Errorf("header %s = %q, want %q", h, got, want)
		}
	}
	if r.Header.Get("Authorization") != "" {
		t.Error("an Authorization header was sent")
	}
	var body llmfake.AnthropicRequest
	if err := r.Decode(&body); err != nil {
		t.Fatal(err)
	}
	if !body.Stream || body.Model != "claude-test" || body.MaxTokens != 32000 {
		t.Errorf("stream=%v model=%q max_tokens=%d", body.Stream, body.Model, body.MaxTokens)
	}
	if len(body.System) != 2 || body.System[0].Text != "STABLE PREFIX|" || body.System[0].CacheControl == nil ||
		body.System[0].CacheControl.TTL != "1h" || body.System[1].CacheControl != nil {
		t.Errorf("system blocks = %+v", body.System)
	}
	// Message 2 (the tool result) merges with message 3 into one user turn;
	// the breakpoint sits on the tool result, not on the later text.
	if len(body.Messages) != 3 {
		t.Fatalf("messages = %d", len(body.Messages))
	}
	last := body.Messages[2].Content
	if last[0].Type != "tool_result" || last[0].CacheControl == nil || last[1].CacheControl != nil {
		t.Errorf("cache_control position: %+v", last)
	}
	if !json.Valid(body.Tools[0].InputSchema) || string(body.ToolChoice) != `{"type":"auto"}` {
		t.Errorf("tools %s choice %s", body.Tools[0].InputSchema, body.ToolChoice)
	}
}

func TestOverloadedIsRetried(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t,
		llmfake.AnthropicError(529, "overloaded_error", "Overloaded"),
		llmfake.AnthropicStream(llmfake.Turn{Text: []string{"fine"}}))
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	resp, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("hi")}})
	if err != nil || resp.Message.Text() != "fine" || srv.Count() != 2 {
		t.Fatalf("resp %v err %v after %d requests", resp, err, srv.Count())
	}
}

func TestSpendLimitIsNotRetried(t *testing.T) {
	t.Parallel()
	rep := llmfake.Reply{Status: 429, Body: []byte(`{"type":"error","error":{"type":"rate_limit_error","message":"spend limit",` +
		`"details":{"error_code":"enforced_spend_limit_reached"}},"request_id":"req_x"}`)}
	srv := llmfake.NewServer(t, rep)
	cfg := providertest.DefaultConfig()
	m := newFakeModel(t, srv.URL, cfg)
	_, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("hi")}})
	var ae *llmhttp.APIError
	if !errors.As(err, &ae) || ae.Retryable() || ae.Code != "enforced_spend_limit_reached" || ae.RequestID != "req_x" {
		t.Fatalf("err = %#v", err)
	}
	if srv.Count() != 1 || agents.Retryable(err) || strings.Contains(err.Error(), cfg.APIKey) {
		t.Errorf("requests %d, retryable %v, err %v", srv.Count(), agents.Retryable(err), err)
	}
}

func TestAdaptiveThinkingAndNoTemperature(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.AnthropicStream(llmfake.Turn{Text: []string{"ok"}}))
	m, err := anthropic.New(anthropic.Config{Model: "claude-next", APIKey: "k-123456", BaseURL: srv.URL,
		Thinking: anthropic.ThinkingAdaptive, OmitTemperature: true})
	if err != nil {
		t.Fatal(err)
	}
	temp := 0.3
	if _, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")},
		Options: agents.Options{Temperature: &temp, ReasoningBudget: 5000}}); err != nil {
		t.Fatal(err)
	}
	var body llmfake.AnthropicRequest
	srv.Request(0).Decode(&body)
	if string(body.Thinking) != `{"type":"adaptive"}` || body.Temperature != nil || body.MaxTokens != anthropic.DefaultMaxTokens {
		t.Errorf("thinking %s temperature %v max_tokens %d", body.Thinking, body.Temperature, body.MaxTokens)
	}
}

func TestConfigErrors(t *testing.T) {
	t.Setenv(anthropic.EnvAPIKey, "")
	if _, err := anthropic.New(anthropic.Config{Model: "m"}); err == nil || !strings.Contains(err.Error(), anthropic.EnvAPIKey) {
		t.Errorf("missing key: %v", err)
	}
	if _, err := anthropic.New(anthropic.Config{APIKey: "k"}); err == nil {
		t.Error("missing model accepted")
	}
	t.Setenv(anthropic.EnvAPIKey, "from-env-key")
	srv := llmfake.NewServer(t, llmfake.AnthropicStream(llmfake.Turn{Text: []string{"ok"}}))
	m, err := anthropic.New(anthropic.Config{Model: "m", BaseURL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}}); err != nil {
		t.Fatal(err)
	}
	if got := srv.Request(0).Header.Get("X-Api-Key"); got != "from-env-key" {
		t.Errorf("key from env = %q", got)
	}
	if info := m.Info(); info.Provider != "anthropic" || info.Name != "m" || !info.Capabilities.Tools {
		t.Errorf("info = %+v", info)
	}
}

func TestEncodeErrorIsNotSent(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t)
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	_, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")},
		Options: agents.Options{ReasoningBudget: 100000}})
	if err == nil || !strings.Contains(err.Error(), "max_tokens") || srv.Count() != 0 {
		t.Errorf("err %v, %d requests", err, srv.Count())
	}
}

func TestCancelClosesStream(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.Reply{Events: llmfake.AnthropicStream(llmfake.Turn{Text: []string{"a", "b"}}).Events[:4], Hang: true})
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	var gotErr error
	for _, err := range m.Stream(ctx, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}}) {
		if err != nil {
			gotErr = err
			break
		}
		cancel()
	}
	if !errors.Is(gotErr, context.Canceled) || time.Since(start) > 5*time.Second {
		t.Errorf("err %v after %v", gotErr, time.Since(start))
	}
	if !srv.WaitDisconnected(1, 5*time.Second) {
		t.Error("the server did not see the connection close")
	}
}

func TestConcurrentStreams(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t)
	srv.Respond(func(llmfake.Request) llmfake.Reply {
		return llmfake.AnthropicStream(llmfake.Turn{Text: []string{"a", "b"}})
	})
	m := newFakeModel(t, srv.URL, providertest.DefaultConfig())
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			resp, err := agents.Generate(context.Background(), m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
			if err == nil && resp.Message.Text() != "ab" {
				err = errors.New("wrong text " + resp.Message.Text())
			}
			errs <- err
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
}
