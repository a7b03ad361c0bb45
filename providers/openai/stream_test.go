package openai_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/llmfake"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/openai"
)

// chunk is a Chat Completions chunk with the given delta.
func chunk(delta string) []byte {
	return llmfake.Data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`)
}

func finish(reason string) []byte {
	return llmfake.Data(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"` + reason + `"}]}`)
}

// TestCompatibleStreams plays the deviations OpenAI-compatible servers
// are known for and checks the assembled response.
func TestCompatibleStreams(t *testing.T) {
	t.Parallel()
	type call struct{ id, name, args string }
	for _, tc := range []struct {
		name   string
		events [][]byte
		text   string
		calls  []call
		stop   agents.StopReason
		usage  domain.Usage
	}{
		{"reused index with a new id", [][]byte{
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"x\":1}"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"id":"call_2","type":"function","function":{"name":"b","arguments":""}}]}`),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"y\":2}"}}]}`),
			finish("tool_calls"), llmfake.OpenAIDone,
		}, "", []call{{"call_1", "a", `{"x":1}`}, {"call_2", "b", `{"y":2}`}}, agents.StopToolUse, domain.Usage{}},
		{"missing index", [][]byte{
			chunk(`{"tool_calls":[{"id":"call_1","type":"function","function":{"name":"a","arguments":"{\"q\":"}}]}`),
			chunk(`{"tool_calls":[{"function":{"arguments":"\"v\"}"}}]}`),
			finish("tool_calls"), llmfake.OpenAIDone,
		}, "", []call{{"call_1", "a", `{"q":"v"}`}}, agents.StopToolUse, domain.Usage{}},
		{"ollama whole calls, stop, reasoning, usage in last chunk", [][]byte{
			chunk(`{"role":"assistant","content":"","reasoning":"hmm"}`),
			chunk(`{"role":"assistant","content":"","tool_calls":[{"id":"call_x","index":0,"type":"function","function":{"name":"a","arguments":"{}"}},{"id":"call_y","index":1,"type":"function","function":{"name":"b","arguments":"{\"k\":true}"}}]}`),
			llmfake.Data(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`),
			llmfake.OpenAIDone,
		}, "", []call{{"call_x", "a", `{}`}, {"call_y", "b", `{"k":true}`}}, agents.StopToolUse,
			domain.Usage{PromptTokens: 7, CompletionTokens: 3, TotalTokens: 10}},
		{"name repeated on every fragment, id too", [][]byte{
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"run_sql","arguments":"{\"sql\":"}}]}`),
			chunk(`{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"run_sql","arguments":"\"S\"}"}}]}`),
			finish("tool_calls"), llmfake.OpenAIDone,
		}, "", []call{{"call_1", "run_sql", `{"sql":"S"}`}}, agents.StopToolUse, domain.Usage{}},
		{"text before calls, null content, comments, CRLF", [][]byte{
			[]byte(": OPENROUTER PROCESSING\r\n\r\n"),
			chunk(`{"role":"assistant","content":null}`),
			chunk(`{"content":"Let me check. \u00e9\ud83d\ude00 \"q\"\n"}`),
			chunk(`{"content":null,"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"now","arguments":""}}]}`),
			finish("tool_calls"), llmfake.OpenAIDone,
		}, "Let me check. é😀 \"q\"\n", []call{{"call_1", "now", `{}`}}, agents.StopToolUse, domain.Usage{}},
		{"length", [][]byte{chunk(`{"content":"cut"}`), finish("length"), llmfake.OpenAIDone}, "cut", nil, agents.StopMaxTokens, domain.Usage{}},
		{"content filter", [][]byte{chunk(`{"content":"x"}`), finish("content_filter"), llmfake.OpenAIDone}, "x", nil, agents.StopContentFilter, domain.Usage{}},
		{"refusal", [][]byte{chunk(`{"refusal":"I can't help with that."}`), finish("stop"), llmfake.OpenAIDone}, "I can't help with that.", nil, agents.StopRefusal, domain.Usage{}},
		{"deepseek cache hit tokens", [][]byte{chunk(`{"content":"x"}`), finish("stop"),
			llmfake.Data(`{"id":"c","choices":[],"usage":{"prompt_tokens":100,"completion_tokens":5,"total_tokens":105,"prompt_cache_hit_tokens":64,"prompt_cache_miss_tokens":36}}`),
			llmfake.OpenAIDone}, "x", nil, agents.StopEndTurn, domain.Usage{PromptTokens: 100, CompletionTokens: 5, CachedTokens: 64, TotalTokens: 105}},
		{"data line over 1 MiB", [][]byte{chunk(`{"content":"` + strings.Repeat("z", 1<<20+100) + `"}`), finish("stop"), llmfake.OpenAIDone},
			strings.Repeat("z", 1<<20+100), nil, agents.StopEndTurn, domain.Usage{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmfake.NewServer(t, llmfake.Reply{Events: tc.events, SplitWrites: len(tc.events[0]) < 1000})
			resp := generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"}),
				&agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
			if got := resp.Message.Text(); got != tc.text {
				t.Errorf("text = %.60q, want %.60q", got, tc.text)
			}
			calls := resp.Message.ToolCalls()
			if len(calls) != len(tc.calls) {
				t.Fatalf("calls = %+v, want %+v", calls, tc.calls)
			}
			for i, c := range tc.calls {
				if calls[i].ID != c.id || calls[i].Name != c.name || string(calls[i].Arguments) != c.args {
					t.Errorf("call %d = %s %s %s, want %+v", i, calls[i].ID, calls[i].Name, calls[i].Arguments, c)
				}
			}
			if resp.Stop != tc.stop {
				t.Errorf("stop = %q, want %q", resp.Stop, tc.stop)
			}
			if resp.Usage != tc.usage {
				t.Errorf("usage = %+v, want %+v", resp.Usage, tc.usage)
			}
		})
	}
}

