package bichat

import (
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb/recipes"
)

// The JSON shapes of the HTTP API (see the OpenAPI document the handler
// serves). They are views of the domain types without storage-only fields
// (tenant ids, leases) and without provider data that must not leave the
// server (reasoning signatures, opaque provider blobs).

// SessionView is a session as the API shows it.
type SessionView struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	// Model is the model the session's questions go to; empty for the
	// service's default model.
	Model     string    `json:"model,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// SessionPage is one page of sessions.
type SessionPage struct {
	Items      []SessionView `json:"items"`
	Total      int           `json:"total"`
	Page       int           `json:"page"`
	PageSize   int           `json:"page_size"`
	TotalPages int           `json:"total_pages"`
}

// MessageView is a message as the API shows it. Status is "generating"
// while its run goes on; stream it from the message's events route.
type MessageView struct {
	ID          string                 `json:"id"`
	SessionID   string                 `json:"session_id"`
	Role        domain.Role            `json:"role"`
	Status      domain.MessageStatus   `json:"status"`
	RunID       string                 `json:"run_id,omitempty"`
	Parts       []domain.Part          `json:"parts"`
	Metadata    domain.MessageMetadata `json:"metadata"`
	Citations   []domain.Citation      `json:"citations,omitempty"`
	Attachments []domain.Attachment    `json:"attachments,omitempty"`
	CreatedAt   time.Time              `json:"created_at"`
	UpdatedAt   time.Time              `json:"updated_at"`
}

// MessageList is a session's messages, oldest first.
type MessageList struct {
	Items []MessageView `json:"items"`
}

// PostMessageResponse answers a new question: the stored question and the
// assistant message its answer goes into (status "generating"; stream it
// from AssistantMessage.ID's events route).
type PostMessageResponse struct {
	UserMessage      MessageView `json:"user_message"`
	AssistantMessage MessageView `json:"assistant_message"`
}

// RunResponse answers a request that starts a run on an existing message
// (answers, approve, deny): the message, generating again under a new
// run (its events are numbered from 1).
type RunResponse struct {
	Message MessageView `json:"message"`
}

// ArtifactView is an artifact's metadata; URL downloads its content.
type ArtifactView struct {
	ID        string              `json:"id"`
	SessionID string              `json:"session_id"`
	MessageID string              `json:"message_id"`
	Kind      domain.ArtifactKind `json:"kind"`
	Name      string              `json:"name"`
	MediaType string              `json:"media_type"`
	SHA256    string              `json:"sha256"`
	Size      int64               `json:"size"`
	CreatedAt time.Time           `json:"created_at"`
	URL       string              `json:"url"`
}

// ArtifactList is a message's artifacts.
type ArtifactList struct {
	Items []ArtifactView `json:"items"`
}

// ModelView describes a model a session can use (SessionOptions.Model).
type ModelView struct {
	Name          string              `json:"name"`
	Provider      string              `json:"provider"`
	ContextWindow int                 `json:"context_window"`
	Capabilities  agents.Capabilities `json:"capabilities"`
	// Default marks the service's model (sessions without a model use
	// it).
	Default bool `json:"default"`
}

// ModelList lists the models the handler offers.
type ModelList struct {
	Items []ModelView `json:"items"`
}

// RecipeView is a saved recipe: the question and the SQL that answered
// it.
type RecipeView struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	SQL      []string `json:"sql"`
	Datasets []string `json:"datasets"`
	// SuccessCount is 1 for a new recipe and grows each time the same
	// question is saved again on the same schema.
	SuccessCount int `json:"success_count"`
	// Verified is set when the host marked the recipe a verified query
	// (kb/recipes SetVerified): it is offered first for matching
	// questions.
	Verified  bool      `json:"verified"`
	CreatedAt time.Time `json:"created_at"`
}

func sessionView(s *domain.Session) SessionView {
	return SessionView{ID: s.ID, Title: s.Title, Model: s.Model, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

func messageView(m *domain.Message) MessageView {
	parts := make([]domain.Part, len(m.Parts))
	for i, p := range m.Parts {
		// Provider data stays on the server.
		if p.Reasoning != nil {
			r := domain.Reasoning{Text: p.Reasoning.Text}
			p.Reasoning = &r
		}
		if p.ToolCall != nil {
			c := domain.ToolCall{ID: p.ToolCall.ID, Name: p.ToolCall.Name, Arguments: p.ToolCall.Arguments}
			p.ToolCall = &c
		}
		parts[i] = p
	}
	return MessageView{ID: m.ID, SessionID: m.SessionID, Role: m.Role, Status: m.Status, RunID: m.RunID,
		Parts: parts, Metadata: m.Metadata, Citations: m.Citations, Attachments: m.Attachments,
		CreatedAt: m.CreatedAt, UpdatedAt: m.UpdatedAt}
}

func artifactView(a *domain.Artifact, url string) ArtifactView {
	return ArtifactView{ID: a.ID, SessionID: a.SessionID, MessageID: a.MessageID, Kind: a.Kind, Name: a.Name,
		MediaType: a.MediaType, SHA256: a.SHA256, Size: a.Size, CreatedAt: a.CreatedAt, URL: url}
}

func recipeView(r *recipes.Recipe) RecipeView {
	v := RecipeView{ID: r.ID, Question: r.Question, SQL: r.SQL, Datasets: r.Datasets, SuccessCount: r.SuccessCount, Verified: r.Verified, CreatedAt: r.CreatedAt}
	if v.SQL == nil {
		v.SQL = []string{}
	}
	if v.Datasets == nil {
		v.Datasets = []string{}
	}
	return v
}
