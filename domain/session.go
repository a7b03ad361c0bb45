package domain

import "time"

// Session is one conversation. It belongs to exactly one tenant and one
// owner; other users, even in the same tenant, cannot see it.
type Session struct {
	ID       string `json:"id"`
	TenantID string `json:"tenant_id"`
	OwnerID  string `json:"owner_id"`
	// Title is 1 to 255 characters.
	Title string `json:"title"`
	// Model is the name of the model chosen for this session; empty means
	// the service's default model.
	Model     string    `json:"model,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// Limits on user-supplied text, in Unicode code points.
const (
	MaxTitleLen   = 255
	MaxMessageLen = 10000
)
