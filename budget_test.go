package bichat_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

// dollarModel is a scripted model priced at one dollar per prompt token,
// so a turn's cost is exactly its PromptTokens. costs gives the cost of
// each call in order (the last one repeats); every call but those listed
// in answerAt asks for the noop tool.
func dollarModel(costs []int, answerAt ...int) *scripted.Model {
	var n atomic.Int64
	m := &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "priced", ContextWindow: 128000,
		Capabilities: agents.Capabilities{Tools: true},
		Pricing:      agents.Pricing{InputPerMTok: 1e6, OutputPerMTok: 1e6}}}
	m.Respond = func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		i := int(n.Add(1)) - 1
		c := costs[min(i, len(costs)-1)]
		u := domain.Usage{PromptTokens: c, TotalTokens: c}
		for _, a := range answerAt {
			if a == i {
				return scripted.Turn{Text: "done", Usage: u}, nil
			}
		}
		return scripted.Turn{ToolCalls: []scripted.Call{{Name: "noop", Args: "{}"}}, Usage: u}, nil
	}
	return m
}

func noopTool() agents.Tool {
	return agents.MustTool("noop", "Does nothing.", func(context.Context, struct{}) (agents.Result, error) {
		return agents.Result{Summary: "ok"}, nil
	})
}

// budgetEvents records the BudgetExceeded events of a bus.
type budgetEvents struct {
	mu  sync.Mutex
	evs []hooks.BudgetExceeded
}

func (b *budgetEvents) Handle(_ context.Context, e hooks.Event) error {
	if be, ok := e.(*hooks.BudgetExceeded); ok {
		b.mu.Lock()
		b.evs = append(b.evs, *be)
		b.mu.Unlock()
	}
	return nil
}

func (b *budgetEvents) all() []hooks.BudgetExceeded {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]hooks.BudgetExceeded(nil), b.evs...)
}

func budgetFixture(t *testing.T, m *scripted.Model, budgets bichat.Budgets) (*fixture, *budgetEvents) {
	t.Helper()
	be := &budgetEvents{}
	f := newFixture(t, m, []agents.Tool{noopTool()}, func(c *bichat.Config) {
		c.Budgets = budgets
		c.Agent.MaxTurns = 50
		c.Agent.MaxToolCalls = 50
		if _, err := c.Bus.Subscribe(be, hooks.KindBudgetExceeded); err != nil {
			t.Fatal(err)
		}
	})
	return f, be
}

// budgetStop requires a stream that ends with RunFailed budget_exceeded
// and an error matching ErrBudgetExceeded, and returns the RunFailed.
func budgetStop(t *testing.T, items []item) *agents.RunFailed {
	t.Helper()
	if len(items) < 2 {
		t.Fatalf("stream: %s", describe(items))
	}
	last := items[len(items)-1]
	if !errors.Is(last.err, bichat.ErrBudgetExceeded) {
		t.Fatalf("last error = %v, want ErrBudgetExceeded; stream: %s", last.err, describe(items))
	}
	var be *bichat.BudgetError
	if !errors.As(last.err, &be) {
		t.Fatalf("last error %T is not a *BudgetError", last.err)
	}
	rf, ok := items[len(items)-2].ev.(*agents.RunFailed)
	if !ok || rf.Code != "budget_exceeded" {
		t.Fatalf("event before the error = %#v, want RunFailed budget_exceeded; stream: %s", items[len(items)-2].ev, describe(items))
	}
	return rf
}

func TestMessageBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		costs  []int
		limit  float64
		calls  int     // model calls made before the stop
		spent  float64 // what the message had spent at the stop
		stop   bool
		answer bool
	}{
		// Spent reaches the limit exactly: no further call.
		{name: "spent equals limit", costs: []int{1}, limit: 2, calls: 2, spent: 2, stop: true},
		// The next call (estimated at the previous one's $1) would pass
		// $1.5: stop after one call.
		{name: "next call would exceed", costs: []int{1}, limit: 1.5, calls: 1, spent: 1, stop: true},
		// spent + estimate == limit is allowed: $1 + $1 = $2 <= $2.
		{name: "estimate reaching limit allowed", costs: []int{1, 1, 5}, limit: 2.5, calls: 2, spent: 2, stop: true},
		// A call more expensive than the previous one passes the budget
		// once, then the run stops: 1 + 4 = 5 > 3.
		{name: "one call may overshoot", costs: []int{1, 4}, limit: 3, calls: 2, spent: 5, stop: true},
		// An answer within budget completes.
		{name: "within budget", costs: []int{1}, limit: 10, calls: 3, answer: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			answerAt := []int{}
			if tc.answer {
				answerAt = []int{2}
			}
			m := dollarModel(tc.costs, answerAt...)
			f, be := budgetFixture(t, m, bichat.Budgets{PerMessageUSD: tc.limit})
			s := f.session(t, alice, "budget")
			items := collect(t, f.svc.Send(t.Context(), alice, s.ID, "spend"))
			if got := m.Calls(); got != tc.calls {
				t.Fatalf("model calls = %d, want %d; stream: %s", got, tc.calls, describe(items))
			}
			msgs := f.messages(t, alice, s.ID)
			asst := msgs[len(msgs)-1]
			if !tc.stop {
				finished(t, items)
				if asst.Status != domain.StatusComplete || asst.Metadata.CostUSD != 3 {
					t.Fatalf("message = %s cost %v, want complete, 3", asst.Status, asst.Metadata.CostUSD)
				}
				if len(be.all()) != 0 {
					t.Fatalf("budget events = %v, want none", be.all())
				}
				return
			}
			rf := budgetStop(t, items)
			if !strings.Contains(rf.Message, "per-answer budget") {
				t.Fatalf("RunFailed message = %q, want it to name the per-answer budget", rf.Message)
			}
			if asst.Status != domain.StatusFailed || asst.Metadata.Error == nil || asst.Metadata.Error.Code != "budget_exceeded" {
				t.Fatalf("message = %s %+v, want failed budget_exceeded", asst.Status, asst.Metadata.Error)
			}
			if !strings.Contains(asst.Metadata.Error.Message, "budget") {
				t.Fatalf("message error %q does not say why", asst.Metadata.Error.Message)
			}
			if asst.Metadata.CostUSD != tc.spent {
				t.Fatalf("message cost = %v, want %v", asst.Metadata.CostUSD, tc.spent)
			}
			evs := be.all()
			if len(evs) != 1 || evs[0].Scope != hooks.BudgetMessage || evs[0].LimitUSD != tc.limit || evs[0].SpentUSD != tc.spent ||
				evs[0].TenantID != alice.TenantID || evs[0].SessionID != s.ID {
				t.Fatalf("budget events = %+v, want one message event spent %v of %v", evs, tc.spent, tc.limit)
			}
		})
	}
}

func TestSessionBudget(t *testing.T) {
	t.Parallel()
	// Each answer: a tool call ($1) then the answer ($1).
	var n atomic.Int64
	m := dollarModel([]int{1})
	m.Respond = func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		u := domain.Usage{PromptTokens: 1, TotalTokens: 1}
		if n.Add(1)%2 == 0 {
			return scripted.Turn{Text: "done", Usage: u}, nil
		}
		return scripted.Turn{ToolCalls: []scripted.Call{{Name: "noop", Args: "{}"}}, Usage: u}, nil
	}
	f, be := budgetFixture(t, m, bichat.Budgets{PerSessionUSD: 3})
	s := f.session(t, alice, "session budget")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "first")))
	if c, err := f.svc.Costs().SessionCost(t.Context(), alice.TenantID, s.ID); err != nil || c != 2 {
		t.Fatalf("session cost = %v, %v; want 2", c, err)
	}
	// The second answer starts at $2 of $3 (its first call is estimated
	// at 0: nothing known yet) and stops at $3.
	budgetStop(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "second")))
	if got := m.Calls(); got != 3 {
		t.Fatalf("model calls = %d, want 3", got)
	}
	evs := be.all()
	if len(evs) != 1 || evs[0].Scope != hooks.BudgetSession || evs[0].SpentUSD != 3 || evs[0].LimitUSD != 3 {
		t.Fatalf("budget events = %+v", evs)
	}
	// Another session of the same user is not affected.
	s2 := f.session(t, alice, "other")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s2.ID, "fresh")))
}

