package gemini

import "encoding/base64"

// rawProvider marks Reasoning.Opaque that holds the wire string itself
// because it was not canonical base64.
const rawProvider = providerName + "/raw"

// opaqueFromWire turns a thoughtSignature (proto bytes, base64 in JSON) into the bytes
// kept in domain.Reasoning.Opaque or domain.ToolCall.Opaque: the decoded bytes when the string is
// canonical standard base64 (so they re-encode to the very same string),
// else the string's own bytes, marked with rawProvider.
func opaqueFromWire(s string) (opaque []byte, provider string) {
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && base64.StdEncoding.EncodeToString(b) == s {
		return b, providerName
	}
	return []byte(s), rawProvider
}

// opaqueToWire is the inverse of opaqueFromWire.
func opaqueToWire(opaque []byte, provider string) string {
	if provider == rawProvider {
		return string(opaque)
	}
	return base64.StdEncoding.EncodeToString(opaque)
}
