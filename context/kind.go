package context

import (
	"encoding/json"
	"fmt"
)

// Kind says what a block is for. Kinds are rendered in the order of their
// values: pinned first, the turn last.
type Kind uint8

// Block kinds, in render order.
const (
	// KindPinned holds the system rules; never dropped.
	KindPinned Kind = iota + 1
	// KindReference holds tool schemas, dataset definitions and join hints:
	// together with KindPinned the stable, cacheable prefix.
	KindReference
	// KindMemory holds recipes and knowledge-base hits.
	KindMemory
	// KindState holds the host's UI or situation snapshot.
	KindState
	// KindToolOutput holds query results and other tool outputs the host
	// shows the model as context (chronological by Position).
	KindToolOutput
	// KindHistory holds earlier messages of the conversation
	// (chronological by Position), and the summary of compacted ones.
	KindHistory
	// KindTurn holds the current user message (Position 0) followed by this
	// run's steps: assistant tool calls and tool results (Position 1, 2,
	// ...). Never dropped; always last.
	KindTurn
)

// Kinds lists every kind in render order.
var Kinds = []Kind{KindPinned, KindReference, KindMemory, KindState, KindToolOutput, KindHistory, KindTurn}

var kindNames = [...]string{"", "pinned", "reference", "memory", "state", "tool_output", "history", "turn"}

// String returns the kind's name ("pinned", "tool_output", ...).
func (k Kind) String() string {
	if k.Valid() {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Valid reports whether k is one of the declared kinds.
func (k Kind) Valid() bool { return k >= KindPinned && k <= KindTurn }

// Ordered reports whether blocks of kind k are ordered by Position
// (chronological kinds) rather than by hash.
func (k Kind) Ordered() bool { return k == KindToolOutput || k == KindHistory || k == KindTurn }

// ParseKind returns the kind named s.
func ParseKind(s string) (Kind, error) {
	for i, n := range kindNames {
		if i > 0 && n == s {
			return Kind(i), nil
		}
	}
	return 0, fmt.Errorf("context: unknown block kind %q", s)
}

// MarshalText encodes the kind as its name.
func (k Kind) MarshalText() ([]byte, error) {
	if !k.Valid() {
		return nil, fmt.Errorf("context: invalid block kind %d", k)
	}
	return []byte(k.String()), nil
}

// UnmarshalText decodes a kind name.
func (k *Kind) UnmarshalText(b []byte) error {
	v, err := ParseKind(string(b))
	if err != nil {
		return err
	}
	*k = v
	return nil
}

// Sensitivity classifies a block's content. A Policy's ceiling drops or
// redacts blocks above it.
type Sensitivity uint8

// Sensitivity levels, from least to most sensitive. The zero value means
// "not set" and is treated as SensitivityInternal.
const (
	SensitivityPublic Sensitivity = iota + 1
	SensitivityInternal
	SensitivityRestricted
)

var sensNames = [...]string{"", "public", "internal", "restricted"}

// String returns "public", "internal" or "restricted".
func (s Sensitivity) String() string {
	if s >= SensitivityPublic && s <= SensitivityRestricted {
		return sensNames[s]
	}
	if s == 0 {
		return "internal"
	}
	return fmt.Sprintf("sensitivity(%d)", uint8(s))
}

// normalize maps the zero value to SensitivityInternal.
func (s Sensitivity) normalize() Sensitivity {
	if s == 0 {
		return SensitivityInternal
	}
	return s
}

// MarshalJSON encodes the level as its name.
func (s Sensitivity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }
