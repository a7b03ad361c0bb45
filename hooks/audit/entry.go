package audit

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bichat-go/bichat/internal/canonjson"
)

// ZeroHash is the Prev of every chain's first entry (Seq 1): 64 zeros.
const ZeroHash = "0000000000000000000000000000000000000000000000000000000000000000"

// TimeLayout is the one textual form of Entry.Time, in the hashed
// encoding and in the JSONL file: RFC 3339, UTC, always six fractional
// digits (microseconds), e.g. "2026-03-01T09:30:00.000000Z".
const TimeLayout = "2006-01-02T15:04:05.000000Z"

// Entry types written by Recorder.Handle. Hosts recording their own
// entries with Recorder.Record may use other types.
const (
	// TypeQuestion is a user's question (hooks.MessageSave, role user):
	// data {"text"}.
	TypeQuestion = "question"
	// TypeAnswer is a complete assistant answer (hooks.MessageSave, role
	// assistant, status complete): data {"text","cost_usd","usage"}.
	TypeAnswer = "answer"
	// TypeFailure is a failed assistant message (hooks.MessageSave,
	// status failed): data {"error_code","cost_usd"}.
	TypeFailure = "failure"
	// TypeModelCall is one model call (hooks.LLMResponse): data
	// {"provider","model","turn","attempt","usage","stop_reason",
	// "tool_calls","cost_usd","error"}.
	TypeModelCall = "model_call"
	// TypeToolCall is a tool call about to run (hooks.ToolStart): data
	// {"call_id","tool","arguments"}.
	TypeToolCall = "tool_call"
	// TypeSQL is a statement a data tool ran or that failed in the
	// database (hooks.SQLQuery): data {"call_id","tool","dialect","sql",
	// "rows","truncated","error","reason"}.
	TypeSQL = "sql"
	// TypeDecision is a policy decision (hooks.Decision, and hooks.SQLQuery
	// with Error "rejected", recorded with policy "sql_read_only" and
	// outcome "refused"): data {"policy","outcome","tool","call_id",
	// "reason"} (+ "sql" for refused statements).
	TypeDecision = "decision"
	// TypeInterrupt is a run stopping for the user (hooks.Interrupt): data
	// {"reason","tool","call_id"}; reason "confirmation" means a
	// confirmation was requested.
	TypeInterrupt = "interrupt"
	// TypeArtifact is a stored artifact (hooks.ArtifactSave): data
	// {"artifact_id","name","media_type","sha256","size","tool","call_id"}.
	TypeArtifact = "artifact"
	// TypeBudgetExceeded is a run stopped by a budget
	// (hooks.BudgetExceeded): data {"scope","limit_usd","spent_usd"}.
	TypeBudgetExceeded = "budget_exceeded"
	// TypeQuotaExceeded is a request refused by a quota
	// (hooks.QuotaExceeded): data {"scope","limit","retry_after_ms"}.
	TypeQuotaExceeded = "quota_exceeded"
	// TypeRunError is a failed run (hooks.AgentError): data
	// {"agent","code","error"}.
	TypeRunError = "run_error"
)

// Entry is one link of a tenant's audit chain.
//
// Hash is the lowercase hex SHA-256 of the canonical JSON encoding
// (package internal/canonjson: object keys sorted, no whitespace, minimal
// string escaping, integers written with their exact digits) of this
// object, which holds every field but Hash:
//
//	{"data":<Data>,"message_id":"…","prev":"…","run_id":"…","seq":<Seq>,
//	 "session_id":"…","tenant_id":"…","time":"<Time in TimeLayout>",
//	 "type":"…","user_id":"…"}
//
// Every member is present even when its value is empty; Data is a JSON
// object ({} when there is none). A third party re-verifies an entry by
// parsing its JSONL line (or a database row), removing the "hash" member,
// canonicalising the rest (RFC 8785 gives the same bytes for the values
// bichat writes) and comparing the SHA-256 with Hash; then checks that
// Prev equals the previous entry's Hash (ZeroHash for Seq 1) and that Seq
// counts 1, 2, 3, ... — see Verify.
type Entry struct {
	// TenantID names the chain: each tenant has its own chain.
	TenantID string
	// Seq is the entry's position in the tenant's chain: 1, 2, 3, ...
	Seq uint64
	// Time is when the recorded event happened, in UTC at microsecond
	// precision.
	Time time.Time
	// Type says what happened: one of the Type constants, or a host's own.
	Type string
	// UserID, SessionID, MessageID and RunID place the entry; empty when
	// unknown.
	UserID, SessionID, MessageID, RunID string
	// Data holds the type's fields as a JSON object. Entries returned by
	// Recorder.Record and read back from a sink hold its canonical form.
	Data json.RawMessage
	// Prev is the Hash of the tenant's previous entry; ZeroHash for Seq 1.
	Prev string
	// Hash seals the entry (see the type's documentation).
	Hash string
}

// Anchor is the head of a tenant's chain as a sink records it, apart from
// the entries: the last Seq and its Hash. Seq 0 (with ZeroHash) is an
// empty chain. Verify uses an anchor to detect entries removed from the
// end of a chain; copy anchors somewhere an attacker of the sink cannot
// write (a different system, a signed report) to make rewriting the whole
// chain evident too.
type Anchor struct {
	TenantID string `json:"tenant_id"`
	Seq      uint64 `json:"seq"`
	Hash     string `json:"hash"`
}

