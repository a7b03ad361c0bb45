package gemini_test

import (
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/providertest"
)

// TestCarriedParts: parts that are not text, thoughts or calls keep their
// JSON verbatim (unknown members included), a part carrying only a thought
// signature becomes a reasoning block instead of vanishing, an empty part
// is nothing, and an unknown part kind is an unsupported item.
func TestCarriedParts(t *testing.T) {
	t.Parallel()
	body := []byte(`data: {"candidates":[{"content":{"role":"model","parts":[` +
		`{"text":"Sum:"},` +
		`{"executableCode":{"language":"PYTHON","code":"print(1+1)","future":"kept"}},` +
		`{"codeExecutionResult":{"outcome":"OUTCOME_OK","output":"2\n"}},` +
		`{"thoughtSignature":"c2ln"},` +
		`{},` +
		`{"videoMetadata":{"fps":2}},` +
		`{"fileData":{"mimeType":"image/png","fileUri":"gs://b/o.png"}}` +
		`]},"finishReason":"STOP"}]}` + "\n\n")
	_, resp, err := providertest.Collect(t, replayModel(t, providertest.Replay{Body: body}))
	if err != nil {
		t.Fatal(err)
	}
	kinds := providertest.ItemKinds(resp)
	want := []agents.ItemKind{agents.ItemCode, agents.ItemCodeResult, agents.ItemUnsupported, agents.ItemMedia}
	if len(kinds) != len(want) {
		t.Fatalf("items = %+v", resp.Items)
	}
	for i := range want {
		if kinds[i] != want[i] {
			t.Errorf("item %d kind %s, want %s", i, kinds[i], want[i])
		}
	}
	code := resp.Items[0]
	if code.Text != "print(1+1)" || code.Language != "PYTHON" || !strings.Contains(string(code.Raw), `"future":"kept"`) {
		t.Errorf("code item = %+v", code)
	}
	if r := resp.Items[1]; r.Text != "2\n" || r.Outcome != "OUTCOME_OK" {
		t.Errorf("result item = %+v", r)
	}
	if u := resp.Items[2]; string(u.Raw) != `{"videoMetadata":{"fps":2}}` {
		t.Errorf("unsupported item = %+v", u)
	}
	if m := resp.Items[3]; m.URI != "gs://b/o.png" || m.MediaType != "image/png" {
		t.Errorf("media item = %+v", m)
	}
	var sig []byte
	for _, p := range resp.Message.Parts {
		if p.Reasoning != nil {
			sig = p.Reasoning.Opaque
		}
	}
	if string(sig) != "sig" || resp.Message.Text() != "Sum:" {
		t.Errorf("signature-only part: opaque %q, text %q", sig, resp.Message.Text())
	}
}
