package openai

import (
	"encoding/json"
	"strings"

	"github.com/bichat-go/bichat/internal/llmhttp"
)

// errorBody is OpenAI's error envelope; code may be a string or a number
// (Azure), and some compatible servers put the message elsewhere.
type errorBody struct {
	Error *struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
		Param   json.RawMessage `json:"param"`
	} `json:"error"`
	Message string `json:"message"`
	Detail  any    `json:"detail"`
}

func rawString(r json.RawMessage) string {
	if len(r) == 0 || string(r) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(r, &s) == nil {
		return s
	}
	return string(r)
}

// parseError reads an HTTP error body into e.
func parseError(e *llmhttp.APIError, body []byte) {
	var b errorBody
	if json.Unmarshal(body, &b) != nil {
		if s := strings.TrimSpace(string(body)); s != "" {
			e.Message = s
		}
		return
	}
	switch {
	case b.Error != nil:
		e.Type, e.Code = b.Error.Type, rawString(b.Error.Code)
		if b.Error.Message != "" {
			e.Message = b.Error.Message
		}
	case b.Message != "":
		e.Message = b.Message
	case b.Detail != nil:
		d, _ := json.Marshal(b.Detail)
		e.Message = string(d)
	}
	// An exhausted quota or billing limit does not recover by waiting.
	if e.Code == "insufficient_quota" || e.Type == "insufficient_quota" || e.Code == "billing_hard_limit_reached" {
		e.Transient = false
	}
}

// streamError converts an in-stream {"error":{...}} payload.
func streamError(provider string, b *errorBody) *llmhttp.APIError {
	e := &llmhttp.APIError{Provider: provider, Message: "error event in the stream"}
	if b.Error != nil {
		e.Type, e.Code = b.Error.Type, rawString(b.Error.Code)
		if b.Error.Message != "" {
			e.Message = llmhttp.Redact(b.Error.Message)
		}
	}
	switch {
	case strings.Contains(e.Type, "server_error"), strings.Contains(e.Type, "overloaded"),
		e.Type == "api_error", e.Code == "rate_limit_exceeded", e.Code == "server_error":
		e.Transient = true
	}
	return e
}
