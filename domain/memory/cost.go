package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Defaults of CostLedgerOptions.
const (
	// DefaultCostSessions is how many session totals a CostLedger keeps.
	DefaultCostSessions = 100_000
	// DefaultCostKeepDays is how many UTC days of tenant totals a
	// CostLedger keeps.
	DefaultCostKeepDays = 400
)

// errCostOverflow reports a total that would leave int64 NanoUSD (or
// int64 tokens): about 9.2 billion dollars.
var errCostOverflow = errors.New("total out of range")

// CostLedgerOptions bounds the memory of a CostLedger. The zero value
// gives the defaults.
type CostLedgerOptions struct {
	// MaxSessions is how many session totals the ledger keeps; adding to
	// one more evicts the least recently updated session, whose
	// SessionCost is 0 from then on. Size it well above the number of
	// sessions active at once, or a session's budget restarts. 0 or less
	// means DefaultCostSessions.
	MaxSessions int
	// KeepDays is how many UTC days of tenant totals the ledger keeps:
	// today and the KeepDays-1 days before it (later days too). Older
	// days are dropped at the first AddCost of each new UTC day, and an
	// entry for an older day adds to its session only. 0 or less means
	// DefaultCostKeepDays.
	KeepDays int
	// Now is the clock that tells today; nil means time.Now. Tests set it.
	Now func() time.Time
}

// CostLedger is an in-memory domain.CostLedger with bounded memory: at
// most MaxSessions session totals (least recently updated evicted) and
// KeepDays UTC days of totals per tenant. Money is kept in int64
// domain.NanoUSD, so sums are exact: each entry is rounded once to the
// nearest nano-dollar and each total converted once with
// domain.FromNanoUSD.
//
// Create it with NewCostLedger; the zero value is not usable. It is safe
// for concurrent use: AddCost updates both totals under one lock, and
// reads share a read lock and allocate nothing (TenantDays allocates its
// result). Nothing is persisted and nothing is shared with other
// processes: replicas need the PostgreSQL ledger (domain/postgres).
type CostLedger struct {
	maxSessions int
	keepDays    int64
	now         func() time.Time

	mu sync.RWMutex
	// sessions holds the session totals; head is the most recently
	// updated, tail the next to evict.
	sessions   map[costSessionKey]*sessionCost
	head, tail *sessionCost
	// days holds each tenant's totals by day number (days since
	// 1970-01-01 UTC).
	days map[string]map[int64]*dayCost
	// prunedDay is the day number of today when days was last pruned.
	prunedDay int64
	nDays     int
}

type costSessionKey struct{ tenantID, sessionID string }

type sessionCost struct {
	key        costSessionKey
	nanos      int64
	prev, next *sessionCost
}

type dayCost struct {
	nanos int64
	calls int64
	usage [6]int64 // prompt, completion, cached, cache write, reasoning, total
}

