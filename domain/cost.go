package domain

import (
	"context"
	"math"
	"time"
)

// CostEntry is one priced model call, as recorded in a CostLedger.
type CostEntry struct {
	// TenantID is required and must pass ValidName.
	TenantID string
	// UserID, when set, must pass ValidName. Ledgers keep totals per
	// session and per tenant day, not per user: it is checked, not
	// stored.
	UserID string
	// SessionID, when set, must pass ValidID; the call then counts
	// towards the session's total. A call outside any session (empty
	// SessionID) counts towards the tenant's day only.
	SessionID string
	// MessageID, when set, must pass ValidID. It is checked, not stored:
	// the cost of a message lives in the message's own metadata.
	MessageID string
	// Time is when the call was made; it is required. The day bucket is
	// Time's UTC date, whatever Time's location.
	Time time.Time
	// Provider and Model name the model called. They are not stored by
	// the ledgers of this module.
	Provider, Model string
	// Usage is the call's token usage; no field may be negative. Tenant
	// days sum it.
	Usage Usage
	// USD is the call's price in US dollars: finite, 0 or more and at
	// most MaxCostUSD. Ledgers round it to the nearest NanoUSD.
	USD float64
}

// DayCost is a tenant's total for one UTC day.
type DayCost struct {
	// Day is the UTC midnight that starts the day (location time.UTC).
	Day time.Time
	// USD is the sum of the day's costs, computed exactly in NanoUSD and
	// converted once (see FromNanoUSD).
	USD float64
	// Usage sums the token usage of the day's calls.
	Usage Usage
	// Calls counts the day's calls, free ones included.
	Calls int
}

// CostLedger records what model calls cost and answers the budget
// questions the service asks before each call: what a session has cost
// so far and what a tenant spent on a day. Implementations keep exact
// integer totals in NanoUSD (so adding 0.1 ten times gives exactly 1.0),
// are safe for concurrent use, and scope everything by tenant: the same
// session id in two tenants is two sessions.
//
// Errors match ErrInvalid (a *ValidationError naming the field) for bad
// input, checked by CheckCostEntry, CheckSessionCost, CheckTenantDayCost
// and CheckTenantDays. Unknown sessions and days without calls cost 0,
// without error.
type CostLedger interface {
	// AddCost adds one priced model call to the session's total (when
	// e.SessionID is set) and to the tenant's total for the UTC day of
	// e.Time, atomically: a reader never sees one total updated and not
	// the other.
	AddCost(ctx context.Context, e CostEntry) error
	// SessionCost is what a session's model calls cost in all.
	SessionCost(ctx context.Context, tenantID, sessionID string) (float64, error)
	// TenantDayCost is what a tenant spent on the UTC day containing day.
	TenantDayCost(ctx context.Context, tenantID string, day time.Time) (float64, error)
	// TenantDays lists a tenant's daily totals from..to (inclusive, the
	// UTC days containing from and to), oldest first. Days without calls
	// are omitted; a range without any yields an empty, non-nil slice.
	TenantDays(ctx context.Context, tenantID string, from, to time.Time) ([]DayCost, error)
}

// NanoUSD is the unit in which ledgers keep money: 1e-9 US dollars.
// An int64 of them holds about 9.2 billion dollars.
const NanoUSD = 1e-9

// MaxCostUSD is the largest USD a single CostEntry may carry. It keeps
// the conversion to NanoUSD exact and leaves totals room to grow.
const MaxCostUSD = 1_000_000

// ToNanoUSD converts dollars to whole NanoUSD, rounding to the nearest
// (halves away from zero), e.g. 0.1 → 100_000_000 and 4e-10 → 0. usd must
// be finite and within ±MaxCostUSD for the result to be meaningful.
func ToNanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// FromNanoUSD converts NanoUSD to dollars. Below 2^53 NanoUSD (about 9
// million dollars) the result is the float64 nearest to the exact decimal
// amount, so FromNanoUSD(ToNanoUSD(0.1)*10) == 1.0 and a sum of 0.1 and
// 0.2 gives 0.3, not 0.30000000000000004.
func FromNanoUSD(n int64) float64 { return float64(n) / 1e9 }

