//go:build !race

package kb_test

const raceEnabled = false
