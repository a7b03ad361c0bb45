package domaintest

// This file is the conformance suite for domain.CostLedger
// implementations: session and tenant-day totals, UTC day boundaries
// whatever the location of the times passed in, daily listings with
// gaps, tenant isolation, exact sums in nano-dollars, concurrent adds
// (through a second handle on the same store when the implementation has
// one), invalid input and cancellation.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// CostSuiteOptions adapts RunCostLedgerTests to a ledger.
type CostSuiteOptions struct {
	// Replica, when set, returns another handle on the store behind l,
	// as another process would open it (for a database: another Store on
	// another connection pool, same schema). The concurrency case then
	// adds through l and the replica at once and checks that the totals
	// are exact; no other case calls it. Nil: it adds through l only.
	Replica func(t *testing.T, l domain.CostLedger) domain.CostLedger
}

// RunCostLedgerTests runs the conformance suite for domain.CostLedger.
// newLedger must return an empty ledger not shared with other calls; the
// subtests call it once each and run in parallel. Entries are dated in
// the 40 UTC days before the current one, so a ledger that drops old
// days must keep at least 40. Run it with -race.
//
// Beyond the interface's documentation, the suite requires: totals are
// kept in whole domain.NanoUSD, each entry rounded once with
// domain.ToNanoUSD and each total converted once with domain.FromNanoUSD
// (so ten additions of 0.1 give exactly 1.0 and 0.1 + 0.2 gives 0.3);
// unknown sessions and days cost 0 without error; TenantDays omits days
// without calls, returns a non-nil slice, and sets Day to UTC midnight in
// time.UTC; bad input (see domain.CheckCostEntry and its siblings) yields
// an error matching domain.ErrInvalid and changes nothing; a cancelled
// context yields an error matching context.Canceled and changes nothing.
func RunCostLedgerTests(t *testing.T, newLedger func(t *testing.T) domain.CostLedger, opts ...CostSuiteOptions) {
	t.Helper()
	if newLedger == nil {
		t.Fatal("domaintest: newLedger is nil")
	}
	if len(opts) > 1 {
		t.Fatalf("domaintest: RunCostLedgerTests takes at most one CostSuiteOptions, got %d", len(opts))
	}
	var o CostSuiteOptions
	if len(opts) == 1 {
		o = opts[0]
	}
	for _, tc := range []struct {
		name string
		fn   func(t *testing.T, c *costEnv)
	}{
		{"SessionTotals", costSessionTotals},
		{"DayBoundaries", costDayBoundaries},
		{"TenantDays", costTenantDays},
		{"TenantIsolation", costTenantIsolation},
		{"ExactSums", costExactSums},
		{"WithoutSession", costWithoutSession},
		{"Concurrent", costConcurrent},
		{"InvalidInput", costInvalidInput},
		{"Cancelled", costCancelled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			l := newLedger(t)
			c := &costEnv{t: t, l: l, newReplica: o.Replica, base: domain.CostDay(time.Now()).AddDate(0, 0, -30)}
			tc.fn(t, c)
		})
	}
}

// costEnv is one subtest's ledger and fixtures.
type costEnv struct {
	t *testing.T
	l domain.CostLedger
	// newReplica is CostSuiteOptions.Replica, called only by the
	// concurrency case (a replica may hold connections of its own).
	newReplica func(t *testing.T, l domain.CostLedger) domain.CostLedger
	// base is a UTC midnight 30 days before today.
	base time.Time
}

func (c *costEnv) add(e domain.CostEntry) {
	c.t.Helper()
	if err := c.l.AddCost(c.t.Context(), e); err != nil {
		c.t.Fatalf("AddCost(%+v): %v", e, err)
	}
}

func (c *costEnv) wantSession(tenant, session string, want float64) {
	c.t.Helper()
	got, err := c.l.SessionCost(c.t.Context(), tenant, session)
	if err != nil {
		c.t.Fatalf("SessionCost(%s, %s): %v", tenant, session, err)
	}
	if got != want {
		c.t.Errorf("SessionCost(%s, %s) = %v, want exactly %v", tenant, session, got, want)
	}
}

