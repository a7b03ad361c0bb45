package llmfake

import (
	"cmp"

	"github.com/bichat-go/bichat/domain"
)

// Turn is one model response described independently of any wire format;
// the dialect functions (OpenAIStream, ...) render it.
type Turn struct {
	// ID is the response id; dialects invent one when empty.
	ID string
	// Model is echoed in responses; "fake-model" when empty.
	Model string
	// Reasoning blocks stream first.
	Reasoning []Reasoning
	// Text fragments stream next, one event each.
	Text []string
	// Calls stream last.
	Calls []Call
	// Interleave streams the argument fragments of Calls round-robin
	// (call 0 piece 0, call 1 piece 0, call 0 piece 1, ...), as parallel
	// calls arrive from some providers.
	Interleave bool
	// Usage is reported in the dialect's terms: PromptTokens is the whole
	// prompt (cached included), as in domain.Usage.
	Usage domain.Usage
	// Stop is the raw provider stop reason; empty means the dialect's
	// usual one (tool calls when Calls is set, normal end otherwise).
	Stop string
}

// Reasoning is one reasoning (thinking) block.
type Reasoning struct {
	// Text fragments, one event each.
	Text []string
	// Signature is sent where the dialect signs reasoning (Anthropic).
	Signature string
	// Opaque is dialect data kept verbatim (Anthropic redacted_thinking
	// data, Gemini thought signatures).
	Opaque []byte
}

// Call is one tool call.
type Call struct {
	ID   string
	Name string
	// Args are the argument JSON text in fragments; their concatenation is
	// the arguments (empty means none: the client must read {}).
	Args []string
	// Opaque is dialect data attached to the call (a Gemini thought
	// signature).
	Opaque []byte
}

// ArgsText returns the concatenated argument fragments.
func (c Call) ArgsText() string {
	n := 0
	for _, a := range c.Args {
		n += len(a)
	}
	b := make([]byte, 0, n)
	for _, a := range c.Args {
		b = append(b, a...)
	}
	return string(b)
}

// Joined returns the concatenated reasoning fragments.
func (r Reasoning) Joined() string {
	s := ""
	for _, t := range r.Text {
		s += t
	}
	return s
}

// fragments returns the order in which call argument pieces stream: pairs
// of (call, piece), piece -1 being the call's header.
// ids returns the turn's id (defaultID when empty) and model
// ("fake-model" when empty).
func (t Turn) ids(defaultID string) (id, model string) {
	return cmp.Or(t.ID, defaultID), cmp.Or(t.Model, "fake-model")
}

func (t Turn) fragments() [][2]int {
	var out [][2]int
	if !t.Interleave {
		for ci, c := range t.Calls {
			out = append(out, [2]int{ci, -1})
			for pi := range c.Args {
				out = append(out, [2]int{ci, pi})
			}
		}
		return out
	}
	for ci := range t.Calls {
		out = append(out, [2]int{ci, -1})
		if len(t.Calls[ci].Args) > 0 {
			out = append(out, [2]int{ci, 0})
		}
	}
	for pi := 1; ; pi++ {
		any := false
		for ci, c := range t.Calls {
			if pi < len(c.Args) {
				out = append(out, [2]int{ci, pi})
				any = true
			}
		}
		if !any {
			return out
		}
	}
}
