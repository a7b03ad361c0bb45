package opaque

import "encoding/base64"

// Codec converts one provider's opaque strings. Bytes that decoded from
// canonical standard base64 are tagged with Provider; any other string is
// kept as its own bytes and tagged with Raw, so that ToWire returns it
// unchanged.
type Codec struct {
	// Provider tags decoded bytes, e.g. "anthropic".
	Provider string
	// Raw tags strings kept verbatim: Provider + "/raw".
	Raw string
}

// For returns the codec of provider.
func For(provider string) Codec {
	return Codec{Provider: provider, Raw: provider + "/raw"}
}

// FromWire turns a wire string into the bytes to keep and the provider to
// tag them with: the decoded bytes when s is canonical standard base64 (so
// they re-encode to the very same string), else s's own bytes, tagged Raw.
func (c Codec) FromWire(s string) (opaque []byte, provider string) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && base64.StdEncoding.EncodeToString(b) == s {
		return b, c.Provider
	}
	return []byte(s), c.Raw
}

// ToWire is the inverse of FromWire.
func (c Codec) ToWire(opaque []byte, provider string) string {
	if provider == c.Raw {
		return string(opaque)
	}
	return base64.StdEncoding.EncodeToString(opaque)
}

// Owns reports whether provider is one of the tags FromWire produces:
// whether opaque bytes so tagged can be sent back to this provider.
func (c Codec) Owns(provider string) bool {
	return provider == c.Provider || provider == c.Raw
}
