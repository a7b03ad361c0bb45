package bichat

import (
	"context"
	"errors"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/quota"
)

// admitWriter checks that p may write, maps p to its data-scoping
// attributes and takes a request and a run slot from the quota (see
// admit): what Send, Resume, Approve and Deny do before anything else.
// release must be called when the run ends (or does not start).
func (s *Service) admitWriter(ctx context.Context, p domain.Principal) (attrs map[string]string, release func(), err error) {
	if err := authorize(p, domain.PermWrite); err != nil {
		return nil, nil, err
	}
	if attrs, err = s.attributes(ctx, p); err != nil {
		return nil, nil, err
	}
	if release, err = s.admit(ctx, p); err != nil {
		return nil, nil, err
	}
	return attrs, release, nil
}

// admit asks the quota limiter (Config.Quota) for a request of p and a
// concurrent-run slot. It returns the slot's release (a no-op without a
// limiter) or a *RateLimitError wrapping the limiter's
// *quota.ExceededError, which the HTTP handler answers with 429 and
// Retry-After; a hooks.QuotaExceeded and a hooks.Decision (policy
// "quota", outcome refused) are published then.
func (s *Service) admit(ctx context.Context, p domain.Principal) (release func(), err error) {
	if s.cfg.Quota == nil {
		return func() {}, nil
	}
	release, err = s.cfg.Quota.Admit(ctx, p.TenantID, p.UserID, domain.NewID())
	if err == nil {
		return release, nil
	}
	var qe *quota.ExceededError
	if !errors.As(err, &qe) {
		return nil, err
	}
	if s.bus != nil {
		meta := s.meta(p, "")
		s.bus.Publish(ctx, &hooks.QuotaExceeded{Meta: meta, Scope: qe.Scope, Limit: qe.Limit, RetryAfter: qe.RetryAfter})
		s.bus.Publish(ctx, &hooks.Decision{Meta: meta, Policy: "quota", Outcome: hooks.DecisionRefused, Reason: qe.Error()})
	}
	return nil, &RateLimitError{RetryAfter: qe.RetryAfter, Err: qe}
}

// chargeTokens books a model call's tokens against the caller's
// tokens-per-minute quota.
func (r *runner) chargeTokens(ctx context.Context, u domain.Usage) {
	q := r.s.cfg.Quota
	if q == nil {
		return
	}
	n := u.TotalTokens
	if n == 0 {
		n = u.PromptTokens + u.CompletionTokens
	}
	if n <= 0 {
		return
	}
	if err := q.Charge(ctx, r.p.TenantID, r.p.UserID, n); err != nil {
		r.s.cfg.Logger.ErrorContext(ctx, "bichat: charge tokens to the quota", "tenant_id", r.p.TenantID, "error", err)
	}
}
