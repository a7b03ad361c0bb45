// Package quota limits what each tenant, and each user of a tenant, may
// ask of the service: requests per minute, model tokens per minute and
// runs at once.
//
// A Policy gives the Limits of every tenant and every user (zero fields
// are unlimited), optionally overridden per tenant by Policy.For (its
// plan). A Limiter enforces it:
//
//	lim, err := quota.NewMemory(quota.Policy{
//		Tenant: quota.Limits{RequestsPerMinute: 600, TokensPerMinute: 2_000_000, ConcurrentRuns: 20},
//		User:   quota.Limits{RequestsPerMinute: 30, TokensPerMinute: 200_000, ConcurrentRuns: 2},
//	}, quota.MemoryOptions{})
//
//	release, err := lim.Admit(ctx, tenantID, userID, runID) // before the run
//	var qe *quota.ExceededError
//	if errors.As(err, &qe) { // also errors.Is(err, quota.ErrExceeded)
//		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(qe.RetryAfter.Seconds()))))
//		http.Error(w, qe.Error(), http.StatusTooManyRequests)
//		return
//	}
//	defer release()
//	...
//	lim.Charge(ctx, tenantID, userID, usage.TotalTokens) // after each model call
//
// # Semantics
//
// Requests and tokens are token buckets. A bucket of N per minute holds N
// and refills continuously at N/60 per second: a burst of N, then a
// steady N per minute. Admit takes one request from the tenant's bucket
// and from the user's; Charge takes the tokens a model call used, after
// the fact, so a token bucket may go into debt (below zero). Admit refuses
// while a token bucket is in debt, until it refills to zero; a bucket at
// exactly zero admits. Runs are counted by run ID: Admit takes a slot in
// both scopes, release frees it (idempotently), and re-admitting a run
// that holds a slot moves the slot instead of taking a second one.
//
// Admit is all or nothing: it checks every limit of both scopes first,
// and a refusal takes nothing. The refusal is an *ExceededError naming the
// scope ("tenant" or "user"), the limit and RetryAfter, the exact time
// after which the same request passes that limit (for concurrent runs,
// which free when other runs end, the fixed hint ConcurrentRetryAfter).
// When several limits refuse, it names the one with the longest wait.
// Arithmetic is exact: levels are integers in units of 1/60e9 of a token,
// so a limit of N per minute refills N units per nanosecond, and a limit
// may be at most MaxPerMinute.
//
// # Implementations
//
// Memory keeps the buckets in process memory, for one process: bounded
// by MemoryOptions.MaxKeys, forgetting scopes whose buckets have refilled.
// Package quota/postgres keeps them in PostgreSQL so that several
// replicas share the limits, with run slots that expire when their
// replica dies. Both decide through State, so they refuse alike.
//
// Publishing hooks.QuotaExceeded for a refusal is the caller's: the
// error's Scope, Limit and RetryAfter are the event's fields.
package quota
