package opaque_test

import (
	"bytes"
	"encoding/base64"
	"testing"

	"github.com/bichat-go/bichat/internal/opaque"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c := opaque.For("gemini")
	for _, tc := range []struct {
		wire, provider string
		bytes          []byte
	}{
		{"CiQB+/8=", "gemini", []byte{0x0a, 0x24, 0x01, 0xfb, 0xff}},
		{"", "gemini", []byte{}},
		{"not base64!", "gemini/raw", []byte("not base64!")},
		{"CiQB", "gemini", []byte{0x0a, 0x24, 0x01}},
		{"CiR=", "gemini/raw", []byte("CiR=")},         // decodes, but not canonically
		{"CiQB+/8", "gemini/raw", []byte("CiQB+/8")},   // unpadded
		{"CiQB-_8=", "gemini/raw", []byte("CiQB-_8=")}, // URL alphabet
		{"Ci QB", "gemini/raw", []byte("Ci QB")},       // space
	} {
		b, prov := c.FromWire(tc.wire)
		if prov != tc.provider || !bytes.Equal(b, tc.bytes) {
			t.Errorf("FromWire(%q) = %q, %q; want %q, %q", tc.wire, b, prov, tc.bytes, tc.provider)
		}
		if !c.Owns(prov) {
			t.Errorf("Owns(%q) = false", prov)
		}
		if back := c.ToWire(b, prov); back != tc.wire {
			t.Errorf("ToWire(FromWire(%q)) = %q", tc.wire, back)
		}
	}
}

func TestOwns(t *testing.T) {
	t.Parallel()
	c := opaque.For("anthropic")
	for prov, want := range map[string]bool{"anthropic": true, "anthropic/raw": true, "gemini": false, "gemini/raw": false, "": false} {
		if got := c.Owns(prov); got != want {
			t.Errorf("Owns(%q) = %v", prov, got)
		}
	}
	// Bytes from elsewhere are encoded as base64.
	if got := c.ToWire([]byte("x"), "openai"); got != base64.StdEncoding.EncodeToString([]byte("x")) {
		t.Errorf("ToWire = %q", got)
	}
}
