package llmfake

import (
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/bichat-go/bichat/domain"
)

// Gemini dialect: streamGenerateContent?alt=sse answers are "data:" lines
// separated by CRLF, each a whole GenerateContentResponse holding only
// new parts, with no terminator (a clean EOF after the chunk carrying
// finishReason); generateContent answers are one JSON object; errors are
// google.rpc.Status bodies, as documented for the Gemini API.

// GeminiMalformed is a chunk whose JSON is cut off.
var GeminiMalformed = geminiFrame(`{"candidates":[{"content":{"role":"model","parts":[{"text":"br`)

func geminiFrame(data string) []byte { return []byte("data: " + data + "\r\n\r\n") }

// GeminiUsage renders u as usageMetadata: promptTokenCount includes the
// cached part, output is split into candidates and thoughts.
func GeminiUsage(u domain.Usage) map[string]any {
	total := u.TotalTokens
	if total == 0 {
		total = u.PromptTokens + u.CompletionTokens
	}
	return map[string]any{
		"promptTokenCount": u.PromptTokens, "candidatesTokenCount": u.CompletionTokens - u.ReasoningTokens,
		"thoughtsTokenCount": u.ReasoningTokens, "cachedContentTokenCount": u.CachedTokens, "totalTokenCount": total,
	}
}

// geminiParts returns t's parts in stream order, one slice per chunk:
// thought fragments (the signature, Opaque in standard base64 as the API
// encodes bytes, on a reasoning block's last fragment),
// text fragments, then the calls (all in one chunk, whole, as Gemini
// sends them).
func geminiParts(t Turn) [][]map[string]any {
	var chunks [][]map[string]any
	for _, r := range t.Reasoning {
		texts := r.Text
		if len(texts) == 0 {
			texts = []string{""}
		}
		for i, s := range texts {
			p := map[string]any{"text": s, "thought": true}
			if i == len(texts)-1 && len(r.Opaque) > 0 {
				p["thoughtSignature"] = base64.StdEncoding.EncodeToString(r.Opaque)
			}
			chunks = append(chunks, []map[string]any{p})
		}
	}
	for _, s := range t.Text {
		chunks = append(chunks, []map[string]any{{"text": s}})
	}
	if len(t.Calls) > 0 {
		var parts []map[string]any
		for _, c := range t.Calls {
			args := json.RawMessage("{}")
			if a := c.ArgsText(); a != "" {
				args = json.RawMessage(a)
			}
			fc := map[string]any{"name": c.Name, "args": args}
			if c.ID != "" {
				fc["id"] = c.ID
			}
			p := map[string]any{"functionCall": fc}
			if len(c.Opaque) > 0 {
				p["thoughtSignature"] = base64.StdEncoding.EncodeToString(c.Opaque)
			}
			parts = append(parts, p)
		}
		chunks = append(chunks, parts)
	}
	return chunks
}

func geminiFinish(t Turn) string {
	if t.Stop != "" {
		return t.Stop
	}
	return "STOP" // also for function calls
}

func geminiResponse(t Turn, parts []map[string]any, finish string, usage bool) map[string]any {
	if parts == nil {
		parts = []map[string]any{}
	}
	cand := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
	if finish != "" {
		cand["finishReason"] = finish
	}
	id, model := t.ids("resp-fake1")
	r := map[string]any{"candidates": []any{cand}, "modelVersion": model, "responseId": id}
	if usage {
		r["usageMetadata"] = GeminiUsage(t.Usage)
	} else {
		r["usageMetadata"] = map[string]any{"promptTokenCount": t.Usage.PromptTokens, "totalTokenCount": t.Usage.PromptTokens}
	}
	return r
}

