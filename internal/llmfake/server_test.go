package llmfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/internal/sse"
)

func post(t *testing.T, url, body string) (*http.Response, []byte, error) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func TestServerRecordsAndReplays(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, OpenAIError(429, "requests", "rate_limit_exceeded", "slow").WithHeader("Retry-After", "1"),
		Reply{Events: [][]byte{Data("a"), Frame("ping", "x\ny")}})
	srv.Respond(func(r Request) Reply { return JSONReply(map[string]string{"path": r.Path}) })
	resp, body, err := post(t, srv.URL+"/v1/chat/completions?api-version=1", `{"model":"m"}`)
	if err != nil || resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "1" || !strings.Contains(string(body), "rate_limit_exceeded") {
		t.Fatalf("first reply: %v %v %s", resp, err, body)
	}
	resp, body, _ = post(t, srv.URL+"/x", `{}`)
	if resp.Header.Get("Content-Type") != "text/event-stream" || string(body) != "data: a\n\nevent: ping\ndata: x\ndata: y\n\n" {
		t.Fatalf("stream reply %q (%s)", body, resp.Header.Get("Content-Type"))
	}
	_, body, _ = post(t, srv.URL+"/dyn", `{}`)
	if string(body) != `{"path":"/dyn"}` {
		t.Fatalf("Respond reply %s", body)
	}
	r0 := srv.Request(0)
	if srv.Count() != 3 || r0.Path != "/v1/chat/completions" || r0.Query.Get("api-version") != "1" ||
		r0.Header.Get("Authorization") != "Bearer k" || r0.JSON(t)["model"] != "m" {
		t.Fatalf("recorded %+v", r0)
	}
}

func TestServerFaults(t *testing.T) {
	t.Parallel()
	stream := OpenAIStream(Turn{Text: []string{"héllo", " wörld"}})
	srv := NewServer(t,
		Reply{DropConnection: true},
		func() Reply { r := stream; r.ResetAfter = 3; return r }(),
		stream.Truncated(2),
		func() Reply { r := stream; r.SplitWrites = true; r.EventDelay = time.Millisecond; return r }(),
		Reply{FirstByteDelay: 100 * time.Millisecond, Body: []byte("{}")},
	)
	if _, _, err := post(t, srv.URL, "{}"); err == nil {
		t.Fatal("dropped connection: no error")
	}
	resp, body, err := post(t, srv.URL, "{}")
	if err == nil || resp.StatusCode != 200 {
		t.Fatalf("reset: status %v err %v", resp, err)
	}
	if !bytes.HasPrefix(stream.Bytes(), body) || len(body) == 0 {
		t.Fatalf("reset: the bytes before the reset must be a prefix of the stream: %q", body)
	}
	_, body, err = post(t, srv.URL, "{}")
	if err != nil || bytes.Contains(body, []byte("[DONE]")) {
		t.Fatalf("truncated: %v %q", err, body)
	}
	_, body, err = post(t, srv.URL, "{}")
	if err != nil || !bytes.Equal(body, stream.Bytes()) {
		t.Fatalf("split writes changed the bytes: %v", err)
	}
	start := time.Now()
	post(t, srv.URL, "{}")
	if time.Since(start) < 100*time.Millisecond {
		t.Fatal("first byte came early")
	}
}

