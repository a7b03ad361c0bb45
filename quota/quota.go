package quota

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/quota/internal/bucket"
)

// Scopes of a limit, as in ExceededError.Scope.
const (
	ScopeTenant = "tenant"
	ScopeUser   = "user"
)

// Names of the limits, as in ExceededError.Limit.
const (
	LimitRequests   = "requests_per_minute"
	LimitTokens     = "tokens_per_minute"
	LimitConcurrent = "concurrent_runs"
)

// MaxPerMinute is the largest RequestsPerMinute or TokensPerMinute a
// Limits may set (100 million).
const MaxPerMinute = bucket.MaxPerMinute

// ConcurrentRetryAfter is the RetryAfter of a refusal for concurrent runs:
// a fixed hint, since when a slot frees depends on other runs.
const ConcurrentRetryAfter = time.Second

// Limits are the limits of one scope (a tenant, or one user of a tenant).
// A zero field means unlimited; the zero Limits limits nothing.
type Limits struct {
	// RequestsPerMinute is the capacity of a token bucket refilled at
	// RequestsPerMinute/60 per second: a burst of RequestsPerMinute
	// requests, then one every 60s/RequestsPerMinute. Each Admit takes one.
	RequestsPerMinute int
	// TokensPerMinute is the capacity of a bucket of model tokens refilled
	// at TokensPerMinute/60 per second. Charge takes the tokens a model
	// call used and may drive the bucket into debt (below zero); Admit
	// refuses while it is in debt.
	TokensPerMinute int
	// ConcurrentRuns is the number of runs admitted and not yet released
	// at once.
	ConcurrentRuns int
}

// Validate reports a limit that is negative or above MaxPerMinute.
func (l Limits) Validate() error {
	switch {
	case l.RequestsPerMinute < 0 || l.RequestsPerMinute > MaxPerMinute:
		return fmt.Errorf("RequestsPerMinute %d is outside 0..%d", l.RequestsPerMinute, MaxPerMinute)
	case l.TokensPerMinute < 0 || l.TokensPerMinute > MaxPerMinute:
		return fmt.Errorf("TokensPerMinute %d is outside 0..%d", l.TokensPerMinute, MaxPerMinute)
	case l.ConcurrentRuns < 0:
		return fmt.Errorf("ConcurrentRuns %d is negative", l.ConcurrentRuns)
	}
	return nil
}

// IsZero reports whether l limits nothing.
func (l Limits) IsZero() bool { return l == Limits{} }

// Policy says which limits apply to a tenant and to each of its users.
type Policy struct {
	// Tenant limits all the users of a tenant together; User limits each
	// user of a tenant on its own. They apply to every tenant that For
	// does not override.
	Tenant, User Limits
	// For, when set, returns the limits of one tenant (its plan): with ok
	// true they replace Tenant and User for that tenant. It is called on
	// every Admit and Charge, so it must be fast (look the plan up in a
	// cache) and safe for concurrent use. Lowering a limit takes effect at
	// once; buckets above the new capacity are cut to it.
	For func(tenantID string) (tenant, user Limits, ok bool)
}

// Validate reports a bad default limit. Limits returned by For are
// checked on each call.
func (p Policy) Validate() error {
	if err := p.Tenant.Validate(); err != nil {
		return fmt.Errorf("tenant limits: %w", err)
	}
	if err := p.User.Validate(); err != nil {
		return fmt.Errorf("user limits: %w", err)
	}
	return nil
}

// Resolve returns the limits of tenantID and of each of its users: those
// of For when it has them, else the defaults. It reports limits from For
// that are not valid.
func (p Policy) Resolve(tenantID string) (tenant, user Limits, err error) {
	if p.For != nil {
		if t, u, ok := p.For(tenantID); ok {
			if err := t.Validate(); err != nil {
				return Limits{}, Limits{}, fmt.Errorf("tenant limits of tenant %q: %w", tenantID, err)
			}
			if err := u.Validate(); err != nil {
				return Limits{}, Limits{}, fmt.Errorf("user limits of tenant %q: %w", tenantID, err)
			}
			return t, u, nil
		}
	}
	return p.Tenant, p.User, nil
}

// Limiter enforces a Policy. Memory is the in-process implementation;
// package quota/postgres shares the limits between replicas.
type Limiter interface {
	// Admit takes one request from the tenant's and the user's request
	// buckets, checks that neither token bucket is in debt, and takes a
	// concurrent-run slot for runID in both scopes. All or nothing: a
	// refusal (an error matching ErrExceeded, an *ExceededError) takes
	// nothing. The returned release frees the slot; it is idempotent and
	// safe to call from any goroutine. Admitting a runID that already
	// holds a slot moves the slot to the new admission (a resumed run is
	// not counted twice) and the earlier release no longer frees it.
	Admit(ctx context.Context, tenantID, userID, runID string) (release func(), err error)
	// Charge records model tokens used by the tenant and the user (after
	// each model call). It never refuses: the token buckets may go into
	// debt, and the next Admit waits until they are out of it.
	Charge(ctx context.Context, tenantID, userID string, tokens int) error
}

// ErrExceeded is matched (errors.Is) by every refusal of a Limiter: the
// error is an *ExceededError saying which limit and when to retry.
var ErrExceeded = errors.New("quota exceeded")