func (c *costEnv) wantDay(tenant string, day time.Time, want float64) {
	c.t.Helper()
	got, err := c.l.TenantDayCost(c.t.Context(), tenant, day)
	if err != nil {
		c.t.Fatalf("TenantDayCost(%s, %v): %v", tenant, day, err)
	}
	if got != want {
		c.t.Errorf("TenantDayCost(%s, %v) = %v, want exactly %v", tenant, day, got, want)
	}
}

func (c *costEnv) days(tenant string, from, to time.Time) []domain.DayCost {
	c.t.Helper()
	got, err := c.l.TenantDays(c.t.Context(), tenant, from, to)
	if err != nil {
		c.t.Fatalf("TenantDays(%s, %v, %v): %v", tenant, from, to, err)
	}
	if got == nil {
		c.t.Errorf("TenantDays(%s, %v, %v) = nil, want a non-nil slice", tenant, from, to)
	}
	for _, d := range got {
		if d.Day.Location() != time.UTC || !d.Day.Equal(domain.CostDay(d.Day)) {
			c.t.Errorf("TenantDays(%s): Day %v is not a UTC midnight in time.UTC", tenant, d.Day)
		}
	}
	return got
}

// wantDays compares listings: days as instants, USD exactly.
func wantDays(t *testing.T, what string, got, want []domain.DayCost) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: got %d days %v, want %d %v", what, len(got), got, len(want), want)
		return
	}
	for i := range got {
		g, w := got[i], want[i]
		if !g.Day.Equal(w.Day) || g.USD != w.USD || g.Calls != w.Calls || g.Usage != w.Usage {
			t.Errorf("%s: day %d = %+v, want %+v", what, i, g, w)
		}
	}
}

func costSessionTotals(t *testing.T, c *costEnv) {
	s1, s2 := domain.NewID(), domain.NewID()
	at := c.base.Add(9 * time.Hour)
	c.add(domain.CostEntry{TenantID: "acme", UserID: "alice", SessionID: s1, MessageID: domain.NewID(), Time: at,
		Provider: "openai", Model: "gpt-x", USD: 1.25, Usage: domain.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s1, Time: at.Add(time.Minute), USD: 0.5})
	// The same session across two days: the session total spans both.
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s1, Time: at.AddDate(0, 0, 1), USD: 0.125})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s2, Time: at, USD: 2})
	c.wantSession("acme", s1, 1.875)
	c.wantSession("acme", s2, 2)
	c.wantSession("acme", domain.NewID(), 0)
	c.wantDay("acme", at, 3.75)
	c.wantDay("acme", at.AddDate(0, 0, 1), 0.125)
}

func costDayBoundaries(t *testing.T, c *costEnv) {
	d0, d1 := c.base, c.base.AddDate(0, 0, 1)
	plus10 := time.FixedZone("UTC+10", 10*3600)
	minus5 := time.FixedZone("UTC-5", -5*3600)
	s := domain.NewID()
	for _, e := range []struct {
		at  time.Time
		usd float64
	}{
		{d0, 1},                                      // first instant of d0
		{d1.Add(-time.Millisecond), 2},               // 23:59:59.999 of d0
		{d1.Add(-time.Nanosecond), 4},                // last instant of d0
		{d1, 8},                                      // first instant of d1
		{d1.Add(-2 * time.Hour).In(plus10), 16},      // 08:00 on d1 at UTC+10 is 22:00 of d0
		{d1.Add(time.Hour).In(minus5), 32},           // 20:00 on d0 at UTC-5 is 01:00 of d1
		{d1.AddDate(0, 0, 1).Add(-time.Second), 64},  // 23:59:59 of d1
		{d1.AddDate(0, 0, 1).In(minus5), 128},        // 19:00 on d1 at UTC-5 is midnight of d2
		{d0.Add(-time.Nanosecond).In(plus10), 256},   // last instant of the day before d0
		{d0.Add(12 * time.Hour).In(time.Local), 512}, // the host's zone
	} {
		c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: e.at, USD: e.usd})
	}
	c.wantDay("acme", d0, 1+2+4+16+512)
	c.wantDay("acme", d1, 8+32+64)
	c.wantDay("acme", d1.AddDate(0, 0, 1), 128)
	c.wantDay("acme", d0.AddDate(0, 0, -1), 256)
	// The day argument is bucketed the same way: any instant of the UTC
	// day, in any zone, names it.
	c.wantDay("acme", d0.Add(23*time.Hour+59*time.Minute), 1+2+4+16+512)
	c.wantDay("acme", d0.Add(23*time.Hour).In(plus10), 1+2+4+16+512) // 09:00 on d1 at UTC+10
	c.wantDay("acme", d1.Add(-time.Hour).In(minus5), 1+2+4+16+512)   // 18:00 on d0 at UTC-5
	c.wantDay("acme", d1.Add(4*time.Hour).In(minus5), 8+32+64)       // 23:00 on d0 at UTC-5 is d1
	c.wantSession("acme", s, 1023)
	// From 18:00 at UTC-5 the day before d0 (23:00 UTC) to 11:00 at
	// UTC+10 on d1 (01:00 UTC): three UTC days.
	wantDays(t, "TenantDays across zones", c.days("acme", d0.Add(-time.Hour).In(minus5), d1.Add(time.Hour).In(plus10)), []domain.DayCost{
		{Day: d0.AddDate(0, 0, -1), USD: 256, Calls: 1},
		{Day: d0, USD: 1 + 2 + 4 + 16 + 512, Calls: 5},
		{Day: d1, USD: 8 + 32 + 64, Calls: 3},
	})
}

