package bichat_test

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/quota"
)

// quotaRefusal requires items to be exactly one error refusing the
// request with limit and RetryAfter, and returns it.
func quotaRefusal(t *testing.T, items []item, limit string, retry time.Duration) *bichat.RateLimitError {
	t.Helper()
	if len(items) != 1 || items[0].err == nil {
		t.Fatalf("stream = %s, want one quota error", describe(items))
	}
	err := items[0].err
	var rl *bichat.RateLimitError
	var qe *quota.ExceededError
	if !errors.As(err, &rl) || !errors.As(err, &qe) || !errors.Is(err, bichat.ErrTooManyRequests) || !errors.Is(err, quota.ErrExceeded) {
		t.Fatalf("error %v (%T) is not a RateLimitError wrapping a quota refusal", err, err)
	}
	if qe.Limit != limit || rl.RetryAfter != retry || qe.RetryAfter != retry {
		t.Fatalf("refusal = %+v retry %v, want %s retry %v", qe, rl.RetryAfter, limit, retry)
	}
	if bichat.HTTPStatus(err) != http.StatusTooManyRequests {
		t.Fatalf("HTTPStatus = %d", bichat.HTTPStatus(err))
	}
	return rl
}

func quotaFixture(t *testing.T, m *scripted.Model, p quota.Policy) (*fixture, *busLog) {
	t.Helper()
	qlog := &busLog{}
	f := newFixture(t, m, []agents.Tool{noopTool()}, func(c *bichat.Config) {
		lim, err := quota.NewMemory(p, quota.MemoryOptions{Now: c.Now})
		if err != nil {
			t.Fatal(err)
		}
		c.Quota = lim
		if _, err := c.Bus.Subscribe(qlog, hooks.KindQuotaExceeded, hooks.KindDecision); err != nil {
			t.Fatal(err)
		}
	})
	return f, qlog
}

func TestQuotaRequestsPerMinute(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "ok"}, nil
	}}
	f, qlog := quotaFixture(t, m, quota.Policy{User: quota.Limits{RequestsPerMinute: 2}})
	s := f.session(t, alice, "rpm")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "one")))
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "two")))
	// A bucket of 2 refilled at 2 per minute: the next request in 30 s.
	quotaRefusal(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "three")), quota.LimitRequests, 30*time.Second)
	if n := len(f.messages(t, alice, s.ID)); n != 4 {
		t.Fatalf("messages = %d, want 4: a refused question creates nothing", n)
	}
	if evs := qlog.ofKind(hooks.KindQuotaExceeded); len(evs) != 1 || evs[0].meta.TenantID != alice.TenantID || evs[0].meta.UserID != alice.UserID {
		t.Fatalf("quota events = %+v", evs)
	}
	// Another user has a bucket of their own.
	sb := f.session(t, bob, "bob")
	finished(t, collect(t, f.svc.Send(t.Context(), bob, sb.ID, "mine")))
	f.clock.Advance(30 * time.Second)
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "later")))
}

func TestQuotaTokensPerMinute(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Respond: func(context.Context, *agents.Request) (scripted.Turn, error) {
		return scripted.Turn{Text: "ok", Usage: domain.Usage{PromptTokens: 150, CompletionTokens: 50, TotalTokens: 200}}, nil
	}}
	f, _ := quotaFixture(t, m, quota.Policy{Tenant: quota.Limits{TokensPerMinute: 100}})
	s := f.session(t, alice, "tpm")
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s.ID, "one")))
	// 200 tokens of a 100-per-minute bucket: 100 in debt, refilled in 60 s.
	quotaRefusal(t, collect(t, f.svc.Send(t.Context(), bob, f.session(t, bob, "b").ID, "two")), quota.LimitTokens, 60*time.Second)
}

func TestQuotaConcurrentRuns(t *testing.T) {
	t.Parallel()
	release, started := make(chan struct{}), make(chan struct{})
	m := &scripted.Model{Respond: func(ctx context.Context, req *agents.Request) (scripted.Turn, error) {
		if strings.Contains(req.Messages[len(req.Messages)-1].Text(), "slow") {
			close(started)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return scripted.Turn{Text: "ok"}, nil
	}}
	f, _ := quotaFixture(t, m, quota.Policy{User: quota.Limits{ConcurrentRuns: 1}})
	s1 := f.session(t, alice, "one")
	s2 := f.session(t, alice, "two")
	done := make(chan []item, 1)
	go func() { done <- collect(t, f.svc.Send(context.Background(), alice, s1.ID, "slow")) }()
	select {
	case <-started:
	case <-time.After(guard):
		t.Fatal("the slow run did not start")
	}
	quotaRefusal(t, collect(t, f.svc.Send(t.Context(), alice, s2.ID, "fast")), quota.LimitConcurrent, quota.ConcurrentRetryAfter)
	// Another user is not affected.
	finished(t, collect(t, f.svc.Send(t.Context(), bob, f.session(t, bob, "b").ID, "fast")))
	close(release)
	finished(t, <-done)
	// The slot is free again once the run ended.
	finished(t, collect(t, f.svc.Send(t.Context(), alice, s2.ID, "after")))
}

func TestQuotaHTTP429(t *testing.T) {
	t.Parallel()
	f := newHTTPFixture(t, func(c *bichat.Config, _ *bichat.HandlerOptions) {
		lim, err := quota.NewMemory(quota.Policy{User: quota.Limits{RequestsPerMinute: 1}}, quota.MemoryOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Quota = lim
	})
	s := f.session(t, "alice")
	f.ask(t, "alice", s.ID, "first")
	r := f.want(t, http.StatusTooManyRequests, req{method: "POST", path: "/sessions/" + s.ID + "/messages", user: "alice",
		body: bichat.PostMessageRequest{Text: "second"}})
	secs, err := strconv.Atoi(r.header.Get("Retry-After"))
	if err != nil || secs < 59 || secs > 60 {
		t.Fatalf("Retry-After = %q, want about 60", r.header.Get("Retry-After"))
	}
	if e := r.errBody(t); e.Code != "rate_limited" {
		t.Fatalf("error = %+v", e)
	}
}