func TestServerHangSeesDisconnect(t *testing.T) {
	t.Parallel()
	srv := NewServer(t, Reply{Events: [][]byte{Data("x")}, Hang: true})
	client := &http.Client{Timeout: 100 * time.Millisecond}
	resp, err := client.Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err == nil {
		io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if !srv.WaitDisconnected(1, 5*time.Second) {
		t.Fatal("the hanging reply never saw the client go")
	}
}

// TestOpenAIStreamWire checks the rendered stream: valid SSE, JSON chunks,
// the documented fragment layout and the terminator.
func TestOpenAIStreamWire(t *testing.T) {
	t.Parallel()
	turn := Turn{Text: []string{"Hi"}, Reasoning: []Reasoning{{Text: []string{"think"}}}, Interleave: true,
		Calls: []Call{{ID: "call_A", Name: "a", Args: []string{`{"x":`, `1}`}}, {ID: "call_B", Name: "b", Args: []string{`{}`}}}}
	turn.Usage.PromptTokens, turn.Usage.CachedTokens, turn.Usage.CompletionTokens = 10, 4, 3
	r := sse.NewReader(bytes.NewReader(OpenAIStream(turn).Bytes()))
	var order []string
	var sawUsage, sawDone bool
	for {
		ev, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if string(ev.Data) == "[DONE]" {
			sawDone = true
			continue
		}
		var ck struct {
			Choices []struct {
				Delta struct {
					Content          *string `json:"content"`
					ReasoningContent string  `json:"reasoning_content"`
					ToolCalls        []struct {
						Index    int
						ID       string
						Function struct{ Name, Arguments string }
					} `json:"tool_calls"`
				}
				FinishReason *string `json:"finish_reason"`
			}
			Usage *struct {
				PromptTokens        int `json:"prompt_tokens"`
				PromptTokensDetails struct {
					CachedTokens int `json:"cached_tokens"`
				} `json:"prompt_tokens_details"`
			}
		}
		if err := json.Unmarshal(ev.Data, &ck); err != nil {
			t.Fatalf("chunk %s: %v", ev.Data, err)
		}
		if ck.Usage != nil {
			sawUsage = ck.Usage.PromptTokens == 10 && ck.Usage.PromptTokensDetails.CachedTokens == 4 && len(ck.Choices) == 0
		}
		for _, c := range ck.Choices {
			switch {
			case c.Delta.ReasoningContent != "":
				order = append(order, "r:"+c.Delta.ReasoningContent)
			case c.Delta.Content != nil && *c.Delta.Content != "":
				order = append(order, "t:"+*c.Delta.Content)
			case len(c.Delta.ToolCalls) > 0:
				tc := c.Delta.ToolCalls[0]
				order = append(order, "c"+string(rune('0'+tc.Index))+":"+tc.ID+tc.Function.Name+tc.Function.Arguments)
			case c.FinishReason != nil:
				order = append(order, "f:"+*c.FinishReason)
			}
		}
	}
	want := []string{"r:think", "t:Hi", "c0:call_Aa", `c0:{"x":`, "c1:call_Bb", "c1:{}", "c0:1}", "f:tool_calls"}
	if strings.Join(order, "|") != strings.Join(want, "|") || !sawUsage || !sawDone {
		t.Fatalf("order %q (want %q), usage %v, done %v", order, want, sawUsage, sawDone)
	}
}

func TestReplyHelpers(t *testing.T) {
	t.Parallel()
	r := Reply{Events: [][]byte{Data("1"), Data("2"), Data("3")}}
	if got := string(r.Truncated(1).Bytes()); got != "data: 1\n\n" {
		t.Errorf("Truncated: %q", got)
	}
	if got := string(r.CutInside(1).Bytes()); got != "data: 1\n\ndata" {
		t.Errorf("CutInside: %q", got)
	}
	if got := string(r.Inject(1, Data("x")).Bytes()); got != "data: 1\n\ndata: x\n\ndata: 2\n\ndata: 3\n\n" {
		t.Errorf("Inject: %q", got)
	}
	if len(r.Events) != 3 {
		t.Error("helpers modified the original reply")
	}
}

func TestOpenAIEmbeddingResponder(t *testing.T) {
	t.Parallel()
	srv := NewServer(t)
	srv.Respond(OpenAIEmbeddingResponder(4))
	_, body, err := post(t, srv.URL+"/v1/embeddings", `{"model":"e","input":["ab","cde"]}`)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Data []struct {
			Index     int
			Embedding []float32
		}
	}
	json.Unmarshal(body, &r)
	if len(r.Data) != 2 || r.Data[0].Index != 1 || r.Data[0].Embedding[0] != 3 || r.Data[1].Embedding[0] != 2 {
		t.Fatalf("embeddings %+v", r.Data)
	}
}
