package domain

import (
	"encoding/json"
	"time"
)

// CheckpointKind says what an interrupted run waits for.
type CheckpointKind string

// Checkpoint kinds.
const (
	// CheckpointQuestion: the agent asked the user questions.
	CheckpointQuestion CheckpointKind = "question"
	// CheckpointConfirmation: a write or destructive tool waits for the
	// host's approval.
	CheckpointConfirmation CheckpointKind = "confirmation"
)

// Checkpoint is the persisted state of an interrupted run. Data is the
// serialised agents.Checkpoint; the domain layer treats it as opaque.
type Checkpoint struct {
	ID        string          `json:"id"`
	TenantID  string          `json:"tenant_id"`
	SessionID string          `json:"session_id"`
	MessageID string          `json:"message_id"`
	OwnerID   string          `json:"owner_id"`
	RunID     string          `json:"run_id"`
	Kind      CheckpointKind  `json:"kind"`
	Data      json.RawMessage `json:"data"`
	CreatedAt time.Time       `json:"created_at"`
	// ExpiresAt, when set, is when the checkpoint stops being resumable.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}