func TestNoStream(t *testing.T) {
	t.Parallel()
	turn := llmfake.Turn{Text: []string{"Here ", "it is."}, Reasoning: []llmfake.Reasoning{{Text: []string{"think"}}},
		Calls: []llmfake.Call{{ID: "call_A", Name: "run_sql", Args: []string{`{"sql":"SELECT 1"}`}}, {ID: "call_B", Name: "now"}},
		Usage: domain.Usage{PromptTokens: 120, CompletionTokens: 40, CachedTokens: 100, ReasoningTokens: 10, TotalTokens: 160}}
	srv := llmfake.NewServer(t, llmfake.OpenAIError(500, "server_error", "", "oops"), llmfake.OpenAICompletion(turn))
	resp := generate(t, mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1", NoStream: true}),
		&agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	var cr llmfake.OpenAIChatRequest
	srv.Request(1).Decode(&cr)
	if cr.Stream || cr.StreamOptions != nil {
		t.Errorf("non-streamed request asks for a stream: %s", srv.Request(1).Body)
	}
	calls := resp.Message.ToolCalls()
	if resp.Message.Text() != "Here it is." || len(calls) != 2 || calls[1].ID != "call_B" || string(calls[1].Arguments) != "{}" ||
		resp.Message.Parts[0].Type != domain.PartReasoning || resp.Usage != turn.Usage || resp.Stop != agents.StopToolUse {
		t.Errorf("response %+v", resp)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.Reply{Events: [][]byte{llmfake.OpenAIStreamError("invalid_request_error", "", "bad key "+testKey)}})
	_, err := agents.Generate(context.Background(), mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"}),
		&agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	var ae *llmhttp.APIError
	if !errors.As(err, &ae) || strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "0123456789abcdef") {
		t.Fatalf("err = %v", err)
	}
}

func TestQuotaNotRetried(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIError(429, "insufficient_quota", "insufficient_quota", "You exceeded your current quota"))
	_, err := agents.Generate(context.Background(), mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"}),
		&agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	if err == nil || agents.Retryable(err) || srv.Count() != 1 {
		t.Fatalf("err = %v after %d requests: an exhausted quota must not be retried", err, srv.Count())
	}
}

func TestStreamRequestAnsweredWithJSON(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAICompletion(llmfake.Turn{Text: []string{"whole"}}),
		llmfake.Reply{Body: []byte(`{"error":{"message":"upstream failed","type":"server_error"}}`)},
		llmfake.OpenAICompletion(llmfake.Turn{Text: []string{"second try"}}))
	m := mustNew(t, openai.Options{Connection: testConn(srv.URL), Model: "gpt-4.1"})
	if resp := generate(t, m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}}); resp.Message.Text() != "whole" {
		t.Fatalf("text %q", resp.Message.Text())
	}
	// An error object with a 200 is an error (here transient, so retried).
	if resp := generate(t, m, &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}}); resp.Message.Text() != "second try" || srv.Count() != 3 {
		t.Fatalf("text %q after %d requests", resp.Message.Text(), srv.Count())
	}
}

func TestSendReasoningOnlyInCurrentTurn(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	o := openai.DeepSeek("deepseek-reasoner")
	o.Connection = testConn(srv.URL)
	o.SendReasoning = true
	think := func(s string) domain.Part {
		return domain.Part{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: s}}
	}
	call := domain.Part{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c2", Name: "now", Arguments: []byte("{}")}}
	msgs := []agents.Message{
		agents.UserMessage("first question"),
		{Role: domain.RoleAssistant, Parts: []domain.Part{think("old thoughts"), domain.TextPart("old answer")}},
		agents.UserMessage("second question"),
		{Role: domain.RoleAssistant, Parts: []domain.Part{think("current thoughts"), call}},
		{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c2", Content: "noon"}}}},
	}
	generate(t, mustNew(t, o), &agents.Request{Messages: msgs})
	var cr llmfake.OpenAIChatRequest
	srv.Request(0).Decode(&cr)
	var sent []string
	for _, m := range cr.Messages {
		if m.ReasoningContent != nil {
			sent = append(sent, *m.ReasoningContent)
		}
	}
	if len(sent) != 1 || sent[0] != "current thoughts" {
		t.Fatalf("reasoning sent back: %q, want only the current turn's", sent)
	}
}

func TestOnRetry(t *testing.T) {
	t.Parallel()
	srv := llmfake.NewServer(t, llmfake.OpenAIError(503, "server_error", "", "busy"), llmfake.OpenAIStream(llmfake.Turn{Text: []string{"a"}}))
	conn := testConn(srv.URL)
	var got []string
	conn.OnRetry = func(attempt int, delay time.Duration, err error) {
		got = append(got, fmt.Sprintf("%d %v", attempt, err))
	}
	generate(t, mustNew(t, openai.Options{Connection: conn, Model: "gpt-4.1"}), &agents.Request{Messages: []agents.Message{agents.UserMessage("x")}})
	if len(got) != 1 || !strings.HasPrefix(got[0], "1 openai: HTTP 503 (server_error): busy") {
		t.Fatalf("OnRetry calls %q", got)
	}
}
