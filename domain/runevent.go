package domain

import (
	"encoding/json"
	"time"
)

// RunEvent is one persisted event of a run, kept so that a client that lost
// its connection can replay everything after the last sequence number it saw.
type RunEvent struct {
	TenantID  string `json:"tenant_id"`
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	MessageID string `json:"message_id"`
	// Seq increases strictly within a run, starting at 1.
	Seq  int64     `json:"seq"`
	Type string    `json:"type"`
	Time time.Time `json:"time"`
	// Data is the JSON encoding of the event.
	Data json.RawMessage `json:"data"`
}
