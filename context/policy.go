package context

import (
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/agents"
)

// Overflow says what Compile does when the blocks do not fit the budget.
type Overflow uint8

// Overflow strategies.
const (
	// OverflowError fails with a *BudgetError (errors.Is ErrBudgetExceeded).
	OverflowError Overflow = iota
	// OverflowTruncate drops blocks, oldest tool outputs and history first,
	// then memory, state and non-tool reference blocks; pinned blocks, tool
	// schemas and the turn are never dropped.
	OverflowTruncate
	// OverflowCompact condenses the oldest history into one summary block
	// (Policy.Summarizer) placed before the remaining history, then
	// truncates the other kinds if that is not enough.
	OverflowCompact
)

// String returns "error", "truncate" or "compact".
func (o Overflow) String() string {
	switch o {
	case OverflowError:
		return "error"
	case OverflowTruncate:
		return "truncate"
	case OverflowCompact:
		return "compact"
	}
	return fmt.Sprintf("overflow(%d)", uint8(o))
}

// SensitiveAction says what happens to blocks above Policy.MaxSensitivity.
type SensitiveAction uint8

// Sensitive actions.
const (
	// SensitiveDrop leaves the block out (pinned and turn blocks, which are
	// never dropped, are redacted instead).
	SensitiveDrop SensitiveAction = iota
	// SensitiveRedact keeps the block's structure with its content
	// replaced (see Redactor).
	SensitiveRedact
)

// KindBudget bounds the tokens of one kind. Max is enforced before the
// overall budget: a kind above its Max loses blocks (or is compacted, or
// fails) by the policy's Overflow strategy. Min is protected: truncation for
// the overall budget never takes a kind below its Min.
type KindBudget struct {
	Min int
	Max int
}

// Policy is the budget and rules of one compilation. The zero value is
// invalid: set at least ContextWindow.
type Policy struct {
	// ContextWindow is the model's window in tokens.
	ContextWindow int
	// CompletionReserve is kept free for the answer; the prompt budget is
	// ContextWindow - CompletionReserve.
	CompletionReserve int
	// Kinds are per-kind budgets (tokens as estimated for the renderer).
	Kinds map[Kind]KindBudget
	// MaxSensitivity is the most sensitive level allowed (0: restricted,
	// i.e. everything).
	MaxSensitivity Sensitivity
	// OnSensitive is what happens to blocks above MaxSensitivity.
	OnSensitive SensitiveAction
	// Overflow is the strategy when the blocks exceed the budget.
	Overflow Overflow
	// Summarizer condenses history for OverflowCompact.
	Summarizer Summarizer
	// SummaryTokens is the size a summary is asked to stay under and the
	// room reserved for it when choosing what to compact (default 1024).
	SummaryTokens int
}

// DefaultSummaryTokens is Policy.SummaryTokens when it is zero.
const DefaultSummaryTokens = 1024

// PolicyFor returns a policy for a model: its context window, a completion
// reserve of its MaxOutputTokens (8192 when unknown, capped at a quarter of
// the window) and the given overflow strategy.
func PolicyFor(info agents.ModelInfo, overflow Overflow) Policy {
	reserve := info.MaxOutputTokens
	if reserve <= 0 {
		reserve = 8192
	}
	if info.ContextWindow > 0 && reserve > info.ContextWindow/4 {
		reserve = info.ContextWindow / 4
	}
	return Policy{ContextWindow: info.ContextWindow, CompletionReserve: reserve, Overflow: overflow}
}

// Budget returns the prompt budget: ContextWindow - CompletionReserve.
func (p *Policy) Budget() int { return p.ContextWindow - p.CompletionReserve }

func (p *Policy) summaryTokens() int {
	if p.SummaryTokens > 0 {
		return p.SummaryTokens
	}
	return DefaultSummaryTokens
}

func (p *Policy) ceiling() Sensitivity {
	if p.MaxSensitivity == 0 {
		return SensitivityRestricted
	}
	return p.MaxSensitivity
}

// ErrInvalidPolicy reports a policy that cannot be applied.
var ErrInvalidPolicy = errors.New("context: invalid policy")

// Validate checks the policy.
func (p *Policy) Validate() error {
	if p.ContextWindow <= 0 {
		return fmt.Errorf("%w: ContextWindow must be positive", ErrInvalidPolicy)
	}
	if p.CompletionReserve < 0 || p.Budget() <= 0 {
		return fmt.Errorf("%w: CompletionReserve %d leaves no prompt budget in a window of %d", ErrInvalidPolicy, p.CompletionReserve, p.ContextWindow)
	}
	if p.Overflow > OverflowCompact {
		return fmt.Errorf("%w: unknown overflow strategy %d", ErrInvalidPolicy, p.Overflow)
	}
	if p.Overflow == OverflowCompact && p.Summarizer == nil {
		return fmt.Errorf("%w: OverflowCompact needs a Summarizer", ErrInvalidPolicy)
	}
	if p.MaxSensitivity > SensitivityRestricted || p.OnSensitive > SensitiveRedact {
		return fmt.Errorf("%w: unknown sensitivity setting", ErrInvalidPolicy)
	}
	mins := 0
	for k, b := range p.Kinds {
		if !k.Valid() {
			return fmt.Errorf("%w: budget for %s", ErrInvalidPolicy, k)
		}
		if b.Min < 0 || b.Max < 0 || (b.Max > 0 && b.Min > b.Max) {
			return fmt.Errorf("%w: %s budget min %d max %d", ErrInvalidPolicy, k, b.Min, b.Max)
		}
		mins += b.Min
	}
	if mins > p.Budget() {
		return fmt.Errorf("%w: per-kind minimums (%d tokens) exceed the budget (%d)", ErrInvalidPolicy, mins, p.Budget())
	}
	return nil
}

// ErrBudgetExceeded is matched (errors.Is) by every *BudgetError.
var ErrBudgetExceeded = errors.New("context: token budget exceeded")

// BudgetError says by how much the blocks exceed the budget.
type BudgetError struct {
	// Kind is set when a per-kind maximum was exceeded; 0 for the overall
	// budget.
	Kind Kind
	// Tokens is what the blocks need; Budget what is allowed.
	Tokens int
	Budget int
	// Strategy is the overflow strategy that could not make room.
	Strategy Overflow
}

func (e *BudgetError) Error() string {
	what := "the prompt"
	if e.Kind != 0 {
		what = e.Kind.String() + " blocks"
	}
	return fmt.Sprintf("context: %s need %d tokens, %d over the budget of %d (overflow strategy %s)",
		what, e.Tokens, e.Tokens-e.Budget, e.Budget, e.Strategy)
}

// RunFailure reports the failure to the end user (agents.RunFailure): code
// "context_too_long" and what to do about it.
func (e *BudgetError) RunFailure() (code, message string) {
	return "context_too_long", fmt.Sprintf("The question and the conversation so far need %d tokens, more than the %d the model accepts. "+
		"Ask a shorter question or start a new conversation.", e.Tokens, e.Budget)
}

// Is makes errors.Is(err, ErrBudgetExceeded) true.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }
