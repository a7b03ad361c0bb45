package gemini

import (
	"encoding/json"
	"testing"
)

// used projects a response onto what the decoder reads: the first
// candidate's parts, finish reason and message, usage and response id.
func used(r wireResponse) string {
	v := struct {
		Parts          []wirePart
		Finish, FinMsg string
		HasCandidate   bool
		Usage          *wireUsage
		ID             string
		// Blocked lists the ratings that blocked; Meta the citation,
		// grounding and URL context metadata.
		Blocked []string
		Meta    string
	}{Usage: r.UsageMetadata, ID: r.ResponseID}
	if len(r.Candidates) > 0 {
		c := r.Candidates[0]
		v.HasCandidate, v.Finish, v.FinMsg = true, c.FinishReason, c.FinishMessage
		if c.Content != nil {
			v.Parts = c.Content.Parts
		}
		for _, sr := range c.SafetyRatings {
			if sr.Blocked {
				v.Blocked = append(v.Blocked, sr.Category)
			}
		}
		v.Meta = string(c.CitationMetadata) + string(c.GroundingMetadata) + string(c.URLContextMetadata)
	}
	if len(v.Parts) == 0 {
		v.Parts = nil
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// The scanner must agree with encoding/json on everything it accepts and
// hand anything else over to it.
func TestScanResponseMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	accepted := []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Revenue "}]},"index":0}],"usageMetadata":{"promptTokenCount":12,"totalTokenCount":12},"modelVersion":"m","responseId":"r1"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"plan \"x\"\n","thought":true,"thoughtSignature":"CiQB+/="}]},"finishReason":"STOP","finishMessage":"ok","index":0,"safetyRatings":[{"category":"X","probability":"NEGLIGIBLE"}]}]}`,
		`{"candidates":[{"content":{"parts":[{"functionCall":{"id":"fc-1","name":"run_sql","args":{"sql":"SELECT 1","n":[1,2.5,null,true]}},"thoughtSignature":"s"},{"functionCall":{"name":"now"}}],"role":"model"}}],"usageMetadata":{"promptTokenCount":120,"candidatesTokenCount":18,"thoughtsTokenCount":40,"cachedContentTokenCount":1,"toolUsePromptTokenCount":2,"totalTokenCount":178,"promptTokensDetails":[{"modality":"TEXT","tokenCount":120}]}}`,
		` { "candidates" : [ ] , "usageMetadata" : { } } `,
		`{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"SAFETY"}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"index":0,"avgLogprobs":-0.5,"safetyRatings":[{"category":"A","probability":"LOW","blocked":false,"probabilityScore":0.1}]}]}`,
	}
	for _, in := range accepted {
		var got wireResponse
		if !scanResponse([]byte(in), &got, &scratch{}) {
			t.Errorf("not scanned: %s", in)
			continue
		}
		var want wireResponse
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if used(got) != used(want) {
			t.Errorf("%s\n got %s\nwant %s", in, used(got), used(want))
		}
	}
	rejected := []string{
		`{"promptFeedback":{"blockReason":"SAFETY"}}`,
		`{"error":{"code":503,"message":"x","status":"UNAVAILABLE"}}`,
		`{"candidates":[{"content":{"parts":[{"inlineData":{"mimeType":"image/png","data":"AA=="}}]}}]}`,
		`{"Candidates":[]}`,
		`{"candidates":[{"content":{"parts":[{"text":"cut`,
		`{"candidates":null}`,
		"{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"a\x01b\"}]}}]}",
		`{"usageMetadata":{"promptTokenCount":1.0}}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"safetyRatings":[{"category":"A","probability":"HIGH","blocked":true}]}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"safetyRatings":[{"category":"A","BLOCKED":true}]}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"citationMetadata":{"citations":[{"uri":"https://a"}]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"groundingMetadata":{"groundingChunks":[]}}]}`,
		`{"candidates":[{"content":{"parts":[{"text":"x"}]},"urlContextMetadata":{}}]}`,
		`{"candidates":[{"content":{"parts":[{"executableCode":{"language":"PYTHON","code":"1"}}]}}]}`,
	}
	for _, in := range rejected {
		var r wireResponse
		if scanResponse([]byte(in), &r, &scratch{}) {
			t.Errorf("scanned, should be left to encoding/json: %s", in)
		}
	}
}

func FuzzScanResponse(f *testing.F) {
	f.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"text":"a\u00e9","thought":true}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":1}}`))
	f.Add([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{"a":[1]}}}]}}],"responseId":"r"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got wireResponse
		if !scanResponse(data, &got, &scratch{}) {
			return
		}
		var want wireResponse
		if err := json.Unmarshal(data, &want); err != nil {
			return // keys and skipped members are not validated (see internal/jsonscan)
		}
		if used(got) != used(want) {
			t.Fatalf("%q:\nscanner       %s\nencoding/json %s", data, used(got), used(want))
		}
	})
}
