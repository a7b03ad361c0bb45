//go:build race

package kb_test

// raceEnabled is set when the tests run under the race detector, which
// makes CPU-heavy quality tests subsample.
const raceEnabled = true
