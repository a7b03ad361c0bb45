package agents_test

import (
	"context"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

func TestPricingAt(t *testing.T) {
	t.Parallel()
	day := func(d int) time.Time { return time.Date(2026, 12, d, 0, 0, 0, 0, time.UTC) }
	info := agents.ModelInfo{Pricing: agents.Pricing{InputPerMTok: 10},
		PriceChanges: []agents.PriceChange{
			{From: day(20), Pricing: agents.Pricing{InputPerMTok: 2}},
			{From: day(10), Pricing: agents.Pricing{InputPerMTok: 5}},
		}}
	for _, tc := range []struct {
		at   time.Time
		want float64
	}{
		{day(9), 10},
		{day(10).Add(-time.Nanosecond), 10},
		{day(10), 5}, // a change applies from its instant on
		{day(19), 5},
		{day(20), 2},
		{day(31), 2},
	} {
		if got := info.PricingAt(tc.at).InputPerMTok; got != tc.want {
			t.Errorf("PricingAt(%s) = %v, want %v", tc.at, got, tc.want)
		}
	}
	if got := (agents.ModelInfo{Pricing: agents.Pricing{InputPerMTok: 3}}).PricingAt(day(1)).InputPerMTok; got != 3 {
		t.Errorf("without changes: %v", got)
	}
}

// The executor prices each call at the prices in force when it is made.
func TestCallPricedAtItsTime(t *testing.T) {
	t.Parallel()
	change := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	now := change.Add(-time.Hour)
	m := &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "dated", ContextWindow: 1000,
		Pricing:      agents.Pricing{InputPerMTok: 1e6},
		PriceChanges: []agents.PriceChange{{From: change, Pricing: agents.Pricing{InputPerMTok: 5e5}}}},
		Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
			return scripted.Turn{Text: "ok", Usage: domain.Usage{PromptTokens: 4, TotalTokens: 4}}, nil
		}}
	e, err := agents.NewExecutor(agents.Config{Model: m, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	cost := func() float64 {
		evs := events(t, drain(t, e.Run(t.Context(), agents.Input{Message: agents.UserMessage("hi")})))
		return evs[len(evs)-1].(*agents.RunFinished).CostUSD
	}
	if got := cost(); got != 4 {
		t.Fatalf("cost before the change = %v, want 4", got)
	}
	now = change.Add(time.Hour)
	if got := cost(); got != 2 {
		t.Fatalf("cost after the change = %v, want 2", got)
	}
}
