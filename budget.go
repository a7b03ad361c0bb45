package bichat

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
)

// Budgets cap what the model calls of a message, a session and a tenant's
// day may cost, in US dollars, priced from the models' prices
// (agents.ModelInfo.Pricing; a model without prices costs 0 and is never
// stopped). Zero means no cap.
//
// Budgets are checked before each model call of a run: when what the
// scope has spent already reaches its budget, or would pass it if the
// next call cost as much as the run's previous call, the call is not made.
// The run stops cleanly: the message fails with code "budget_exceeded" and
// a message saying which budget ran out (what was answered before the stop
// is kept), a hooks.BudgetExceeded event and a hooks.Decision (policy
// "budget", outcome refused) are published, and the caller's stream ends
// with RunFailed and an error matching ErrBudgetExceeded. A budget can
// therefore be passed by at most one call that cost more than the one
// before it.
type Budgets struct {
	// PerMessageUSD caps the model calls of one answer, across its
	// resumptions and sub-agents.
	PerMessageUSD float64
	// PerSessionUSD caps the model calls of every answer of a session.
	PerSessionUSD float64
	// PerTenantDayUSD caps what a tenant's model calls cost on one UTC
	// day, across sessions, users and replicas sharing Config.Costs.
	PerTenantDayUSD float64
	// TenantDayUSD, when set, returns a tenant's daily budget in place of
	// PerTenantDayUSD (0: no cap for that tenant).
	TenantDayUSD func(tenantID string) float64
}

func (b Budgets) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"PerMessageUSD", b.PerMessageUSD}, {"PerSessionUSD", b.PerSessionUSD}, {"PerTenantDayUSD", b.PerTenantDayUSD}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("bichat: Config.Budgets.%s must be a finite number of dollars, 0 or more (got %v)", f.name, f.v)
		}
	}
	return nil
}

func (b Budgets) tenantDay(tenantID string) float64 {
	if b.TenantDayUSD != nil {
		return b.TenantDayUSD(tenantID)
	}
	return b.PerTenantDayUSD
}

// ErrBudgetExceeded matches the error of a run stopped by a budget (a
// *BudgetError).
var ErrBudgetExceeded = errors.New("budget exceeded")

// BudgetError reports the budget that stopped a run.
type BudgetError struct {
	// Scope is hooks.BudgetMessage, hooks.BudgetSession or
	// hooks.BudgetTenantDay.
	Scope string
	// LimitUSD is the budget; SpentUSD what the scope had spent.
	LimitUSD, SpentUSD float64
}

// Error says which budget ran out.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("bichat: the %s budget of $%.4f is used up ($%.4f spent)", budgetScopeName(e.Scope), e.LimitUSD, e.SpentUSD)
}

// Is reports whether target is ErrBudgetExceeded.
func (e *BudgetError) Is(target error) bool { return target == ErrBudgetExceeded }

// RunFailure gives the run's failure code and the message shown to the
// user.
func (e *BudgetError) RunFailure() (code, message string) {
	return "budget_exceeded", fmt.Sprintf("The answer stopped because the %s budget of $%.2f is used up ($%.2f spent).",
		budgetScopeName(e.Scope), e.LimitUSD, e.SpentUSD)
}

func budgetScopeName(scope string) string {
	switch scope {
	case hooks.BudgetMessage:
		return "per-answer"
	case hooks.BudgetSession:
		return "conversation"
	case hooks.BudgetTenantDay:
		return "daily"
	}
	return scope
}

// runSpend is what one run has spent, as the service recorded it from
// the run's UsageReported events (its sub-agents' included).
type runSpend struct {
	mu sync.Mutex
	// prior is the message's cost before this run (earlier runs of a
	// resumed message).
	prior float64
	total float64
	// last is the cost of the run's most recent model call.
	last float64
}

func (r *runSpend) add(usd float64) {
	r.mu.Lock()
	r.total += usd
	r.last = usd
	r.mu.Unlock()
}