// NewCostLedger returns an empty ledger bounded by opts.
func NewCostLedger(opts CostLedgerOptions) *CostLedger {
	if opts.MaxSessions <= 0 {
		opts.MaxSessions = DefaultCostSessions
	}
	if opts.KeepDays <= 0 {
		opts.KeepDays = DefaultCostKeepDays
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &CostLedger{
		maxSessions: opts.MaxSessions,
		keepDays:    int64(opts.KeepDays),
		now:         opts.Now,
		sessions:    make(map[costSessionKey]*sessionCost),
		days:        make(map[string]map[int64]*dayCost),
		prunedDay:   -1 << 62,
	}
}

var _ domain.CostLedger = (*CostLedger)(nil)

// dayNumber is the number of the UTC day containing t, counted from
// 1970-01-01.
func dayNumber(t time.Time) int64 {
	return domain.CostDay(t).Unix() / 86400
}

func dayTime(n int64) time.Time { return time.Unix(n*86400, 0).UTC() }

// AddCost implements domain.CostLedger. Input is checked by
// domain.CheckCostEntry. USD is rounded to the nearest domain.NanoUSD.
// A total that would pass about 9.2 billion dollars is an error and
// changes nothing.
func (l *CostLedger) AddCost(ctx context.Context, e domain.CostEntry) error {
	const op = "memory: add cost"
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if err := domain.CheckCostEntry(e); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	nanos := domain.ToNanoUSD(e.USD)
	day := dayNumber(e.Time)
	usage := [6]int64{int64(e.Usage.PromptTokens), int64(e.Usage.CompletionTokens), int64(e.Usage.CachedTokens),
		int64(e.Usage.CacheWriteTokens), int64(e.Usage.ReasoningTokens), int64(e.Usage.TotalTokens)}
	today := dayNumber(l.now())

	l.mu.Lock()
	defer l.mu.Unlock()
	if today > l.prunedDay {
		l.pruneDays(today - l.keepDays + 1)
		l.prunedDay = today
	}
	keepDay := day > today-l.keepDays
	var sc *sessionCost
	if e.SessionID != "" {
		sc = l.sessions[costSessionKey{e.TenantID, e.SessionID}]
		if sc != nil && sc.nanos > maxInt64-nanos {
			return fmt.Errorf("%s: session %s: %w", op, e.SessionID, errCostOverflow)
		}
	}
	var dc *dayCost
	if keepDay {
		dc = l.days[e.TenantID][day]
		if dc != nil {
			if dc.nanos > maxInt64-nanos || dc.calls == maxInt64 {
				return fmt.Errorf("%s: tenant day %s: %w", op, dayTime(day).Format(time.DateOnly), errCostOverflow)
			}
			for i, v := range usage {
				if dc.usage[i] > maxInt64-v {
					return fmt.Errorf("%s: tenant day %s: tokens: %w", op, dayTime(day).Format(time.DateOnly), errCostOverflow)
				}
			}
		}
	}
	// Checked: nothing below fails.
	if e.SessionID != "" {
		if sc == nil {
			sc = &sessionCost{key: costSessionKey{e.TenantID, e.SessionID}}
			l.sessions[sc.key] = sc
			for len(l.sessions) > l.maxSessions {
				l.evict(l.tail)
			}
		} else {
			l.unlink(sc)
		}
		sc.nanos += nanos
		l.pushFront(sc)
	}
	if keepDay {
		if dc == nil {
			td := l.days[e.TenantID]
			if td == nil {
				td = make(map[int64]*dayCost)
				l.days[e.TenantID] = td
			}
			dc = &dayCost{}
			td[day] = dc
			l.nDays++
		}
		dc.nanos += nanos
		dc.calls++
		for i, v := range usage {
			dc.usage[i] += v
		}
	}
	return nil
}

const maxInt64 = 1<<63 - 1

// pruneDays drops every tenant day before day number keepFrom.
func (l *CostLedger) pruneDays(keepFrom int64) {
	for tenant, td := range l.days {
		for d := range td {
			if d < keepFrom {
				delete(td, d)
				l.nDays--
			}
		}
		if len(td) == 0 {
			delete(l.days, tenant)
		}
	}
}

func (l *CostLedger) unlink(s *sessionCost) {
	if s.prev != nil {
		s.prev.next = s.next
	} else {
		l.head = s.next
	}
	if s.next != nil {
		s.next.prev = s.prev
	} else {
		l.tail = s.prev
	}
	s.prev, s.next = nil, nil
}

func (l *CostLedger) pushFront(s *sessionCost) {
	s.next = l.head
	if l.head != nil {
		l.head.prev = s
	}
	l.head = s
	if l.tail == nil {
		l.tail = s
	}
}

func (l *CostLedger) evict(s *sessionCost) {
	l.unlink(s)
	delete(l.sessions, s.key)
}

// SessionCost implements domain.CostLedger. A session never added to,
// or evicted (see CostLedgerOptions.MaxSessions), costs 0.
func (l *CostLedger) SessionCost(ctx context.Context, tenantID, sessionID string) (float64, error) {
	const op = "memory: session cost"
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	if err := domain.CheckSessionCost(tenantID, sessionID); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	l.mu.RLock()
	var n int64
	if sc := l.sessions[costSessionKey{tenantID, sessionID}]; sc != nil {
		n = sc.nanos
	}
	l.mu.RUnlock()
	return domain.FromNanoUSD(n), nil
}

// TenantDayCost implements domain.CostLedger. A day without calls, or
// dropped (see CostLedgerOptions.KeepDays), costs 0.
func (l *CostLedger) TenantDayCost(ctx context.Context, tenantID string, day time.Time) (float64, error) {
	const op = "memory: tenant day cost"
	if err := ctx.Err(); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	if err := domain.CheckTenantDayCost(tenantID, day); err != nil {
		return 0, fmt.Errorf("%s: %w", op, err)
	}
	d := dayNumber(day)
	l.mu.RLock()
	var n int64
	if dc := l.days[tenantID][d]; dc != nil {
		n = dc.nanos
	}
	l.mu.RUnlock()
	return domain.FromNanoUSD(n), nil
}

// TenantDays implements domain.CostLedger: the kept days of the tenant
// from..to, oldest first, days without calls omitted.
func (l *CostLedger) TenantDays(ctx context.Context, tenantID string, from, to time.Time) ([]domain.DayCost, error) {
	const op = "memory: tenant days"
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	if err := domain.CheckTenantDays(tenantID, from, to); err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	lo, hi := dayNumber(from), dayNumber(to)
	out := []domain.DayCost{}
	l.mu.RLock()
	for d, dc := range l.days[tenantID] {
		if d >= lo && d <= hi {
			out = append(out, domain.DayCost{
				Day: dayTime(d),
				USD: domain.FromNanoUSD(dc.nanos),
				Usage: domain.Usage{
					PromptTokens: int(dc.usage[0]), CompletionTokens: int(dc.usage[1]), CachedTokens: int(dc.usage[2]),
					CacheWriteTokens: int(dc.usage[3]), ReasoningTokens: int(dc.usage[4]), TotalTokens: int(dc.usage[5]),
				},
				Calls: int(dc.calls),
			})
		}
	}
	l.mu.RUnlock()
	slices.SortFunc(out, func(a, b domain.DayCost) int { return a.Day.Compare(b.Day) })
	return out, nil
}

// Len reports how many session totals and tenant days the ledger holds,
// for tests and metrics: at most MaxSessions, and KeepDays (plus any
// future days) per tenant.
func (l *CostLedger) Len() (sessions, tenantDays int) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return len(l.sessions), l.nDays
}