// wireEntry is the JSON form of an Entry: the hashed object plus "hash".
type wireEntry struct {
	Data      json.RawMessage `json:"data"`
	Hash      string          `json:"hash,omitempty"`
	MessageID string          `json:"message_id"`
	Prev      string          `json:"prev"`
	RunID     string          `json:"run_id"`
	Seq       uint64          `json:"seq"`
	SessionID string          `json:"session_id"`
	TenantID  string          `json:"tenant_id"`
	Time      string          `json:"time"`
	Type      string          `json:"type"`
	UserID    string          `json:"user_id"`
}

func (e *Entry) wire(withHash bool) (wireEntry, error) {
	data, err := canonicalData(e.Data)
	if err != nil {
		return wireEntry{}, err
	}
	w := wireEntry{Data: data, MessageID: e.MessageID, Prev: e.Prev, RunID: e.RunID, Seq: e.Seq,
		SessionID: e.SessionID, TenantID: e.TenantID, Time: e.Time.UTC().Format(TimeLayout), Type: e.Type, UserID: e.UserID}
	if withHash {
		w.Hash = e.Hash
	}
	return w, nil
}

// canonicalData returns the canonical form of data, which must be a JSON
// object; empty data is {}.
func canonicalData(data json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return json.RawMessage("{}"), nil
	}
	c, err := canonjson.Canonicalize(data)
	if err != nil {
		return nil, fmt.Errorf("data is not valid JSON: %w", err)
	}
	if c[0] != '{' {
		return nil, errors.New("data is not a JSON object")
	}
	return c, nil
}

// ComputeHash returns the hash e should carry: the hex SHA-256 of the
// canonical encoding of every field but Hash (see Entry). It fails when
// Data is not a JSON object.
func (e *Entry) ComputeHash() (string, error) {
	w, err := e.wire(false)
	if err != nil {
		return "", fmt.Errorf("audit: hash entry: %w", err)
	}
	b, err := canonjson.Marshal(w)
	if err != nil {
		return "", fmt.Errorf("audit: hash entry: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// MarshalJSON returns the entry's canonical JSON form with its hash: the
// hashed object (see Entry) plus the member "hash". It is one line of a
// JSONL sink.
func (e Entry) MarshalJSON() ([]byte, error) {
	w, err := e.wire(true)
	if err != nil {
		return nil, fmt.Errorf("audit: encode entry: %w", err)
	}
	w.Hash = e.Hash
	b, err := canonjson.Marshal(w)
	if err != nil {
		return nil, fmt.Errorf("audit: encode entry: %w", err)
	}
	return b, nil
}

// UnmarshalJSON parses the form MarshalJSON writes, strictly: unknown
// members, a missing member and a time not in TimeLayout are errors.
func (e *Entry) UnmarshalJSON(b []byte) error {
	// Every member must be present: decode into pointers.
	var w struct {
		Data      json.RawMessage `json:"data"`
		Hash      *string         `json:"hash"`
		MessageID *string         `json:"message_id"`
		Prev      *string         `json:"prev"`
		RunID     *string         `json:"run_id"`
		Seq       *uint64         `json:"seq"`
		SessionID *string         `json:"session_id"`
		TenantID  *string         `json:"tenant_id"`
		Time      *string         `json:"time"`
		Type      *string         `json:"type"`
		UserID    *string         `json:"user_id"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return fmt.Errorf("audit: decode entry: %w", err)
	}
	if dec.More() {
		return errors.New("audit: decode entry: data after the object")
	}
	for name, p := range map[string]*string{"hash": w.Hash, "message_id": w.MessageID, "prev": w.Prev,
		"run_id": w.RunID, "session_id": w.SessionID, "tenant_id": w.TenantID, "time": w.Time, "type": w.Type, "user_id": w.UserID} {
		if p == nil {
			return fmt.Errorf("audit: decode entry: member %q is missing", name)
		}
	}
	if w.Seq == nil || w.Data == nil {
		return errors.New(`audit: decode entry: member "seq" or "data" is missing`)
	}
	t, err := ParseTime(*w.Time)
	if err != nil {
		return fmt.Errorf("audit: decode entry: %w", err)
	}
	*e = Entry{TenantID: *w.TenantID, Seq: *w.Seq, Time: t, Type: *w.Type, UserID: *w.UserID,
		SessionID: *w.SessionID, MessageID: *w.MessageID, RunID: *w.RunID, Data: w.Data, Prev: *w.Prev, Hash: *w.Hash}
	return nil
}

// ParseTime parses a time written in TimeLayout, exactly: any other form
// of the same instant is an error, so the text cannot change unnoticed.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(TimeLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not in the form %s", s, TimeLayout)
	}
	if t.Format(TimeLayout) != s {
		return time.Time{}, fmt.Errorf("time %q is not in the canonical form %s", s, TimeLayout)
	}
	return t.UTC(), nil
}

// checkText reports a value that cannot be stored and hashed as written.
func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%s is not valid UTF-8", field)
	}
	if strings.IndexByte(s, 0) >= 0 {
		return fmt.Errorf("%s contains a NUL character", field)
	}
	return nil
}