// CostDay returns the UTC midnight that starts the UTC day containing t:
// the day bucket of a CostEntry whose Time is t.
func CostDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// CheckCostEntry validates the input of CostLedger.AddCost: TenantID
// must pass ValidName; UserID, when set, ValidName; SessionID and
// MessageID, when set, ValidID; Time must be set, in UTC years 1 to 9999;
// USD must be finite, not negative and at most MaxCostUSD; no Usage field
// may be negative. Every invalid field is named ("usage.prompt_tokens").
func CheckCostEntry(e CostEntry) error {
	var ve costErrors
	if !ValidName(e.TenantID) {
		ve.Add("tenant_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	if e.UserID != "" && !ValidName(e.UserID) {
		ve.Add("user_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
	if e.SessionID != "" && !ValidID(e.SessionID) {
		ve.Add("session_id", "must be a UUID")
	}
	if e.MessageID != "" && !ValidID(e.MessageID) {
		ve.Add("message_id", "must be a UUID")
	}
	checkCostTime(&ve, "time", e.Time)
	switch {
	case math.IsNaN(e.USD) || math.IsInf(e.USD, 0):
		ve.Add("usd", "must be a finite number")
	case e.USD < 0:
		ve.Add("usd", "must not be negative")
	case e.USD > MaxCostUSD:
		ve.Add("usd", "must be at most 1000000 for one call")
	}
	for _, f := range []struct {
		name string
		v    int
	}{
		{"usage.prompt_tokens", e.Usage.PromptTokens},
		{"usage.completion_tokens", e.Usage.CompletionTokens},
		{"usage.cached_tokens", e.Usage.CachedTokens},
		{"usage.cache_write_tokens", e.Usage.CacheWriteTokens},
		{"usage.reasoning_tokens", e.Usage.ReasoningTokens},
		{"usage.total_tokens", e.Usage.TotalTokens},
	} {
		if f.v < 0 {
			ve.Add(f.name, "must not be negative")
		}
	}
	return ve.Err()
}

// CheckSessionCost validates the input of CostLedger.SessionCost:
// tenantID must pass ValidName and sessionID ValidID.
func CheckSessionCost(tenantID, sessionID string) error {
	var ve costErrors
	checkCostTenant(&ve, tenantID)
	if !ValidID(sessionID) {
		ve.Add("session_id", "must be a UUID")
	}
	return ve.Err()
}

// CheckTenantDayCost validates the input of CostLedger.TenantDayCost:
// tenantID must pass ValidName and day must be set, in UTC years 1 to
// 9999.
func CheckTenantDayCost(tenantID string, day time.Time) error {
	var ve costErrors
	checkCostTenant(&ve, tenantID)
	checkCostTime(&ve, "day", day)
	return ve.Err()
}

// CheckTenantDays validates the input of CostLedger.TenantDays: tenantID
// must pass ValidName, from and to must be set, in UTC years 1 to 9999,
// and the UTC day of from must not come after that of to.
func CheckTenantDays(tenantID string, from, to time.Time) error {
	var ve costErrors
	checkCostTenant(&ve, tenantID)
	okFrom := checkCostTime(&ve, "from", from)
	okTo := checkCostTime(&ve, "to", to)
	if okFrom && okTo && CostDay(from).After(CostDay(to)) {
		ve.Add("from", "must not be a later UTC day than to")
	}
	return ve.Err()
}

// costErrors collects field errors without allocating until the first,
// so that valid input (the budget checks before every model call)
// allocates nothing.
type costErrors []FieldError

func (c *costErrors) Add(field, reason string) {
	*c = append(*c, FieldError{Field: field, Reason: reason})
}

func (c costErrors) Err() error {
	if len(c) == 0 {
		return nil
	}
	return &ValidationError{Fields: c}
}

func checkCostTenant(ve *costErrors, tenantID string) {
	if !ValidName(tenantID) {
		ve.Add("tenant_id", "must be 1 to 128 printable ASCII characters without spaces")
	}
}

// checkCostTime requires t set and its UTC year within 1..9999 (the
// range every store can bucket), and reports whether it is.
func checkCostTime(ve *costErrors, field string, t time.Time) bool {
	if t.IsZero() {
		ve.Add(field, "is required")
		return false
	}
	if y := t.UTC().Year(); y < 1 || y > 9999 {
		ve.Add(field, "must be in the years 1 to 9999 (UTC)")
		return false
	}
	return true
}
