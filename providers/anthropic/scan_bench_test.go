package anthropic

import (
	"encoding/json"
	"testing"
)

// BenchmarkScanDelta compares the hand-written scanner on a typical
// text_delta event with encoding/json (the baseline, measured in the same
// run); "x_baseline" is scanner time over encoding/json time.
func BenchmarkScanDelta(b *testing.B) {
	data := []byte(`{"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":"word123 "}}`)
	var baseNs float64
	b.Run("baseline_encoding_json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var ev wireEvent
			if err := json.Unmarshal(data, &ev); err != nil {
				b.Fatal(err)
			}
		}
		baseNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	})
	b.Run("scanner", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		var ev wireEvent
		var d wireDelta
		var blk wireEventBlock
		for b.Loop() {
			ev, d = wireEvent{}, wireDelta{}
			if !scanEvent(data, &ev, &d, &blk) {
				b.Fatal("not scanned")
			}
		}
		if baseNs > 0 {
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/baseNs, "x_baseline")
		}
	})
}
