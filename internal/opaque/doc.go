// Package opaque converts the provider-opaque strings that Anthropic
// (redacted_thinking data) and Gemini (thoughtSignature) send as base64
// into the bytes bichat keeps in domain.Reasoning.Opaque and
// domain.ToolCall.Opaque, and back, so that a replayed conversation sends
// each provider exactly the string it produced.
package opaque
