package bichat_test

import (
	"context"
	"errors"
	"reflect"
	"sync/atomic"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
)

// owned is what one principal has in a service: a session with a finished
// answer (with an artifact and a run log), a message waiting for an answer
// and one waiting for approval.
type owned struct {
	sessionID, answerID, runID, artifactID string
	askMsg, confMsg, token                 string
}

func populate(t *testing.T, f *fixture, p domain.Principal) owned {
	t.Helper()
	ctx := t.Context()
	var o owned
	o.sessionID = f.session(t, p, "Sales").ID
	evs, _ := finished(t, collect(t, f.svc.Send(ctx, p, o.sessionID, "[chart] EMEA revenue")))
	rs := evs[0].(*agents.RunStarted)
	o.answerID, o.runID = rs.MessageID, rs.RunID
	arts, err := f.store.ListArtifacts(ctx, p.TenantID, o.answerID)
	if err != nil || len(arts) == 0 {
		t.Fatalf("artifacts of the answer: %v, %v", arts, err)
	}
	o.artifactID = arts[0].ID
	evs, _ = interrupted(t, collect(t, f.svc.Send(ctx, p, f.session(t, p, "Ask").ID, "[ask] revenue")))
	o.askMsg = evs[0].(*agents.RunStarted).MessageID
	evs, in := interrupted(t, collect(t, f.svc.Send(ctx, p, f.session(t, p, "Write").ID, "[write] discount")))
	o.confMsg, o.token = evs[0].(*agents.RunStarted).MessageID, in.Confirmation.Token
	return o
}

// Every Service method that takes an id answers alice with the very same
// error for another user's id (same tenant), another tenant's id and an id
// that exists nowhere: same sentinel, same concrete type, byte-identical
// text. Nothing tells her whether the id exists.
func TestNotFoundIsIndistinguishable(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil), discountTool(new(atomic.Int32))}, func(c *bichat.Config) {
		c.Knowledge.Recipes = recipes.New(kb.NewHashEmbedder(kb.HashEmbedderOptions{}), recipes.Options{})
	})
	mine := populate(t, f, alice)
	targets := []struct {
		name string
		ids  owned
	}{
		{"another user's", populate(t, f, bob)},
		{"another tenant's", populate(t, f, stranger)},
		{"missing", owned{sessionID: domain.NewID(), answerID: domain.NewID(), runID: domain.NewID(),
			artifactID: domain.NewID(), askMsg: domain.NewID(), confMsg: domain.NewID(), token: mine.token}},
	}
	ops := []struct {
		name string
		call func(ctx context.Context, o owned) error
	}{
		{"GetSession", func(ctx context.Context, o owned) error {
			_, err := f.svc.GetSession(ctx, alice, o.sessionID)
			return err
		}},
		{"RenameSession", func(ctx context.Context, o owned) error {
			_, err := f.svc.RenameSession(ctx, alice, o.sessionID, "Mine now")
			return err
		}},
		{"DeleteSession", func(ctx context.Context, o owned) error {
			return f.svc.DeleteSession(ctx, aliceAdmin, o.sessionID)
		}},
		{"Messages", func(ctx context.Context, o owned) error {
			_, err := f.svc.Messages(ctx, alice, o.sessionID, domain.MessageListOptions{})
			return err
		}},
		{"Messages.Before", func(ctx context.Context, o owned) error {
			_, err := f.svc.Messages(ctx, alice, mine.sessionID, domain.MessageListOptions{Before: o.answerID})
			return err
		}},
		{"Send", func(ctx context.Context, o owned) error {
			return streamErr(t, f.svc.Send(ctx, alice, o.sessionID, "And in APAC?"))
		}},
		{"Message", func(ctx context.Context, o owned) error {
			_, err := f.svc.Message(ctx, alice, o.answerID)
			return err
		}},
		{"Artifacts", func(ctx context.Context, o owned) error {
			_, err := f.svc.Artifacts(ctx, alice, o.answerID)
			return err
		}},
		{"ArtifactContent", func(ctx context.Context, o owned) error {
			rc, _, err := f.svc.ArtifactContent(ctx, alice, o.artifactID)
			if rc != nil {
				_ = rc.Close()
			}
			return err
		}},
		{"SaveRecipe", func(ctx context.Context, o owned) error {
			_, err := f.svc.SaveRecipe(ctx, alice, o.answerID)
			return err
		}},
		{"PendingInterrupt", func(ctx context.Context, o owned) error {
			_, err := f.svc.PendingInterrupt(ctx, alice, o.askMsg)
			return err
		}},
		{"Resume", func(ctx context.Context, o owned) error {
			return streamErr(t, f.svc.Resume(ctx, alice, o.askMsg, validAnswers))
		}},
		{"Approve", func(ctx context.Context, o owned) error {
			return streamErr(t, f.svc.Approve(ctx, alice, o.confMsg, o.token))
		}},
		{"Deny", func(ctx context.Context, o owned) error {
			return streamErr(t, f.svc.Deny(ctx, alice, o.confMsg, o.token, "no"))
		}},
		{"Watch", func(ctx context.Context, o owned) error {
			return streamErr(t, f.svc.Watch(ctx, alice, o.answerID, 0))
		}},
		{"Cancel", func(ctx context.Context, o owned) error {
			return f.svc.Cancel(ctx, alice, o.answerID)
		}},
		{"Cancel.Awaiting", func(ctx context.Context, o owned) error {
			return f.svc.Cancel(ctx, alice, o.askMsg)
		}},
		{"Replay", func(ctx context.Context, o owned) error {
			_, err := f.svc.Replay(ctx, alice, o.runID, 0)
			return err
		}},
		{"Replay.AfterSeq", func(ctx context.Context, o owned) error {
			_, err := f.svc.Replay(ctx, alice, o.runID, 3)
			return err
		}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			var first error
			for _, tg := range targets {
				err := op.call(t.Context(), tg.ids)
				if !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("%s id: %v, want ErrNotFound", tg.name, err)
				}
				if first == nil {
					first = err
					continue
				}
				if reflect.TypeOf(err) != reflect.TypeOf(first) || err.Error() != first.Error() {
					t.Errorf("%s id: %T %q; %s id: %T %q: the caller can tell them apart",
						targets[0].name, first, first.Error(), tg.name, err, err.Error())
				}
			}
		})
	}
	// The others' data is untouched, and alice's own ids still work.
	if _, err := f.svc.GetSession(t.Context(), bob, targets[0].ids.sessionID); err != nil {
		t.Errorf("bob's session after alice's attempts: %v", err)
	}
	if _, err := f.svc.PendingInterrupt(t.Context(), stranger, targets[1].ids.confMsg); err != nil {
		t.Errorf("stranger's confirmation after alice's attempts: %v", err)
	}
	if _, err := f.svc.Messages(t.Context(), alice, mine.sessionID, domain.MessageListOptions{Before: mine.answerID}); err != nil {
		t.Errorf("Messages before alice's own answer: %v", err)
	}
}
