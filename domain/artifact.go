package domain

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// ArtifactKind classifies an artifact.
type ArtifactKind string

// Artifact kinds.
const (
	ArtifactTable  ArtifactKind = "table"
	ArtifactChart  ArtifactKind = "chart"
	ArtifactReport ArtifactKind = "report"
	ArtifactFile   ArtifactKind = "file"
)

// Valid reports whether k is a known kind.
func (k ArtifactKind) Valid() bool {
	switch k {
	case ArtifactTable, ArtifactChart, ArtifactReport, ArtifactFile:
		return true
	}
	return false
}

// Artifact is a file produced by a tool: a result table, a chart, a report.
// Tools return artifacts in their result; the service stamps tenant,
// session and message ids and saves them.
type Artifact struct {
	ID        string       `json:"id"`
	TenantID  string       `json:"tenant_id"`
	SessionID string       `json:"session_id"`
	MessageID string       `json:"message_id"`
	Kind      ArtifactKind `json:"kind"`
	Name      string       `json:"name"`
	MediaType string       `json:"media_type"`
	// SHA256 is the hex-encoded SHA-256 of the content.
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size"`
	// URI locates the content in the host's artifact store.
	URI       string            `json:"uri,omitempty"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	CreatedAt time.Time         `json:"created_at"`
}

// ContentHash returns the hex-encoded SHA-256 of content, the form used in
// Artifact.SHA256 and Attachment.SHA256.
func ContentHash(content []byte) string {
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:])
}