func costTenantDays(t *testing.T, c *costEnv) {
	day := func(n int) time.Time { return c.base.AddDate(0, 0, n) }
	s := domain.NewID()
	u := domain.Usage{PromptTokens: 1000, CompletionTokens: 200, CachedTokens: 300, CacheWriteTokens: 40, ReasoningTokens: 50, TotalTokens: 1200}
	// Days 0, 1, 3 and 7 have calls; 2, 4, 5 and 6 do not.
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: day(0).Add(time.Hour), USD: 0.5, Usage: u})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: day(0).Add(2 * time.Hour), USD: 0.25, Usage: u})
	c.add(domain.CostEntry{TenantID: "acme", Time: day(1), USD: 1})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: day(3).Add(23 * time.Hour), USD: 3, Usage: u})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: day(7), USD: 0}) // free calls count too
	twice := domain.Usage{PromptTokens: 2000, CompletionTokens: 400, CachedTokens: 600, CacheWriteTokens: 80, ReasoningTokens: 100, TotalTokens: 2400}
	all := []domain.DayCost{
		{Day: day(0), USD: 0.75, Calls: 2, Usage: twice},
		{Day: day(1), USD: 1, Calls: 1},
		{Day: day(3), USD: 3, Calls: 1, Usage: u},
		{Day: day(7), USD: 0, Calls: 1},
	}
	for _, tc := range []struct {
		name     string
		from, to time.Time
		want     []domain.DayCost
	}{
		{"everything", day(-5), day(20), all},
		{"exact bounds", day(0), day(7), all},
		{"bounds inside their days", day(0).Add(23 * time.Hour), day(7).Add(time.Minute), all},
		{"inner range", day(1), day(3), all[1:3]},
		{"one day", day(3).Add(5 * time.Hour), day(3).Add(6 * time.Hour), all[2:3]},
		{"only gaps", day(4), day(6), nil},
		{"before any", day(-10), day(-1), nil},
		{"after all", day(8), day(9), nil},
		{"one empty day", day(2), day(2), nil},
		{"the widest range", time.Date(1, 1, 1, 12, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 23, 0, 0, 0, time.UTC), all},
	} {
		wantDays(t, tc.name, c.days("acme", tc.from, tc.to), tc.want)
	}
	wantDays(t, "another tenant", c.days("globex", day(-5), day(20)), nil)
}

