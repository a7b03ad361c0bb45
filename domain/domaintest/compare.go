package domaintest

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// The canon functions put a value in a canonical form before comparison,
// erasing differences that a store may legitimately introduce: time zones
// and monotonic clock readings (times are compared as instants), and nil
// versus empty slices, maps and raw JSON. They build new values and never
// modify their argument's slices or pointers. Raw JSON bytes are kept, so
// they must match exactly.

func canonTime(t time.Time) time.Time { return t.UTC() }

func canonRaw(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	return b
}

func canonSlice[S ~[]E, E any](s S) S {
	if len(s) == 0 {
		return nil
	}
	return s
}

func canonSession(s domain.Session) domain.Session {
	s.CreatedAt = canonTime(s.CreatedAt)
	s.UpdatedAt = canonTime(s.UpdatedAt)
	return s
}

func canonPart(p domain.Part) domain.Part {
	if p.Reasoning != nil {
		r := *p.Reasoning
		r.Opaque = canonRaw(r.Opaque)
		p.Reasoning = &r
	}
	if p.ToolCall != nil {
		c := *p.ToolCall
		c.Arguments = canonRaw(c.Arguments)
		c.Opaque = canonRaw(c.Opaque)
		p.ToolCall = &c
	}
	return p
}

func canonMessage(m domain.Message) domain.Message {
	m.Parts = canonSlice(mapSlice(m.Parts, canonPart))
	md := &m.Metadata
	md.ToolCalls = canonSlice(mapSlice(md.ToolCalls, func(c domain.ToolCallRecord) domain.ToolCallRecord {
		c.ArtifactIDs = canonSlice(c.ArtifactIDs)
		return c
	}))
	md.DatasetsUsed = canonSlice(md.DatasetsUsed)
	if md.Error != nil {
		e := *md.Error
		e.Time = canonTime(e.Time)
		md.Error = &e
	}
	m.Citations = canonSlice(m.Citations)
	m.Attachments = canonSlice(m.Attachments)
	m.LeaseUntil = canonTime(m.LeaseUntil)
	m.CreatedAt = canonTime(m.CreatedAt)
	m.UpdatedAt = canonTime(m.UpdatedAt)
	return m
}

func canonCheckpoint(cp domain.Checkpoint) domain.Checkpoint {
	cp.Data = canonRaw(cp.Data)
	cp.CreatedAt = canonTime(cp.CreatedAt)
	cp.ExpiresAt = canonTime(cp.ExpiresAt)
	return cp
}

func canonArtifact(a domain.Artifact) domain.Artifact {
	if len(a.Metadata) == 0 {
		a.Metadata = nil
	}
	a.CreatedAt = canonTime(a.CreatedAt)
	return a
}

func canonResult(r domain.StoredResult) domain.StoredResult {
	r.Data = canonRaw(r.Data)
	r.CreatedAt = canonTime(r.CreatedAt)
	return r
}

func canonRunEvent(e domain.RunEvent) domain.RunEvent {
	e.Data = canonRaw(e.Data)
	e.Time = canonTime(e.Time)
	return e
}

func mapSlice[E any](s []E, f func(E) E) []E {
	if s == nil {
		return nil
	}
	out := make([]E, len(s))
	for i, v := range s {
		out[i] = f(v)
	}
	return out
}

// equal reports whether got and want are equal in canonical form, and
// reports the difference as a test error when they are not.
func equal[T any](t *testing.T, what string, got, want T, canon func(T) T) bool {
	t.Helper()
	g, w := canon(got), canon(want)
	if reflect.DeepEqual(g, w) {
		return true
	}
	t.Errorf("%s:\n got %s\nwant %s%s", what, show(g), show(w), sameShown(g, w))
	return false
}

// equalSlices is equal for slices, element by element.
func equalSlices[T any](t *testing.T, what string, got, want []T, canon func(T) T) bool {
	t.Helper()
	g, w := canonSlice(mapSlice(got, canon)), canonSlice(mapSlice(want, canon))
	if reflect.DeepEqual(g, w) {
		return true
	}
	t.Errorf("%s:\n got %s\nwant %s%s", what, show(g), show(w), sameShown(g, w))
	return false
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// sameShown explains a difference that the JSON rendering hides: encoding
// compacts raw JSON fields, so whitespace changes there are invisible.
func sameShown(got, want any) string {
	if show(got) == show(want) {
		return "\n(the values differ only in the bytes of a raw JSON field, such as whitespace, or in a detail JSON does not show)"
	}
	return ""
}

// keys returns key(x) for every x, in order.
func keys[T, K any](xs []T, key func(T) K) []K {
	out := make([]K, len(xs))
	for i, x := range xs {
		out[i] = key(x)
	}
	return out
}

// sessionIDs, messageIDs, artifactIDs and eventSeqs return the keys of
// their arguments, in order.
func sessionIDs(ss []domain.Session) []string {
	return keys(ss, func(s domain.Session) string { return s.ID })
}

func messageIDs(ms []domain.Message) []string {
	return keys(ms, func(m domain.Message) string { return m.ID })
}

func artifactIDs(as []domain.Artifact) []string {
	return keys(as, func(a domain.Artifact) string { return a.ID })
}

func eventSeqs(es []domain.RunEvent) []int64 {
	return keys(es, func(e domain.RunEvent) int64 { return e.Seq })
}

// equalIDs reports a test error unless got and want hold the same ids in
// the same order.
func equalIDs[E comparable](t *testing.T, what string, got, want []E) bool {
	t.Helper()
	if slices.Equal(got, want) {
		return true
	}
	t.Errorf("%s:\n got %v\nwant %v", what, got, want)
	return false
}

// sameSet reports a test error unless got and want hold the same ids in
// any order.
func sameSet(t *testing.T, what string, got, want []string) bool {
	t.Helper()
	g, w := slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if slices.Equal(g, w) {
		return true
	}
	t.Errorf("%s:\n got %v\nwant %v (in any order)", what, got, want)
	return false
}
