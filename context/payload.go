package context

import (
	"encoding/json"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

// Rules is the payload of system-rule blocks (codec "rules").
type Rules struct {
	// Name optionally labels the rule set ("base", "tenant").
	Name string `json:"name,omitempty"`
	Text string `json:"text"`
}

// ToolSchema is the payload of tool-schema blocks (codec "tool_schema").
type ToolSchema struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Schema      json.RawMessage `json:"schema"`
}

// ToolSchemaOf returns the model-facing part of a tool spec.
func ToolSchemaOf(s agents.ToolSpec) ToolSchema {
	return ToolSchema{Name: s.Name, Description: s.Description, Schema: s.Schema}
}

// QueryResult is the payload of query-result blocks (codec
// "query_result"): a table a tool fetched, shown to the model as a markdown
// table capped in rows and characters.
type QueryResult struct {
	// Name is how tools refer to the result ("result_1").
	Name    string         `json:"name,omitempty"`
	SQL     string         `json:"sql,omitempty"`
	Columns []tools.Column `json:"columns"`
	// Rows hold cell values; the codec stores them as text (tools.FormatCell).
	Rows [][]any `json:"rows"`
	// TotalRows is how many rows the query returned (0: len(Rows)).
	TotalRows int `json:"total_rows,omitempty"`
	// Truncated is true when the source had more rows than TotalRows.
	Truncated bool `json:"truncated,omitempty"`
	// Duration is how long the query took.
	Duration time.Duration `json:"duration,omitempty"`
}

// QueryResultOf returns the payload for a tools.Table that took d.
func QueryResultOf(t *tools.Table, d time.Duration) QueryResult {
	return QueryResult{Name: t.Name, SQL: t.SQL, Columns: t.Columns, Rows: t.Rows, Truncated: t.Truncated, Duration: d}
}

// KBHit is the payload of knowledge-base hit blocks (codec "kb_hit").
type KBHit struct {
	Title    string          `json:"title"`
	Snippet  string          `json:"snippet"`
	Citation domain.Citation `json:"citation"`
	Score    float64         `json:"score,omitempty"`
}

// Recipe is the payload of recipe blocks (codec "recipe"): a question and
// the SQL that answered it before.
type Recipe struct {
	Question string   `json:"question"`
	SQL      []string `json:"sql"`
	// Successes counts the times the recipe was marked good.
	Successes int      `json:"successes,omitempty"`
	Datasets  []string `json:"datasets,omitempty"`
	// Verified marks a query the host checked (kb/recipes
	// Recipe.Verified); the block then reads "Recipe (verified query,
	// ...)". Unverified recipes render and hash exactly as before the
	// field existed.
	Verified bool `json:"verified,omitempty"`
}

// State is the payload of state blocks (codec "state"): what the user sees
// in the host application right now.
type State struct {
	// Page is the current page or view.
	Page string `json:"page,omitempty"`
	// Dataset is the selected dataset.
	Dataset string `json:"dataset,omitempty"`
	// Visible lists items on screen (charts, filters, rows).
	Visible []string `json:"visible,omitempty"`
	// Facts are further key/value facts, rendered sorted by key.
	Facts map[string]string `json:"facts,omitempty"`
}

// HistoryMessage is the payload of message blocks (codecs "message" for
// history and "step" for this run's steps).
type HistoryMessage struct {
	Role  domain.Role   `json:"role"`
	Parts []domain.Part `json:"parts"`
}

// MessageOf converts an agents.Message.
func MessageOf(m agents.Message) HistoryMessage { return HistoryMessage{Role: m.Role, Parts: m.Parts} }

// Message converts back to an agents.Message.
func (m HistoryMessage) Message() agents.Message { return agents.Message{Role: m.Role, Parts: m.Parts} }

// Summary is the payload of summary blocks (codec "summary"): the condensed
// oldest history, placed before the remaining history.
type Summary struct {
	Text string `json:"text"`
	// Messages is how many messages the summary stands for (earlier
	// summaries' counts included).
	Messages int `json:"messages"`
}

// Turn is the payload of the turn block (codec "turn"): the user's new
// message.
type Turn struct {
	Parts []domain.Part `json:"parts"`
}

// TextTurn returns a Turn with one text part.
func TextTurn(s string) Turn { return Turn{Parts: []domain.Part{domain.TextPart(s)}} }

// Text is the payload of generic text blocks (codec "text"), usable in any
// kind for host-specific context.
type Text struct {
	Title string `json:"title,omitempty"`
	Body  string `json:"body"`
}

// Redacted is the payload a block gets when the sensitivity ceiling redacts
// it and its codec has no Redactor.
type Redacted struct {
	Kind        Kind        `json:"kind"`
	Sensitivity Sensitivity `json:"sensitivity"`
}