func costTenantIsolation(t *testing.T, c *costEnv) {
	s := domain.NewID()
	at := c.base.Add(time.Hour)
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: at, USD: 1})
	c.add(domain.CostEntry{TenantID: "globex", SessionID: s, Time: at, USD: 2})
	c.add(domain.CostEntry{TenantID: "globex", SessionID: s, Time: at, USD: 4})
	c.wantSession("acme", s, 1)
	c.wantSession("globex", s, 6)
	c.wantSession("initech", s, 0)
	c.wantDay("acme", at, 1)
	c.wantDay("globex", at, 6)
	c.wantDay("initech", at, 0)
	wantDays(t, "acme", c.days("acme", at, at), []domain.DayCost{{Day: c.base, USD: 1, Calls: 1}})
	wantDays(t, "globex", c.days("globex", at, at), []domain.DayCost{{Day: c.base, USD: 6, Calls: 2}})
	wantDays(t, "initech", c.days("initech", at, at), nil)
}

func costExactSums(t *testing.T, c *costEnv) {
	at := c.base.Add(time.Hour)
	tenths := domain.NewID()
	for range 10 {
		c.add(domain.CostEntry{TenantID: "acme", SessionID: tenths, Time: at, USD: 0.1})
	}
	c.wantSession("acme", tenths, 1.0)
	c.wantDay("acme", at, 1.0)

	// 0.1 + 0.2 is 0.30000000000000004 in float64; the ledger gives 0.3.
	pair := domain.NewID()
	c.add(domain.CostEntry{TenantID: "acme", SessionID: pair, Time: at, USD: 0.1})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: pair, Time: at, USD: 0.2})
	c.wantSession("acme", pair, 0.3)

	// Entries are rounded to the nearest nano-dollar: 1.5e-9 → 2e-9,
	// 4e-10 → 0 (still a call), 1e-9 stays.
	tiny := domain.NewID()
	day2 := at.AddDate(0, 0, 1)
	for _, usd := range []float64{1.5e-9, 4e-10, 1e-9, 1e-9} {
		c.add(domain.CostEntry{TenantID: "acme", SessionID: tiny, Time: day2, USD: usd})
	}
	c.wantSession("acme", tiny, 4e-9)
	wantDays(t, "rounded day", c.days("acme", day2, day2), []domain.DayCost{{Day: c.base.AddDate(0, 0, 1), USD: 4e-9, Calls: 4}})

	// Large and small together keep every nano-dollar.
	big := domain.NewID()
	c.add(domain.CostEntry{TenantID: "acme", SessionID: big, Time: at, USD: domain.MaxCostUSD})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: big, Time: at, USD: 1e-9})
	c.wantSession("acme", big, 1_000_000.000000001)

	// A long run of typical prices sums to what exact decimal arithmetic gives.
	many := domain.NewID()
	var nanos int64
	for i := range 200 {
		usd := float64(i%7+1) * 0.0013
		nanos += domain.ToNanoUSD(usd)
		c.add(domain.CostEntry{TenantID: "globex", SessionID: many, Time: at, USD: usd})
	}
	c.wantSession("globex", many, domain.FromNanoUSD(nanos))
	c.wantDay("globex", at, domain.FromNanoUSD(nanos))
}

func costWithoutSession(t *testing.T, c *costEnv) {
	at := c.base.Add(time.Hour)
	s := domain.NewID()
	c.add(domain.CostEntry{TenantID: "acme", Time: at, USD: 0.5, Model: "embedder"})
	c.add(domain.CostEntry{TenantID: "acme", SessionID: s, Time: at, USD: 0.25})
	c.wantDay("acme", at, 0.75)
	c.wantSession("acme", s, 0.25)
	wantDays(t, "days", c.days("acme", at, at), []domain.DayCost{{Day: c.base, USD: 0.75, Calls: 2}})
}

