package domaintest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// concurrently calls fn(0) to fn(n-1), each from its own goroutine, all
// released at the same moment, and waits for them to return.
func concurrently(n int, fn func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			fn(i)
		})
	}
	close(start)
	wg.Wait()
}

// oneWinner checks the errors of concurrent calls to what: exactly one
// must be nil and every other must match lost. It returns the index of
// the call that succeeded, or -1, the test having failed, when not
// exactly one did.
func oneWinner(t *testing.T, what string, errs []error, lost error) int {
	t.Helper()
	winner, wins := -1, 0
	for i, err := range errs {
		switch {
		case err == nil:
			winner = i
			wins++
		case !errors.Is(err, lost):
			t.Errorf("%s %d: got error %v, want nil or one matching %q", what, i, err, lost)
		}
	}
	if wins != 1 {
		t.Errorf("%s: %d of %d concurrent calls succeeded, want exactly 1", what, wins, len(errs))
		return -1
	}
	return winner
}

// drainConcurrently runs callers goroutines, released at once, that each
// call take until it returns nothing, and returns the ids every call
// returned, from all callers. An error from take fails the test.
func drainConcurrently(t *testing.T, what string, callers int, take func() ([]string, error)) []string {
	t.Helper()
	got := make([][]string, callers)
	errs := make([]error, callers)
	concurrently(callers, func(i int) {
		for {
			ids, err := take()
			if err != nil {
				errs[i] = err
				return
			}
			if len(ids) == 0 {
				return
			}
			got[i] = append(got[i], ids...)
		}
	})
	var all []string
	for i := range callers {
		must(t, "concurrent "+what, errs[i])
		all = append(all, got[i]...)
	}
	return all
}

// claimRaces races claims of a message: in each of five rounds, on a new
// generating, unclaimed message of tenantA, 100 goroutines released at
// once call claim(messageID, runID, i), each i with a new run id. Exactly
// one must succeed and the others must fail with domain.ErrConflict
// (otherwise the test stops); check then gets the message as stored
// after the round, and the winner's run id and index. Several rounds,
// each on a fresh message, make a lost update likely to show even when
// the scheduler is busy.
func (e *env) claimRaces(what string, claim func(messageID, runID string, i int) error,
	check func(round int, got domain.Message, runID string, winner int)) {
	e.t.Helper()
	sess, _ := e.seedMessage(tenantA)
	for round := range 5 {
		m := newMessage(tenantA, sess.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Duration(round)*time.Minute))
		e.createMessages(m)
		const n = 100
		runs := make([]string, n)
		errs := make([]error, n)
		for i := range runs {
			runs[i] = domain.NewID()
		}
		concurrently(n, func(i int) { errs[i] = claim(m.ID, runs[i], i) })
		winner := oneWinner(e.t, fmt.Sprintf("round %d: %s", round, what), errs, domain.ErrConflict)
		if winner < 0 {
			e.t.FailNow()
		}
		check(round, e.getMessage(tenantA, m.ID), runs[winner], winner)
	}
}

// acrossTenants creates a session in tenantA and one in tenantB and calls
// seed n times, alternating between them (even i in tenantA, odd i in
// tenantB). It returns the ids seed returned, in order.
func (e *env) acrossTenants(n int, seed func(i int, sess domain.Session) string) []string {
	e.t.Helper()
	sessA := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
	sessB := e.createSession(tenantB, ownerA, "Chat", at(0), at(0))
	ids := make([]string, 0, n)
	for i := range n {
		sess := sessA
		if i%2 == 1 {
			sess = sessB
		}
		ids = append(ids, seed(i, sess))
	}
	return ids
}

// unclaimable lists the messages no claim may take: not generating, or
// generating but created with a run id.
var unclaimable = []struct {
	name    string
	status  domain.MessageStatus
	claimed bool
}{
	{"Complete", domain.StatusComplete, false},
	{"Failed", domain.StatusFailed, false},
	{"AwaitingInput", domain.StatusAwaitingInput, false},
	{"ClaimedAtCreate", domain.StatusGenerating, true},
}

// createUnclaimable stores, in a new session of tenantA, an assistant
// message with status, claimed at creation by a new run id when claimed
// is set, and returns it.
func (e *env) createUnclaimable(status domain.MessageStatus, claimed bool) domain.Message {
	e.t.Helper()
	sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
	m := newMessage(tenantA, sess.ID, domain.RoleAssistant, status, at(time.Second))
	if claimed {
		m.RunID = domain.NewID()
	}
	return e.createMessages(m)[0]
}

// lostRuns lists the ways a run loses the message it claimed: each setup
// takes a message claimed by run (see claimedMessage), changes it as
// another party would, and returns the run id the test then acts as
// (run itself, or another run's). RenewLease and FinishRun must refuse
// with domain.ErrConflict and change nothing after every one of them.
var lostRuns = []struct {
	name  string
	setup func(t *testing.T, e *env, m domain.Message, run string) (actAs string)
}{
	{"AfterComplete", func(t *testing.T, e *env, m domain.Message, run string) string {
		m.Status = domain.StatusComplete
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &m))
		return run
	}},
	{"AfterFailed", func(t *testing.T, e *env, m domain.Message, run string) string {
		m.Status = domain.StatusFailed
		m.Metadata.Error = &domain.MessageError{Code: "cancelled", Message: "cancelled", Time: at(time.Hour)}
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &m))
		return run
	}},
	{"AfterAwaitingInput", func(t *testing.T, e *env, m domain.Message, run string) string {
		m.Status = domain.StatusAwaitingInput
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &m))
		return run
	}},
	{"AfterReaped", func(t *testing.T, e *env, m domain.Message, run string) string {
		got, err := e.Runs.FailExpired(e.ctx, m.LeaseUntil.Add(time.Second),
			domain.MessageError{Code: "lease_expired", Message: "The run stopped responding.", Time: at(time.Hour)}, 0)
		must(t, "FailExpired", err)
		equalIDs(t, "FailExpired", messageIDs(got), []string{m.ID})
		return run
	}},
	{"AfterReopened", func(t *testing.T, e *env, m domain.Message, run string) string {
		m.RunID = ""
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &m))
		return run
	}},
	{"AfterReclaimed", func(t *testing.T, e *env, m domain.Message, run string) string {
		m.RunID = ""
		must(t, "UpdateMessage", e.Messages.UpdateMessage(e.ctx, &m))
		must(t, "ClaimRun", e.Runs.ClaimRun(e.ctx, tenantA, m.ID, domain.NewID(), at(time.Hour)))
		return run
	}},
	{"OtherRun", func(t *testing.T, e *env, m domain.Message, run string) string {
		return domain.NewID()
	}},
}