func (r *runSpend) read() (message, last float64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.prior + r.total, r.last
}

type runSpendKey struct{}

// exceeds reports whether a scope that spent spent, with a next call
// estimated at next, is stopped by limit (0: no limit).
func exceeds(limit, spent, next float64) bool {
	return limit > 0 && (spent >= limit || spent+next > limit)
}

// guard is the executors' agents.Config.Guard: it stops a run before a
// model call that its budgets do not allow (see Budgets).
func (s *Service) guard(ctx context.Context, t *agents.TurnContext) error {
	b := s.cfg.Budgets
	sp, _ := ctx.Value(runSpendKey{}).(*runSpend)
	if sp == nil || t.Input == nil {
		return nil
	}
	in := t.Input
	message, next := sp.read()
	var be *BudgetError
	switch {
	case exceeds(b.PerMessageUSD, message, next):
		be = &BudgetError{Scope: hooks.BudgetMessage, LimitUSD: b.PerMessageUSD, SpentUSD: message}
	case b.PerSessionUSD > 0:
		spent, err := s.cfg.Costs.SessionCost(ctx, in.TenantID, in.SessionID)
		if err != nil {
			return fmt.Errorf("bichat: read the session's cost: %w", err)
		}
		if exceeds(b.PerSessionUSD, spent, next) {
			be = &BudgetError{Scope: hooks.BudgetSession, LimitUSD: b.PerSessionUSD, SpentUSD: spent}
		}
	}
	if limit := b.tenantDay(in.TenantID); be == nil && limit > 0 {
		spent, err := s.cfg.Costs.TenantDayCost(ctx, in.TenantID, s.cfg.Now())
		if err != nil {
			return fmt.Errorf("bichat: read the tenant's daily cost: %w", err)
		}
		if exceeds(limit, spent, next) {
			be = &BudgetError{Scope: hooks.BudgetTenantDay, LimitUSD: limit, SpentUSD: spent}
		}
	}
	if be == nil {
		return nil
	}
	if s.bus != nil {
		meta := hooks.Meta{Time: s.cfg.Now(), TenantID: in.TenantID, UserID: in.UserID, SessionID: in.SessionID,
			MessageID: in.MessageID, RunID: in.RunID, ParentRunID: in.ParentRunID}
		s.bus.Publish(ctx, &hooks.BudgetExceeded{Meta: meta, Scope: be.Scope, LimitUSD: be.LimitUSD, SpentUSD: be.SpentUSD})
		_, msg := be.RunFailure()
		s.bus.Publish(ctx, &hooks.Decision{Meta: meta, Policy: "budget", Outcome: hooks.DecisionRefused, Reason: msg})
	}
	return be
}

// recordCost books a model call the run reported: into the run's spend
// (the message budget), the cost ledger (session and tenant-day budgets)
// and the quota limiter's token buckets.
func (r *runner) recordCost(e *agents.UsageReported) {
	r.spend.add(e.CostUSD)
	r.rec.addCost(e.CostUSD)
	s := r.s
	entry := domain.CostEntry{TenantID: r.p.TenantID, UserID: r.p.UserID, SessionID: r.asst.SessionID,
		MessageID: r.asst.ID, Time: e.Time, Usage: e.Usage, USD: e.CostUSD}
	if entry.Time.IsZero() {
		entry.Time = s.cfg.Now()
	}
	ctx, cancel := persistCtx(r.ctx)
	defer cancel()
	if err := s.cfg.Costs.AddCost(ctx, entry); err != nil {
		s.cfg.Logger.ErrorContext(ctx, "bichat: record a model call's cost", "message_id", r.asst.ID, "error", err)
	}
	r.chargeTokens(ctx, e.Usage)
}

// Costs returns the cost ledger the service records model calls in
// (Config.Costs, or the in-memory default), for reports: what a session
// cost, what a tenant spent per day.
func (s *Service) Costs() domain.CostLedger { return s.cfg.Costs }
