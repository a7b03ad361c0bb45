package gemini_test

import (
	"errors"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/internal/llmhttp"
	"github.com/bichat-go/bichat/providers/providertest"
)

// TestUnterminatedLastEvent: Gemini streams have no end marker and the
// last chunk often lacks its closing blank line; it is decoded (its
// finishReason completes the answer). A last chunk cut inside its JSON is
// an incomplete stream, and a JSON error body written after the events,
// outside data: lines, is reported as the error it is.
func TestUnterminatedLastEvent(t *testing.T) {
	t.Parallel()
	const first = "data: {\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":[{\"text\":\"Hel\"}]}}]}\r\n\r\n"
	const last = `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":2,"totalTokenCount":4}}`
	for _, end := range []string{last, last + "\n", last + "\r\n"} {
		_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: []byte(first + end)}))
		if err != nil || resp.Message.Text() != "Hello" || resp.Stop != agents.StopEndTurn || resp.Usage.TotalTokens != 4 {
			t.Errorf("ending %q: %+v, %v", end[len(end)-3:], resp, err)
		}
	}
	_, _, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: []byte(first + last[:60])}))
	if !errors.Is(err, llmhttp.ErrIncomplete) {
		t.Errorf("cut inside the last chunk: err = %v, want ErrIncomplete", err)
	}
	_, _, err = providertest.Collect(t, replayModel(t, providertest.Replay{Body: []byte(first + last + "\n\n" +
		"{\n  \"error\": {\"code\": 503, \"message\": \"overloaded\", \"status\": \"UNAVAILABLE\"}\n}\n")}))
	var ae *llmhttp.APIError
	if !errors.As(err, &ae) || ae.Type != "UNAVAILABLE" || ae.Code != "503" || !ae.Retryable() {
		t.Errorf("error body after the events: err = %v, want the UNAVAILABLE error", err)
	}
}