func costConcurrent(t *testing.T, c *costEnv) {
	const workers, each = 16, 25
	at := c.base.Add(12 * time.Hour)
	sessions := [2]string{domain.NewID(), domain.NewID()}
	u := domain.Usage{PromptTokens: 10, CompletionTokens: 3, TotalTokens: 13}
	replica := c.l
	if c.newReplica != nil {
		replica = c.newReplica(t, c.l)
	}
	errs := make([]error, workers)
	concurrently(workers, func(i int) {
		l := c.l
		if i%2 == 1 {
			l = replica
		}
		for j := range each {
			e := domain.CostEntry{TenantID: "acme", SessionID: sessions[j%2], Time: at.Add(time.Duration(j) * time.Second), USD: 0.001, Usage: u}
			if err := l.AddCost(t.Context(), e); err != nil {
				errs[i] = fmt.Errorf("worker %d, add %d: %w", i, j, err)
				return
			}
		}
	})
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	perSession := workers * ((each + 1) / 2)
	c.wantSession("acme", sessions[0], domain.FromNanoUSD(int64(perSession)*1_000_000))
	c.wantSession("acme", sessions[1], domain.FromNanoUSD(int64(workers*each-perSession)*1_000_000))
	c.wantDay("acme", at, 0.4)
	n := workers * each
	wantDays(t, "days", c.days("acme", at, at), []domain.DayCost{{Day: c.base, USD: 0.4, Calls: n,
		Usage: domain.Usage{PromptTokens: 10 * n, CompletionTokens: 3 * n, TotalTokens: 13 * n}}})
	// The replica reads what the ledger wrote.
	got, err := replica.TenantDayCost(t.Context(), "acme", at)
	if err != nil || got != 0.4 {
		t.Errorf("replica TenantDayCost = %v, %v; want 0.4", got, err)
	}
}

func costInvalidInput(t *testing.T, c *costEnv) {
	s := domain.NewID()
	at := c.base.Add(time.Hour)
	ok := domain.CostEntry{TenantID: "acme", UserID: "alice", SessionID: s, MessageID: domain.NewID(), Time: at, USD: 0.5}
	for _, tc := range []struct {
		name  string
		edit  func(e *domain.CostEntry)
		field string
	}{
		{"empty tenant", func(e *domain.CostEntry) { e.TenantID = "" }, "tenant_id"},
		{"tenant with a space", func(e *domain.CostEntry) { e.TenantID = "ac me" }, "tenant_id"},
		{"user with a newline", func(e *domain.CostEntry) { e.UserID = "al\nice" }, "user_id"},
		{"session not a UUID", func(e *domain.CostEntry) { e.SessionID = "session-1" }, "session_id"},
		{"message not a UUID", func(e *domain.CostEntry) { e.MessageID = "m1" }, "message_id"},
		{"zero time", func(e *domain.CostEntry) { e.Time = time.Time{} }, "time"},
		{"year 10000", func(e *domain.CostEntry) { e.Time = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "time"},
		{"NaN", func(e *domain.CostEntry) { e.USD = math.NaN() }, "usd"},
		{"+Inf", func(e *domain.CostEntry) { e.USD = math.Inf(1) }, "usd"},
		{"-Inf", func(e *domain.CostEntry) { e.USD = math.Inf(-1) }, "usd"},
		{"negative", func(e *domain.CostEntry) { e.USD = -0.01 }, "usd"},
		{"above MaxCostUSD", func(e *domain.CostEntry) { e.USD = domain.MaxCostUSD + 1 }, "usd"},
		{"negative prompt tokens", func(e *domain.CostEntry) { e.Usage.PromptTokens = -1 }, "usage.prompt_tokens"},
		{"negative completion tokens", func(e *domain.CostEntry) { e.Usage.CompletionTokens = -1 }, "usage.completion_tokens"},
		{"negative cached tokens", func(e *domain.CostEntry) { e.Usage.CachedTokens = -1 }, "usage.cached_tokens"},
		{"negative cache write tokens", func(e *domain.CostEntry) { e.Usage.CacheWriteTokens = -1 }, "usage.cache_write_tokens"},
		{"negative reasoning tokens", func(e *domain.CostEntry) { e.Usage.ReasoningTokens = -1 }, "usage.reasoning_tokens"},
		{"negative total tokens", func(e *domain.CostEntry) { e.Usage.TotalTokens = -1 }, "usage.total_tokens"},
	} {
		e := ok
		tc.edit(&e)
		err := c.l.AddCost(t.Context(), e)
		wantInvalid(t, "AddCost "+tc.name, err, tc.field)
	}
	c.wantSession("acme", s, 0)
	c.wantDay("acme", at, 0)
	wantDays(t, "after invalid adds", c.days("acme", at, at), nil)

	ctx := t.Context()
	_, err := c.l.SessionCost(ctx, "", s)
	wantInvalid(t, "SessionCost empty tenant", err, "tenant_id")
	_, err = c.l.SessionCost(ctx, "acme", "")
	wantInvalid(t, "SessionCost empty session", err, "session_id")
	_, err = c.l.SessionCost(ctx, "acme", "not-a-uuid")
	wantInvalid(t, "SessionCost session not a UUID", err, "session_id")
	_, err = c.l.TenantDayCost(ctx, "a b", at)
	wantInvalid(t, "TenantDayCost tenant with a space", err, "tenant_id")
	_, err = c.l.TenantDayCost(ctx, "acme", time.Time{})
	wantInvalid(t, "TenantDayCost zero day", err, "day")
	_, err = c.l.TenantDays(ctx, "", at, at)
	wantInvalid(t, "TenantDays empty tenant", err, "tenant_id")
	_, err = c.l.TenantDays(ctx, "acme", time.Time{}, at)
	wantInvalid(t, "TenantDays zero from", err, "from")
	_, err = c.l.TenantDays(ctx, "acme", at, time.Time{})
	wantInvalid(t, "TenantDays zero to", err, "to")
	_, err = c.l.TenantDays(ctx, "acme", at.AddDate(0, 0, 1), at)
	wantInvalid(t, "TenantDays from after to", err, "from")
	// from after to within one UTC day is the same day: valid.
	if _, err := c.l.TenantDays(ctx, "acme", at.Add(time.Hour), at); err != nil {
		t.Errorf("TenantDays from after to on the same UTC day: %v, want nil", err)
	}
}

// wantInvalid checks that err matches domain.ErrInvalid and names field.
func wantInvalid(t *testing.T, what string, err error, field string) {
	t.Helper()
	if !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("%s: got %v, want an error matching domain.ErrInvalid", what, err)
		return
	}
	for _, f := range domain.FieldErrors(err) {
		if f.Field == field {
			return
		}
	}
	t.Errorf("%s: %v does not name the field %q", what, err, field)
}

