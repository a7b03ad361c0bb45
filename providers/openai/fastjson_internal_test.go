package openai

import "testing"

var benchChunk = []byte(`{"id":"chatcmpl-fake1","object":"chat.completion.chunk","created":1700000000,"model":"fake-model","system_fingerprint":"fp_fake","obfuscation":"xYz","choices":[{"index":0,"delta":{"content":"word17 "},"logprobs":null,"finish_reason":null}],"usage":null}`)

func BenchmarkFastChunk(b *testing.B) {
	var ck chunkJSON
	b.SetBytes(int64(len(benchChunk)))
	for b.Loop() {
		if !fastChunk(benchChunk, &ck) {
			b.Fatal("declined")
		}
	}
}
