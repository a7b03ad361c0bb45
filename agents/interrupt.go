package agents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Question is one structured question the agent asks the user through the
// built-in ask_user_question tool.
type Question struct {
	// ID identifies the question within the interrupt ("q1", "q2", ...
	// when the model gave none).
	ID       string `json:"id"`
	Question string `json:"question"`
	// Options, when present, are the choices to offer.
	Options []QuestionOption `json:"options,omitempty"`
	// MultiSelect allows choosing several options.
	MultiSelect bool `json:"multi_select,omitempty"`
	// AllowOther allows a free-text answer besides the options. Questions
	// without options always take free text.
	AllowOther bool `json:"allow_other,omitempty"`
}

// QuestionOption is one choice of a Question.
type QuestionOption struct {
	Label       string `json:"label"`
	Description string `json:"description,omitempty"`
}

// QuestionAnswer answers one question: chosen option labels, free text, or
// both (when the question allows other answers).
type QuestionAnswer struct {
	Selected []string `json:"selected,omitempty"`
	Text     string   `json:"text,omitempty"`
}

// Answers maps question ids to answers.
type Answers map[string]QuestionAnswer

// ErrInvalidAnswer matches errors from answers that do not fit the
// questions; the checkpoint stays usable. It also matches domain.ErrInvalid.
var ErrInvalidAnswer = fmt.Errorf("agents: invalid answer: %w", domain.ErrInvalid)

// ValidateAnswers checks answers against questions: every question
// answered, selected labels among the options, several labels only for
// multi-select questions, free text only where allowed, no unknown ids. It
// returns an error matching ErrInvalidAnswer and domain.ErrInvalid, whose
// domain.FieldErrors name each problem as "answers.<id>".
func ValidateAnswers(questions []Question, answers Answers) error {
	var ve domain.ValidationError
	known := make(map[string]bool, len(questions))
	for _, q := range questions {
		known[q.ID] = true
		field := "answers." + q.ID
		a, ok := answers[q.ID]
		text := strings.TrimSpace(a.Text)
		if !ok || (len(a.Selected) == 0 && text == "") {
			ve.Add(field, "is required")
			continue
		}
		if len([]rune(a.Text)) > domain.MaxMessageLen {
			ve.Add(field, fmt.Sprintf("text must be at most %d characters", domain.MaxMessageLen))
		}
		if len(q.Options) == 0 {
			if len(a.Selected) > 0 {
				ve.Add(field, "this question has no options; answer with text")
			}
			continue
		}
		if text != "" && !q.AllowOther {
			ve.Add(field, "choose one of the options; free text is not allowed")
		}
		if len(a.Selected) > 1 && !q.MultiSelect {
			ve.Add(field, "choose exactly one option")
		}
		for _, s := range a.Selected {
			if !slices.ContainsFunc(q.Options, func(o QuestionOption) bool { return o.Label == s }) {
				ve.Add(field, fmt.Sprintf("%q is not one of the options", s))
			}
		}
		if len(a.Selected) != len(slices.Compact(slices.Sorted(slices.Values(a.Selected)))) {
			ve.Add(field, "an option is chosen twice")
		}
	}
	for id := range answers {
		if !known[id] {
			ve.Add("answers."+id, "no such question")
		}
	}
	if len(ve.Fields) == 0 {
		return nil
	}
	slices.SortFunc(ve.Fields, func(a, b domain.FieldError) int { return strings.Compare(a.Field, b.Field) })
	return fmt.Errorf("%w: %w", ErrInvalidAnswer, &ve)
}

// formatAnswers renders answers for the model.
func formatAnswers(questions []Question, answers Answers) string {
	var b strings.Builder
	b.WriteString("The user answered:")
	for _, q := range questions {
		a := answers[q.ID]
		b.WriteString("\n- ")
		b.WriteString(q.Question)
		b.WriteString(" → ")
		parts := slices.Clone(a.Selected)
		if t := strings.TrimSpace(a.Text); t != "" {
			parts = append(parts, t)
		}
		b.WriteString(strings.Join(parts, "; "))
	}
	return b.String()
}

// ConfirmationRequest asks the host to approve a write or destructive tool
// call. Show the user the tool, its description and arguments; pass Token
// back to Executor.Approve or Executor.Deny.
type ConfirmationRequest struct {
	// Token is bound to the tenant, the user, the tool, a hash of the
	// arguments and ExpiresAt; it works once.
	Token       string          `json:"token"`
	CallID      string          `json:"call_id"`
	Tool        string          `json:"tool"`
	Description string          `json:"description"`
	Permission  Permission      `json:"permission"`
	Arguments   json.RawMessage `json:"arguments"`
	// ArgumentsHash is the hex SHA-256 of Arguments.
	ArgumentsHash string    `json:"arguments_hash"`
	ExpiresAt     time.Time `json:"expires_at"`
}

