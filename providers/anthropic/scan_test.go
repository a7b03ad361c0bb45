package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"
)

// sameEvent compares what the decoder reads of two events.
func sameEvent(a, b wireEvent) bool {
	if a.Type != b.Type || a.Index != b.Index || (a.Delta == nil) != (b.Delta == nil) || (a.ContentBlock == nil) != (b.ContentBlock == nil) {
		return false
	}
	if a.Delta != nil && *a.Delta != *b.Delta {
		return false
	}
	return a.ContentBlock == nil || reflect.DeepEqual(*a.ContentBlock, *b.ContentBlock)
}

// The scanner must agree with encoding/json on everything it accepts, and
// reject (hand over to encoding/json) anything else.
func TestScanEventMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	accepted := []string{
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"plain"}}`,
		`{"type":"content_block_delta","index":12,"delta":{"type":"input_json_delta","partial_json":"{\"sql\": \"SEL\\\\ECT\"}"}}`,
		` { "index" : 3 , "type" : "content_block_delta" , "delta" : { "text" : "a\u00e9\ud83d\ude00\n\t\/" , "type" : "text_delta" } } `,
		`{"type":"content_block_delta","index":1,"delta":{"type":"thinking_delta","thinking":"x","extra":[1,{"a":null},true,-2.5e3]},"more":{"k":"v"}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"signature_delta","signature":"EqQB+/="}}`,
		`{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"lone \ud800 surrogate"}}`,
		`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"toolu_1","name":"run_sql","input":{"a":[1,"x"]}}}`,
		`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
		`{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"AP9z+/=="}}`,
		`{"type":"content_block_stop","index":7}`,
		`{"type":"ping"}`,
		`{"type":"message_stop"}`,
	}
	for _, in := range accepted {
		var got wireEvent
		var d wireDelta
		var blk wireEventBlock
		if !scanEvent([]byte(in), &got, &d, &blk) {
			t.Errorf("not scanned: %s", in)
			continue
		}
		var want wireEvent
		if err := json.Unmarshal([]byte(in), &want); err != nil {
			t.Fatal(err)
		}
		if !sameEvent(got, want) {
			t.Errorf("%s\n got %+v\nwant %+v", in, got, want)
		}
	}
	rejected := []string{
		`{"type":"message_delta","delta":{"stop_reason":"end_turn"}}`,
		`{"type":"message_start","message":{"usage":{"input_tokens":5}}}`,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
		`{"type":"content_block_start","index":0,"Content_Block":{"type":"text"}}`,
		`{"type":"content_block_delta","deltA":{"000":"00"}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"cut`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}} trailing`,
		`{"type":"content_block_delta","index":"0","delta":{}}`,
		`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"bad \x escape"}}`,
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"\xff\"}}",
		"{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"a\x01b\"}}",
		`{"type":"content_block_delta","index":007,"delta":{}}`,
		`{"type":"content_block_delta","index":0,"x":bogus,"delta":{}}`,
		`[]`,
	}
	for _, in := range rejected {
		var ev wireEvent
		var d wireDelta
		var blk wireEventBlock
		if scanEvent([]byte(in), &ev, &d, &blk) {
			t.Errorf("scanned, should be left to encoding/json: %s", in)
		}
	}
}

func FuzzScanEvent(f *testing.F) {
	f.Add([]byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi\n"}}`))
	f.Add([]byte(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"a\":\"\\u00e9\"}"}}`))
	f.Add([]byte(`{"type":"content_block_start","index":3,"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var got wireEvent
		var d wireDelta
		var blk wireEventBlock
		if !scanEvent(data, &got, &d, &blk) {
			return
		}
		var want wireEvent
		if err := json.Unmarshal(data, &want); err != nil {
			// Only keys and skipped members are not validated (see
			// internal/jsonscan); nothing read may differ.
			return
		}
		if !sameEvent(got, want) {
			t.Fatalf("%q: scanner %+v %+v, encoding/json %+v", data, got, d, want)
		}
	})
}