func TestTenantDayBudget(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	m := dollarModel([]int{1})
	m.Respond = func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		n.Add(1)
		return scripted.Turn{Text: "done", Usage: domain.Usage{PromptTokens: 1, TotalTokens: 1}}, nil
	}
	f, be := budgetFixture(t, m, bichat.Budgets{PerTenantDayUSD: 100, TenantDayUSD: func(tenant string) float64 {
		if tenant == alice.TenantID {
			return 2
		}
		return 0
	}})
	// Two sessions of two users of one tenant share the day's $2.
	s1 := f.session(t, alice, "a")
	s2 := f.session(t, bob, "b")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s1.ID, "one")))
	finished(t, collect(t, f.svc.Send(t.Context(), bob, s2.ID, "two")))
	budgetStop(t, collect(t, f.svc.Send(t.Context(), alice, s1.ID, "three")))
	if n.Load() != 2 {
		t.Fatalf("model calls = %d, want 2", n.Load())
	}
	if evs := be.all(); len(evs) != 1 || evs[0].Scope != hooks.BudgetTenantDay || evs[0].SpentUSD != 2 {
		t.Fatalf("budget events = %+v", evs)
	}
	// Another tenant has no cap (TenantDayUSD returns 0 for it).
	s3 := f.session(t, stranger, "c")
	finished(t, collect(t, f.svc.Send(t.Context(), stranger, s3.ID, "four")))
	// The next UTC day starts from zero.
	f.clock.Advance(24 * time.Hour)
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s1.ID, "tomorrow")))
	days, err := f.svc.Costs().TenantDays(t.Context(), alice.TenantID, f.clock.Now().Add(-48*time.Hour), f.clock.Now())
	if err != nil || len(days) != 2 || days[0].USD != 2 || days[1].USD != 1 {
		t.Fatalf("tenant days = %+v, %v; want $2 then $1", days, err)
	}
}

func TestMessageCostAcrossResume(t *testing.T) {
	t.Parallel()
	// Call 1 asks the user ($1); after the answer, call 2 would be
	// estimated at $1 on top of $1 spent: within a $2 budget, so it runs
	// and answers ($1); the message cost is $2 in all.
	m := &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "priced", ContextWindow: 128000,
		Capabilities: agents.Capabilities{Tools: true}, Pricing: agents.Pricing{InputPerMTok: 1e6}},
		Turns: []scripted.Turn{
			{ToolCalls: []scripted.Call{scripted.CallJSON("ask_user_question", map[string]any{
				"questions": []map[string]any{{"question": "Which year?"}}})}, Usage: domain.Usage{PromptTokens: 1, TotalTokens: 1}},
			{Text: "In 2025.", Usage: domain.Usage{PromptTokens: 1, TotalTokens: 1}},
		}}
	f, _ := budgetFixture(t, m, bichat.Budgets{PerMessageUSD: 2})
	s := f.session(t, alice, "resume")
	_, in := interrupted(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "revenue?")))
	asst := f.messages(t, alice, s.ID)[1]
	if asst.Metadata.CostUSD != 1 {
		t.Fatalf("cost at the interrupt = %v, want 1", asst.Metadata.CostUSD)
	}
	answers := agents.Answers{in.Questions[0].ID: {Text: "2025"}}
	finished(t, collect(t, f.svc.Resume(t.Context(), alice, asst.ID, answers)))
	if got := f.message(t, alice, asst.ID).Metadata.CostUSD; got != 2 {
		t.Fatalf("cost after the resume = %v, want 2", got)
	}
}

func TestBudgetsValidated(t *testing.T) {
	t.Parallel()
	_, err := bichat.New(bichat.Config{Agent: agents.Config{Model: &scripted.Model{}}, Budgets: bichat.Budgets{PerSessionUSD: -1}})
	if err == nil || !strings.Contains(err.Error(), "PerSessionUSD") {
		t.Fatalf("New with a negative budget: %v", err)
	}
}