// Decision is the host's answer to a ConfirmationRequest. TenantID and
// UserID identify who decides; they must match the run's.
type Decision struct {
	Token    string `json:"token"`
	TenantID string `json:"tenant_id"`
	UserID   string `json:"user_id"`
	// Reason, for a denial, is passed to the model.
	Reason string `json:"reason,omitempty"`
}

// CheckpointVersion is the format version of the Checkpoint this code
// writes, in Checkpoint.Version and the "version" member of its JSON.
//
// Version 1 is the format bichat has written since checkpoints exist; a
// checkpoint stored without a version is read as version 1. Decoding
// (json.Unmarshal into a Checkpoint, or [DecodeCheckpoint]) upgrades every
// earlier version to the current shape, so a checkpoint stored by an
// older release resumes in a newer one; a version newer than this constant
// is refused with [ErrCheckpointVersion] (roll the newer release forward
// rather than resuming its checkpoints with older code). Encoded examples of
// every version are kept in agents/testdata/checkpoints and resumed by the
// tests, so a format change must raise this constant and keep the older
// fixtures resuming.
const CheckpointVersion = 1

// ErrCheckpointVersion reports a checkpoint whose format version this code
// cannot read: newer than [CheckpointVersion] (written by a newer bichat)
// or not a version at all. It also matches [ErrBadCheckpoint].
var ErrCheckpointVersion = fmt.Errorf("%w: unsupported format version", ErrBadCheckpoint)

// Checkpoint is the complete, serialisable state of an interrupted run.
// Store it (as JSON) and pass it back to Resume, Approve or Deny, possibly
// in another process: it holds everything needed to continue exactly where
// the run stopped. Decoding it from JSON accepts every format version up to
// [CheckpointVersion] (see there).
type Checkpoint struct {
	// Version is the format version, [CheckpointVersion] for checkpoints
	// produced or decoded by this code.
	Version   int                   `json:"version"`
	ID        string                `json:"id"`
	RunID     string                `json:"run_id"`
	Agent     string                `json:"agent,omitempty"`
	Kind      domain.CheckpointKind `json:"kind"`
	TenantID  string                `json:"tenant_id,omitempty"`
	UserID    string                `json:"user_id,omitempty"`
	SessionID string                `json:"session_id,omitempty"`
	MessageID string                `json:"message_id,omitempty"`
	System    string                `json:"system,omitempty"`
	// History is the conversation before this run.
	History []Message `json:"history,omitempty"`
	// Messages is the run so far; the last one holds the tool results of
	// the interrupted turn, with an empty result at Pending.Part.
	Messages []Message `json:"messages"`
	// Pending is the call that waits.
	Pending      PendingCall          `json:"pending"`
	Questions    []Question           `json:"questions,omitempty"`
	Confirmation *ConfirmationRequest `json:"confirmation,omitempty"`
	Turn         int                  `json:"turn"`
	ToolCalls    int                  `json:"tool_calls"`
	// LimitHit records that the tool-call cap was reached in this run.
	LimitHit bool         `json:"limit_hit,omitempty"`
	Usage    domain.Usage `json:"usage"`
	// CostUSD is what the run's model calls cost up to the interrupt.
	CostUSD   float64   `json:"cost_usd,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// PendingCall is the tool call an interrupt waits on.
type PendingCall struct {
	CallID    string          `json:"call_id"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// Part is the index of its result in the last message of Messages.
	Part int `json:"part"`
}

// ErrBadCheckpoint reports a checkpoint that cannot be resumed.
var ErrBadCheckpoint = errors.New("agents: unusable checkpoint")

// DecodeCheckpoint decodes a checkpoint stored as JSON (as encoding/json
// encodes a Checkpoint), upgrading an older format version to the current
// one. A version newer than [CheckpointVersion] yields an error matching
// [ErrCheckpointVersion]; malformed JSON an error matching
// [ErrBadCheckpoint]. json.Unmarshal into a Checkpoint does the same.
func DecodeCheckpoint(data []byte) (*Checkpoint, error) {
	if t := bytes.TrimSpace(data); len(t) == 0 || string(t) == "null" {
		return nil, fmt.Errorf("agents: decode checkpoint: %w: empty", ErrBadCheckpoint)
	}
	var cp Checkpoint
	if err := cp.UnmarshalJSON(data); err != nil {
		return nil, err
	}
	return &cp, nil
}

