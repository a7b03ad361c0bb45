package openai

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzFastChunk checks the hand-written chunk decoder against
// encoding/json: whenever encoding/json decodes a chunk, the fast decoder
// either declines or produces exactly the same value.
func FuzzFastChunk(f *testing.F) {
	for _, s := range []string{
		string(benchChunk),
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_B","type":"function","function":{"name":"search_kb","arguments":"{\"q\":\"rev\"}"}}]},"finish_reason":null}]}`,
		`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17,"prompt_tokens_details":{"cached_tokens":3}}}`,
		`{"choices":[{"index":0,"delta":{"content":"\u00e9\ud83d\ude00 \"q\" \\ \/ \n"},"finish_reason":"stop"}]}`,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"a","reasoning":"b","refusal":null,"tool_calls":[{"function":{"arguments":"x"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a","annotations":[]}}]}`,
		`{"choices":[{"index":0,"delta":{"annotations":[{"type":"url_citation","url_citation":{"url":"https://x"}}]}}]}`,
		`{"error":{"message":"m","type":"server_error"}}`,
		` { "choices" : [ { "index" : 0 , "delta" : { } } ] , "x" : [1, -2.5e3, true, false, null, {"a":[]}] } `,
		`{"choices":[{"index":0,"delta":{"content":"br`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var slow chunkJSON
		slowErr := json.Unmarshal(data, &slow)
		var fast chunkJSON
		if !fastChunk(data, &fast) {
			return
		}
		if slowErr != nil {
			// Leniency is allowed only for skipped members; the fields
			// read must still be those of a JSON document. Nothing to
			// compare against.
			return
		}
		normalize(&slow)
		normalize(&fast)
		if !reflect.DeepEqual(slow, fast) {
			t.Fatalf("fast decode differs for %q\nslow %+v\nfast %+v", data, slow, fast)
		}
	})
}

// normalize makes the two decodings comparable: nil and empty slices are
// the same, and Index pointers compare by value.
func normalize(c *chunkJSON) {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	for i := range c.Choices {
		if len(c.Choices[i].Delta.Annotations) == 0 {
			c.Choices[i].Delta.Annotations = nil
		}
		tcs := c.Choices[i].Delta.ToolCalls
		if len(tcs) == 0 {
			c.Choices[i].Delta.ToolCalls = nil
		}
		for j := range tcs {
			if tcs[j].Index != nil {
				v := *tcs[j].Index
				tcs[j].Index = &v
			}
			tcs[j].index = 0
		}
	}
}