// ExceededError is the refusal of a request by a limit.
type ExceededError struct {
	// Scope is ScopeTenant ("tenant") or ScopeUser ("user").
	Scope string
	// Limit is LimitRequests, LimitTokens or LimitConcurrent.
	Limit string
	// RetryAfter is the time after which the same request would pass this
	// limit: exact for requests (the time to refill one request) and
	// tokens (the time to refill the debt), ConcurrentRetryAfter for
	// concurrent runs. When several limits refuse, the error names the one
	// with the longest RetryAfter.
	RetryAfter time.Duration
	// Max is the limit's value (per minute, or runs).
	Max int
	// Current is the usage it refused on: requests or tokens used in the
	// bucket's window (above Max when tokens are in debt), or runs held.
	Current int
}

// Error says which limit of which scope refused, and when to retry.
func (e *ExceededError) Error() string {
	return fmt.Sprintf("quota: %s %s exceeded (%d of %d): retry after %s",
		e.Scope, e.Limit, e.Current, e.Max, e.RetryAfter)
}

// Is reports whether target is ErrExceeded.
func (e *ExceededError) Is(target error) bool { return target == ErrExceeded }

// checkIDs reports an empty tenant, user or run ID; runID is checked
// when checkRun is set.
func checkIDs(op, tenantID, userID, runID string, checkRun bool) error {
	switch {
	case tenantID == "":
		return fmt.Errorf("quota: %s: tenant ID is empty", op)
	case userID == "":
		return fmt.Errorf("quota: %s: user ID is empty", op)
	case checkRun && runID == "":
		return fmt.Errorf("quota: %s: run ID is empty", op)
	}
	return nil
}

// refusal returns the refusal of an Admit in a scope at the given levels
// (refilled to now) and runs held, if any of its limits refuses; the one
// with the longest RetryAfter when several do.
func refusal(scope string, l Limits, req, tok int64, runs int) *ExceededError {
	var worst *ExceededError
	consider := func(e *ExceededError) {
		if worst == nil || e.RetryAfter > worst.RetryAfter {
			worst = e
		}
	}
	if l.RequestsPerMinute > 0 && req < bucket.Unit {
		consider(&ExceededError{Scope: scope, Limit: LimitRequests,
			RetryAfter: bucket.Wait(req, l.RequestsPerMinute, bucket.Unit),
			Max:        l.RequestsPerMinute, Current: bucket.Used(req, l.RequestsPerMinute)})
	}
	if l.TokensPerMinute > 0 && tok < 0 {
		consider(&ExceededError{Scope: scope, Limit: LimitTokens,
			RetryAfter: bucket.Wait(tok, l.TokensPerMinute, 0),
			Max:        l.TokensPerMinute, Current: bucket.Used(tok, l.TokensPerMinute)})
	}
	if l.ConcurrentRuns > 0 && runs >= l.ConcurrentRuns {
		consider(&ExceededError{Scope: scope, Limit: LimitConcurrent,
			RetryAfter: ConcurrentRetryAfter, Max: l.ConcurrentRuns, Current: runs})
	}
	return worst
}

// State is the state of one scope's buckets at one instant, for
// implementations of Limiter outside this package (quota/postgres): the
// levels are in the exact units of the package's bucket arithmetic.
// Memory and quota/postgres share it so that they decide alike.
type State struct {
	// Req and Tok are the levels of the request and token buckets,
	// refilled to the instant (LevelFull for a bucket never used).
	Req, Tok int64
	// Runs is the number of run slots the scope holds.
	Runs int
}

// LevelFull is the level of a bucket that was never used: full whatever
// its limit.
const LevelFull = bucket.Full

// Refill returns s with both buckets refilled for elapsed time under l
// (a bucket with no limit is set to LevelFull).
func (s State) Refill(l Limits, elapsed time.Duration) State {
	s.Req, s.Tok = refill(s.Req, l.RequestsPerMinute, elapsed), refill(s.Tok, l.TokensPerMinute, elapsed)
	return s
}

func refill(level int64, limit int, elapsed time.Duration) int64 {
	if limit == 0 {
		return bucket.Full
	}
	return bucket.Refill(level, limit, elapsed)
}

// Check returns the refusal of an Admit by the scope's limits l, or nil
// when they admit it. s must be refilled; scope is ScopeTenant or
// ScopeUser.
func (s State) Check(scope string, l Limits) *ExceededError {
	return refusal(scope, l, s.Req, s.Tok, s.Runs)
}

// TakeRequest returns s less one request (when l limits requests).
func (s State) TakeRequest(l Limits) State {
	if l.RequestsPerMinute > 0 {
		s.Req = bucket.Take(s.Req, 1)
	}
	return s
}

// Charge returns s less tokens (when l limits tokens), saturating at a
// debt of about 38 million tokens.
func (s State) Charge(l Limits, tokens int) State {
	if l.TokensPerMinute > 0 {
		s.Tok = bucket.Take(s.Tok, int64(tokens))
	}
	return s
}

// Full reports whether both buckets are full under l, so that forgetting
// the scope changes nothing (s must be refilled).
func (s State) Full(l Limits) bool {
	return (l.RequestsPerMinute == 0 || s.Req >= bucket.Cap(l.RequestsPerMinute)) &&
		(l.TokensPerMinute == 0 || s.Tok >= bucket.Cap(l.TokensPerMinute))
}

// FullState returns the state of a scope never used: both buckets full,
// no runs.
func FullState() State { return State{Req: bucket.Full, Tok: bucket.Full} }