// checkpointUpgrades[i] turns the JSON object of a version i+1 checkpoint
// into version i+2. It holds CheckpointVersion-1 steps: raising
// CheckpointVersion means adding the step from the previous version (and
// fixtures of the new version in testdata/checkpoints), which the tests
// enforce.
var checkpointUpgrades = []func(obj map[string]json.RawMessage) error{}

// UnmarshalJSON decodes a checkpoint of any format version up to
// CheckpointVersion into the current shape; see [DecodeCheckpoint].
func (cp *Checkpoint) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	var head struct {
		Version *int `json:"version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return fmt.Errorf("agents: decode checkpoint: %w: %w", ErrBadCheckpoint, err)
	}
	version := 1 // checkpoints stored before the field existed
	if head.Version != nil {
		version = *head.Version
	}
	switch {
	case version > CheckpointVersion:
		return fmt.Errorf("agents: decode checkpoint: %w: version %d was written by a newer bichat; this build reads versions 1 to %d",
			ErrCheckpointVersion, version, CheckpointVersion)
	case version < 1:
		return fmt.Errorf("agents: decode checkpoint: %w: version %d is not a checkpoint format (versions start at 1)",
			ErrCheckpointVersion, version)
	case version < CheckpointVersion:
		up, err := upgradeCheckpoint(data, version, checkpointUpgrades)
		if err != nil {
			return err
		}
		data = up
	}
	// plain has Checkpoint's fields without its methods, so decoding it
	// does not recurse into UnmarshalJSON.
	type plain Checkpoint
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("agents: decode checkpoint (version %d): %w: %w", version, ErrBadCheckpoint, err)
	}
	p.Version = CheckpointVersion
	*cp = Checkpoint(p)
	return nil
}

// upgradeCheckpoint applies steps[from-1:] in order to the JSON object of
// a version-from checkpoint and returns the upgraded JSON.
func upgradeCheckpoint(data []byte, from int, steps []func(map[string]json.RawMessage) error) ([]byte, error) {
	if from < 1 || from > len(steps)+1 {
		return nil, fmt.Errorf("agents: upgrade checkpoint: %w: no upgrade from version %d", ErrCheckpointVersion, from)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		return nil, fmt.Errorf("agents: upgrade checkpoint: %w: %w", ErrBadCheckpoint, err)
	}
	if obj == nil {
		return nil, fmt.Errorf("agents: upgrade checkpoint: %w: not a JSON object", ErrBadCheckpoint)
	}
	for v := from; v <= len(steps); v++ {
		if err := steps[v-1](obj); err != nil {
			return nil, fmt.Errorf("agents: upgrade checkpoint from version %d to %d: %w: %w", v, v+1, ErrBadCheckpoint, err)
		}
		obj["version"] = json.RawMessage(strconv.Itoa(v + 1))
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("agents: upgrade checkpoint from version %d: %w", from, err)
	}
	return out, nil
}

func (cp *Checkpoint) check(kind domain.CheckpointKind) error {
	if cp == nil {
		return fmt.Errorf("%w: nil", ErrBadCheckpoint)
	}
	if cp.Version != CheckpointVersion {
		return fmt.Errorf("%w: version %d, this code resumes version %d (decode stored checkpoints with json.Unmarshal or DecodeCheckpoint, which upgrade older versions)",
			ErrCheckpointVersion, cp.Version, CheckpointVersion)
	}
	if cp.Kind != kind {
		return fmt.Errorf("%w: it waits for a %s, not a %s", ErrBadCheckpoint, cp.Kind, kind)
	}
	if len(cp.Messages) == 0 {
		return fmt.Errorf("%w: no messages", ErrBadCheckpoint)
	}
	last := cp.Messages[len(cp.Messages)-1]
	if last.Role != domain.RoleTool || cp.Pending.Part < 0 || cp.Pending.Part >= len(last.Parts) {
		return fmt.Errorf("%w: pending result slot missing", ErrBadCheckpoint)
	}
	slot := last.Parts[cp.Pending.Part]
	if slot.ToolResult == nil || slot.ToolResult.CallID != cp.Pending.CallID {
		return fmt.Errorf("%w: pending result slot does not match call %s", ErrBadCheckpoint, cp.Pending.CallID)
	}
	if kind == domain.CheckpointConfirmation && cp.Confirmation == nil {
		return fmt.Errorf("%w: no confirmation request", ErrBadCheckpoint)
	}
	return nil
}
