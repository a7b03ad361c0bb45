// Package llmtest is test scaffolding the LLM provider packages share:
// an in-memory HTTP transport serving a recorded stream, the stream
// decoding benchmark with its bufio baseline and CPU-time ratios, the
// goroutine-leak check for TestMain, and the gate and tool round trip of
// the live tests against the real APIs.
//
// It is an ordinary package so that the providers' _test files can import
// it; nothing outside tests should.
package llmtest
