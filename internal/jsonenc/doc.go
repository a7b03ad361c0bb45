// Package jsonenc appends JSON strings exactly as encoding/json writes
// them, without reflection or allocation, for the hand-written encoders of
// hot events (agents.AppendEvent and the SDK's SSE writer). Tests hold it
// byte for byte to encoding/json.
package jsonenc