func costCancelled(t *testing.T, c *costEnv) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s := domain.NewID()
	at := c.base.Add(time.Hour)
	if err := c.l.AddCost(ctx, domain.CostEntry{TenantID: "acme", SessionID: s, Time: at, USD: 1}); !errors.Is(err, context.Canceled) {
		t.Errorf("AddCost with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := c.l.SessionCost(ctx, "acme", s); !errors.Is(err, context.Canceled) {
		t.Errorf("SessionCost with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := c.l.TenantDayCost(ctx, "acme", at); !errors.Is(err, context.Canceled) {
		t.Errorf("TenantDayCost with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := c.l.TenantDays(ctx, "acme", at, at); !errors.Is(err, context.Canceled) {
		t.Errorf("TenantDays with a cancelled context: %v, want context.Canceled", err)
	}
	c.wantSession("acme", s, 0)
	c.wantDay("acme", at, 0)
}

// BenchmarkAddCost measures CostLedger.AddCost: one priced call at a
// time, spread over the given number of sessions of one tenant.
func BenchmarkAddCost(b *testing.B, l domain.CostLedger, sessions int) {
	ctx := context.Background()
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = domain.NewID()
	}
	at := time.Now()
	i := 0
	for b.Loop() {
		e := domain.CostEntry{TenantID: "acme", SessionID: ids[i%len(ids)], Time: at, USD: 0.0123,
			Usage: domain.Usage{PromptTokens: 1000, CompletionTokens: 100, TotalTokens: 1100}}
		if err := l.AddCost(ctx, e); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkTenantDayCost measures CostLedger.TenantDayCost on a tenant
// with 30 days of calls.
func BenchmarkTenantDayCost(b *testing.B, l domain.CostLedger) {
	ctx := context.Background()
	at := time.Now()
	for d := range 30 {
		if err := l.AddCost(ctx, domain.CostEntry{TenantID: "acme", Time: at.AddDate(0, 0, -d), USD: 1}); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		if _, err := l.TenantDayCost(ctx, "acme", at); err != nil {
			b.Fatal(err)
		}
	}
}