// GeminiStream renders t as a streamGenerateContent?alt=sse reply: one
// chunk per thought or text fragment, the function calls whole in one
// chunk; the last chunk carries finishReason and the final usageMetadata
// (earlier ones a partial one, as Gemini repeats it). No terminator.
func GeminiStream(t Turn) Reply {
	chunks := geminiParts(t)
	if len(chunks) == 0 {
		chunks = [][]map[string]any{nil}
	}
	var ev [][]byte
	for i, parts := range chunks {
		last := i == len(chunks)-1
		finish := ""
		if last {
			finish = geminiFinish(t)
		}
		b, _ := json.Marshal(geminiResponse(t, parts, finish, last))
		ev = append(ev, geminiFrame(string(b)))
	}
	return Reply{Events: ev}
}

// GeminiResponse renders t as a generateContent (non-streamed) answer.
func GeminiResponse(t Turn) Reply {
	var parts []map[string]any
	for _, c := range geminiParts(t) {
		parts = append(parts, c...)
	}
	return JSONReply(geminiResponse(t, parts, geminiFinish(t), true))
}

// GeminiBlocked is a 200 answer to a blocked prompt: no candidates, a
// promptFeedback.blockReason.
func GeminiBlocked(reason string) Reply {
	b, _ := json.Marshal(map[string]any{"promptFeedback": map[string]any{"blockReason": reason},
		"usageMetadata": map[string]any{"promptTokenCount": 7, "totalTokenCount": 7}})
	return Reply{Events: [][]byte{geminiFrame(string(b))}}
}

func geminiStatus(code int, status, message, retryDelay string) map[string]any {
	st := map[string]any{"code": code, "message": message, "status": status}
	if retryDelay != "" {
		st["details"] = []any{map[string]any{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retryDelay}}
	}
	return map[string]any{"error": st}
}

// GeminiError returns an HTTP error reply with a google.rpc.Status body,
// e.g. GeminiError(429, "RESOURCE_EXHAUSTED", "quota", "1s"); retryDelay
// adds a RetryInfo detail when not empty.
func GeminiError(code int, status, message, retryDelay string) Reply {
	b, _ := json.Marshal(geminiStatus(code, status, message, retryDelay))
	return Reply{Status: code, Body: b}
}

// GeminiStreamError is a chunk with a top-level error inside a 200 stream.
func GeminiStreamError(code int, status, message string) []byte {
	b, _ := json.Marshal(geminiStatus(code, status, message, ""))
	return geminiFrame(string(b))
}

// GeminiRequest is the subset of a GenerateContentRequest tests inspect;
// unknown fields are ignored.
type GeminiRequest struct {
	Contents          []GeminiContent `json:"contents"`
	SystemInstruction *GeminiContent  `json:"systemInstruction"`
	Tools             []struct {
		FunctionDeclarations []struct {
			Name                 string          `json:"name"`
			Description          string          `json:"description"`
			ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema"`
			Parameters           json.RawMessage `json:"parameters"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
	ToolConfig       json.RawMessage `json:"toolConfig"`
	GenerationConfig json.RawMessage `json:"generationConfig"`
}

// GeminiContent is one content (a turn) of a request.
type GeminiContent struct {
	Role  string       `json:"role"`
	Parts []GeminiPart `json:"parts"`
}

// GeminiPart is one part of a content.
type GeminiPart struct {
	Text         *string `json:"text"`
	Thought      bool    `json:"thought"`
	FunctionCall *struct {
		ID   string          `json:"id"`
		Name string          `json:"name"`
		Args json.RawMessage `json:"args"`
	} `json:"functionCall"`
	FunctionResponse *struct {
		ID       string          `json:"id"`
		Name     string          `json:"name"`
		Response json.RawMessage `json:"response"`
	} `json:"functionResponse"`
	ThoughtSignature string `json:"thoughtSignature"`
}

// String describes the part briefly, for test failure messages.
func (p GeminiPart) String() string {
	switch {
	case p.FunctionCall != nil:
		return fmt.Sprintf("functionCall(%s %s)", p.FunctionCall.Name, p.FunctionCall.Args)
	case p.FunctionResponse != nil:
		return fmt.Sprintf("functionResponse(%s %s)", p.FunctionResponse.Name, p.FunctionResponse.Response)
	case p.Text != nil:
		return fmt.Sprintf("text(%q thought=%v)", *p.Text, p.Thought)
	}
	return "part{}"
}
