package bichat_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// models resolves names to scripted models.
type models map[string]*scripted.Model

func (m models) Model(name string) (agents.Model, error) {
	if x, ok := m[name]; ok {
		return x, nil
	}
	return nil, fmt.Errorf("no model called %q", name)
}

func TestSessionModelChoice(t *testing.T) {
	t.Parallel()
	other := &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "other", ContextWindow: 32000},
		Respond: brainModel().Respond}
	f := newFixture(t, brainModel(), []agents.Tool{discountTool(new(atomic.Int32))}, func(c *bichat.Config) {
		c.Models = models{"other": other}
	})
	if _, err := f.svc.CreateSession(t.Context(), alice, bichat.SessionOptions{Model: "missing"}); !errors.Is(err, domain.ErrInvalid) || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("unknown model: %v", err)
	}
	sess, err := f.svc.CreateSession(t.Context(), alice, bichat.SessionOptions{Model: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if _, fin := finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "hello"))); fin == nil {
		t.Fatal("run did not finish")
	}
	if other.Calls() != 1 || f.model.Calls() != 0 {
		t.Fatalf("calls: other %d, default %d", other.Calls(), f.model.Calls())
	}
	msgs := f.messages(t, alice, sess.ID)
	if got := msgs[len(msgs)-1].Metadata.Model; got != "other" {
		t.Errorf("answer model = %q", got)
	}
	// A confirmation issued under the session's model is approved by it.
	items := collect(t, f.svc.Send(t.Context(), alice, sess.ID, "[write] please"))
	_, intr := interrupted(t, items)
	if intr == nil || intr.Confirmation == nil {
		t.Fatalf("no confirmation: %s", describe(items))
	}
	if _, fin := finished(t, collect(t, f.svc.Approve(t.Context(), alice, intr.Header().MessageID, intr.Confirmation.Token))); fin == nil {
		t.Fatal("approve under the session's model failed")
	}
	if f.model.Calls() != 0 {
		t.Errorf("the default model was called %d times", f.model.Calls())
	}
	// The default model still serves sessions without a choice.
	def := f.session(t, alice, "default")
	collect(t, f.svc.Send(t.Context(), alice, def.ID, "hello"))
	if f.model.Calls() != 1 {
		t.Errorf("default model calls = %d", f.model.Calls())
	}
	msgs = f.messages(t, alice, def.ID)
	if got := msgs[len(msgs)-1].Metadata.Model; got != "scripted" {
		t.Errorf("default answer model = %q", got)
	}
}
