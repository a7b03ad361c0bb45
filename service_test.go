package bichat_test

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

// ---------------------------------------------------------------------------
// Helpers shared by the service tests (package bichat_test).
// ---------------------------------------------------------------------------

// guard bounds every wait. It only fires when the code under test is broken
// (a deadlock or a missing wake-up); it never synchronises anything.
const guard = 10 * time.Second

var (
	alice       = domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessContributor}}
	aliceViewer = domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessViewer}}
	aliceAdmin  = domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{domain.AccessAdmin}}
	// bob is another user of alice's tenant.
	bob = domain.Principal{TenantID: "acme", UserID: "bob", Roles: []domain.AccessRole{domain.AccessAdmin}}
	// stranger has alice's user id but lives in another tenant.
	stranger = domain.Principal{TenantID: "globex", UserID: "alice", Roles: []domain.AccessRole{domain.AccessAdmin}}
)

// fakeClock is a controllable Config.Now. It starts at the wall clock so
// that timestamps the memory store sets by itself (Claim) stay comparable.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *fakeClock { return &fakeClock{now: time.Now().UTC()} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// busEvent is what the tests keep of a published event (handlers must not
// retain the event itself).
type busEvent struct {
	kind   hooks.Kind
	meta   hooks.Meta
	role   domain.Role
	status domain.MessageStatus
	title  string
	usage  domain.Usage
}

type busLog struct {
	mu  sync.Mutex
	evs []busEvent
}

func (l *busLog) Handle(_ context.Context, e hooks.Event) error {
	be := busEvent{kind: e.Kind(), meta: *e.Header()}
	switch v := e.(type) {
	case *hooks.MessageSave:
		be.role, be.status, be.usage = v.Role, v.Status, v.Usage
	case *hooks.SessionCreate:
		be.title = v.Title
	case *hooks.SessionUpdate:
		be.title = v.Title
	}
	l.mu.Lock()
	l.evs = append(l.evs, be)
	l.mu.Unlock()
	return nil
}

func (l *busLog) ofKind(k hooks.Kind) []busEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []busEvent
	for _, e := range l.evs {
		if e.kind == k {
			out = append(out, e)
		}
	}
	return out
}

type fixture struct {
	svc   *bichat.Service
	store *memory.Store
	model *scripted.Model
	bus   *busLog
	clock *fakeClock
}

// newFixture builds a service over a fresh in-memory store, a bus that
// records every event and a fake clock. tweak adjusts the config.
func newFixture(t testing.TB, model *scripted.Model, tools []agents.Tool, tweak ...func(*bichat.Config)) *fixture {
	t.Helper()
	store := memory.New()
	bus := hooks.New(hooks.Options{OnError: func(*hooks.HandlerError) {}})
	log := &busLog{}
	if _, err := bus.Subscribe(log); err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	cfg := bichat.Config{
		Agent:  agents.Config{Model: model, System: "You are a test analyst.", Tools: tools},
		Store:  store.Repositories(),
		Bus:    bus,
		Logger: slog.New(slog.DiscardHandler),
		Now:    clk.Now,
	}
	for _, f := range tweak {
		f(&cfg)
	}
	svc, err := bichat.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	closeAtEnd(t, svc)
	return &fixture{svc: svc, store: store, model: model, bus: log, clock: clk}
}

// closeAtEnd closes svc when the test ends: runs belong to the service and
// would outlive the test otherwise.
func closeAtEnd(t testing.TB, svc *bichat.Service) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), guard)
		defer cancel()
		if err := svc.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
}

func (f *fixture) session(t testing.TB, p domain.Principal, title string) *domain.Session {
	t.Helper()
	s, err := f.svc.CreateSession(t.Context(), p, bichat.SessionOptions{Title: title})
	if err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return s
}

func (f *fixture) message(t testing.TB, p domain.Principal, id string) *domain.Message {
	t.Helper()
	m, err := f.svc.Message(t.Context(), p, id)
	if err != nil {
		t.Fatalf("Message(%s): %v", id, err)
	}
	return m
}

func (f *fixture) messages(t testing.TB, p domain.Principal, sessionID string) []domain.Message {
	t.Helper()
	msgs, err := f.svc.Messages(t.Context(), p, sessionID, domain.MessageListOptions{})
	if err != nil {
		t.Fatalf("Messages: %v", err)
	}
	return msgs
}

// item is one element yielded by Send, Resume, Approve or Deny.
type item struct {
	ev  agents.Event
	err error
}

// collect ranges over seq on another goroutine and returns what it yielded.
func collect(t testing.TB, seq iter.Seq2[agents.Event, error]) []item {
	t.Helper()
	ch := make(chan []item, 1)
	go func() {
		var out []item
		for ev, err := range seq {
			out = append(out, item{ev, err})
		}
		ch <- out
	}()
	select {
	case out := <-ch:
		return out
	case <-time.After(guard):
		t.Fatalf("stream did not end within %s", guard)
		return nil
	}
}

func describe(items []item) string {
	var b strings.Builder
	for _, it := range items {
		if it.err != nil {
			fmt.Fprintf(&b, "[error %v] ", it.err)
		} else {
			fmt.Fprintf(&b, "%s ", it.ev.Type())
		}
	}
	return b.String()
}

// events returns the events of items, failing on any error.
func events(t testing.TB, items []item) []agents.Event {
	t.Helper()
	out := make([]agents.Event, 0, len(items))
	for i, it := range items {
		if it.err != nil || it.ev == nil {
			t.Fatalf("item %d = (%v, %v); stream: %s", i, it.ev, it.err, describe(items))
		}
		out = append(out, it.ev)
	}
	if len(out) == 0 {
		t.Fatal("stream yielded nothing")
	}
	return out
}

// finished requires a stream that opens with RunStarted and ends with
// RunFinished.
func finished(t testing.TB, items []item) ([]agents.Event, *agents.RunFinished) {
	t.Helper()
	evs := events(t, items)
	if _, ok := evs[0].(*agents.RunStarted); !ok {
		t.Fatalf("first event is %T, want *RunStarted; stream: %s", evs[0], describe(items))
	}
	rf, ok := evs[len(evs)-1].(*agents.RunFinished)
	if !ok {
		t.Fatalf("last event is %T, want *RunFinished; stream: %s", evs[len(evs)-1], describe(items))
	}
	return evs, rf
}

// interrupted requires a stream that ends with Interrupted.
func interrupted(t testing.TB, items []item) ([]agents.Event, *agents.Interrupted) {
	t.Helper()
	evs := events(t, items)
	in, ok := evs[len(evs)-1].(*agents.Interrupted)
	if !ok {
		t.Fatalf("last event is %T, want *Interrupted; stream: %s", evs[len(evs)-1], describe(items))
	}
	return evs, in
}

// failedRun requires RunFailed followed by an error as the last element.
func failedRun(t testing.TB, items []item) ([]agents.Event, *agents.RunFailed, error) {
	t.Helper()
	if len(items) < 2 {
		t.Fatalf("stream %s: want at least RunFailed and an error", describe(items))
	}
	last := items[len(items)-1]
	if last.ev != nil || last.err == nil {
		t.Fatalf("last element = (%v, %v), want (nil, error); stream: %s", last.ev, last.err, describe(items))
	}
	evs := events(t, items[:len(items)-1])
	rf, ok := evs[len(evs)-1].(*agents.RunFailed)
	if !ok {
		t.Fatalf("element before the error is %T, want *RunFailed; stream: %s", evs[len(evs)-1], describe(items))
	}
	return evs, rf, last.err
}

// onlyErr requires exactly one element: (nil, error).
func onlyErr(t testing.TB, items []item) error {
	t.Helper()
	if len(items) != 1 || items[0].ev != nil || items[0].err == nil {
		t.Fatalf("stream %s: want exactly one (nil, error) element", describe(items))
	}
	return items[0].err
}

// streamErr drains seq and returns its error, or nil when it yielded only
// events (at least one).
func streamErr(t testing.TB, seq iter.Seq2[agents.Event, error]) error {
	t.Helper()
	items := collect(t, seq)
	for _, it := range items {
		if it.err != nil {
			return it.err
		}
	}
	if len(items) == 0 {
		return errors.New("stream yielded nothing")
	}
	return nil
}

func ofType[T agents.Event](evs []agents.Event) []T {
	var out []T
	for _, ev := range evs {
		if e, ok := ev.(T); ok {
			out = append(out, e)
		}
	}
	return out
}

// hasField reports whether err is an ErrInvalid naming field.
func hasField(err error, field string) bool {
	if !errors.Is(err, domain.ErrInvalid) {
		return false
	}
	return slices.ContainsFunc(domain.FieldErrors(err), func(fe domain.FieldError) bool { return fe.Field == field })
}

// Tools.

type salesArgs struct {
	Region string `json:"region" jsonschema:"enum=EMEA,enum=APAC"`
	Year   int    `json:"year"`
}

type salesRow struct {
	Region  string  `json:"region"`
	Revenue float64 `json:"revenue"`
}

const salesDataset = "sales.orders"

// salesTool is a typed read tool with the two-track result: a payload for
// the host, a summary for the model, a dataset and a chart artifact.
func salesTool(runs *atomic.Int32) agents.Tool {
	return agents.MustTool("sales_by_region", "Revenue of one sales region in one year.",
		func(_ context.Context, in salesArgs) (agents.Result, error) {
			if runs != nil {
				runs.Add(1)
			}
			return agents.Result{
				Summary:  fmt.Sprintf("%s %d: revenue 1234.50 EUR over 17 orders", in.Region, in.Year),
				Payload:  []salesRow{{Region: in.Region, Revenue: 1234.5}},
				Datasets: []string{salesDataset},
				Artifacts: []domain.Artifact{{Kind: domain.ArtifactChart, Name: "revenue.png", MediaType: "image/png",
					SHA256: domain.ContentHash([]byte("png")), Size: 3}},
			}, nil
		})
}

type discountArgs struct {
	Percent int `json:"percent" jsonschema:"minimum=1,maximum=50"`
}

// discountTool is a write tool: it needs the host's approval.
func discountTool(runs *atomic.Int32) agents.Tool {
	return agents.MustTool("apply_discount", "Apply a discount to every open order.",
		func(_ context.Context, in discountArgs) (string, error) {
			runs.Add(1)
			return fmt.Sprintf("applied a %d%% discount to 3 orders", in.Percent), nil
		}, agents.WithPermission(agents.PermWrite))
}

const askArgs = `{"questions":[{"id":"period","question":"Which period?","options":[{"label":"Q3"},{"label":"Q4"}]}]}`

var validAnswers = agents.Answers{"period": {Selected: []string{"Q3"}}}

// brainModel answers by the question's tag: "[chart]" calls the sales tool,
// "[ask]" asks the user, "[write]" calls the write tool, anything else is
// answered with text; after a tool result it answers "Done.".
func brainModel() *scripted.Model {
	return &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role != domain.RoleUser {
			return scripted.Turn{Text: "Done."}, nil
		}
		q := last.Text()
		switch {
		case strings.Contains(q, "[chart]"):
			return scripted.Turn{Text: "Looking.", ToolCalls: []scripted.Call{scripted.CallJSON("sales_by_region", salesArgs{"EMEA", 2025})}}, nil
		case strings.Contains(q, "[ask]"):
			return scripted.Turn{Text: "One question first.", ToolCalls: []scripted.Call{{Name: agents.ToolAskUserQuestion, Args: askArgs}}}, nil
		case strings.Contains(q, "[write]"):
			return scripted.Turn{ToolCalls: []scripted.Call{{Name: "apply_discount", Args: `{"percent":10}`}}}, nil
		}
		return scripted.Turn{Text: "Answer."}, nil
	}}
}

// world is alice's state in a fresh service: a finished exchange with an
// artifact, a message waiting for an answer and one waiting for approval.
type world struct {
	*fixture
	writes   *atomic.Int32
	sess     *domain.Session
	answerID string // complete assistant message with an artifact
	runID    string
	askSess  *domain.Session
	askMsg   string
	confSess *domain.Session
	confMsg  string
	token    string
}

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{writes: new(atomic.Int32)}
	w.fixture = newFixture(t, brainModel(), []agents.Tool{salesTool(nil), discountTool(w.writes)})
	ctx := t.Context()
	w.sess = w.session(t, alice, "Sales")
	evs, _ := finished(t, collect(t, w.svc.Send(ctx, alice, w.sess.ID, "[chart] EMEA revenue")))
	rs := evs[0].(*agents.RunStarted)
	w.answerID, w.runID = rs.MessageID, rs.RunID

	w.askSess = w.session(t, alice, "Ask")
	evs, _ = interrupted(t, collect(t, w.svc.Send(ctx, alice, w.askSess.ID, "[ask] revenue")))
	w.askMsg = evs[0].(*agents.RunStarted).MessageID

	w.confSess = w.session(t, alice, "Write")
	evs, in := interrupted(t, collect(t, w.svc.Send(ctx, alice, w.confSess.ID, "[write] discount")))
	w.confMsg = evs[0].(*agents.RunStarted).MessageID
	w.token = in.Confirmation.Token
	return w
}

// state is everything of alice's that a refused call must leave alone,
// read from the store directly.
type state struct {
	Sessions    []domain.Session
	Messages    map[string][]domain.Message
	Checkpoints map[string]*domain.Checkpoint
	RunEvents   []domain.RunEvent
	Artifacts   []domain.Artifact
	ModelCalls  int
	Writes      int32
}

func (w *world) state(t testing.TB) state {
	t.Helper()
	ctx := context.Background()
	page, err := w.store.ListSessions(ctx, "acme", "alice", domain.ListOptions{PageSize: 100})
	if err != nil {
		t.Fatal(err)
	}
	st := state{Sessions: page.Items, Messages: map[string][]domain.Message{}, Checkpoints: map[string]*domain.Checkpoint{},
		ModelCalls: w.model.Calls(), Writes: w.writes.Load()}
	for _, s := range page.Items {
		msgs, err := w.store.ListMessages(ctx, "acme", s.ID, domain.MessageListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		st.Messages[s.ID] = msgs
		for _, m := range msgs {
			if cp, err := w.store.GetCheckpoint(ctx, "acme", m.ID); err == nil {
				st.Checkpoints[m.ID] = cp
			}
		}
	}
	if st.RunEvents, err = w.store.ListRunEvents(ctx, "acme", w.runID, 0, 0); err != nil {
		t.Fatal(err)
	}
	if st.Artifacts, err = w.store.ListArtifacts(ctx, "acme", w.answerID); err != nil {
		t.Fatal(err)
	}
	return st
}

func (w *world) unchanged(t testing.TB, before state) {
	t.Helper()
	if after := w.state(t); !reflect.DeepEqual(before, after) {
		t.Errorf("a refused call changed alice's data:\nbefore %+v\nafter  %+v", before, after)
	}
}

// serviceOp is one Service method called the way a host would call it.
type serviceOp struct {
	name string
	perm domain.Permission
	call func(t *testing.T, w *world, p domain.Principal) error
}

func serviceOps() []serviceOp {
	return []serviceOp{
		{"CreateSession", domain.PermWrite, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.CreateSession(t.Context(), p, bichat.SessionOptions{Title: "Another"})
			return err
		}},
		{"GetSession", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.GetSession(t.Context(), p, w.sess.ID)
			return err
		}},
		{"ListSessions", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.ListSessions(t.Context(), p, domain.ListOptions{})
			return err
		}},
		{"RenameSession", domain.PermWrite, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.RenameSession(t.Context(), p, w.sess.ID, "Renamed")
			return err
		}},
		{"DeleteSession", domain.PermDelete, func(t *testing.T, w *world, p domain.Principal) error {
			return w.svc.DeleteSession(t.Context(), p, w.sess.ID)
		}},
		{"Messages", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.Messages(t.Context(), p, w.sess.ID, domain.MessageListOptions{})
			return err
		}},
		{"Message", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.Message(t.Context(), p, w.answerID)
			return err
		}},
		{"Artifacts", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.Artifacts(t.Context(), p, w.answerID)
			return err
		}},
		{"Send", domain.PermWrite, func(t *testing.T, w *world, p domain.Principal) error {
			return streamErr(t, w.svc.Send(t.Context(), p, w.sess.ID, "And in APAC?"))
		}},
		{"Resume", domain.PermWrite, func(t *testing.T, w *world, p domain.Principal) error {
			return streamErr(t, w.svc.Resume(t.Context(), p, w.askMsg, validAnswers))
		}},
		{"Approve", domain.PermWrite, func(t *testing.T, w *world, p domain.Principal) error {
			return streamErr(t, w.svc.Approve(t.Context(), p, w.confMsg, w.token))
		}},
		{"Deny", domain.PermWrite, func(t *testing.T, w *world, p domain.Principal) error {
			return streamErr(t, w.svc.Deny(t.Context(), p, w.confMsg, w.token, "not now"))
		}},
		{"PendingInterrupt", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			_, err := w.svc.PendingInterrupt(t.Context(), p, w.askMsg)
			return err
		}},
		{"Watch", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			return streamErr(t, w.svc.Watch(t.Context(), p, w.answerID, 0))
		}},
		{"Replay", domain.PermRead, func(t *testing.T, w *world, p domain.Principal) error {
			evs, err := w.svc.Replay(t.Context(), p, w.runID, 0)
			if err == nil && len(evs) == 0 {
				return errors.New("replay returned no events")
			}
			return err
		}},
	}
}

// ---------------------------------------------------------------------------
// New
// ---------------------------------------------------------------------------

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{}
	store := memory.New()
	cases := []struct {
		name string
		cfg  bichat.Config
		want string
	}{
		{"nil model", bichat.Config{}, "Model"},
		{"only sessions", bichat.Config{Agent: agents.Config{Model: model}, Store: domain.Repositories{Sessions: store}}, "Store"},
		{"all but run events", bichat.Config{Agent: agents.Config{Model: model}, Store: domain.Repositories{
			Sessions: store, Messages: store, Checkpoints: store, Artifacts: store}}, "Store"},
		{"negative history", bichat.Config{Agent: agents.Config{Model: model}, Limits: bichat.Limits{HistoryMessages: -1}}, "negative"},
		{"negative record chars", bichat.Config{Agent: agents.Config{Model: model}, Limits: bichat.Limits{ToolRecordChars: -1}}, "negative"},
		{"negative run timeout", bichat.Config{Agent: agents.Config{Model: model}, Limits: bichat.Limits{RunTimeout: -time.Second}}, "negative"},
		{"negative stale after", bichat.Config{Agent: agents.Config{Model: model}, Limits: bichat.Limits{StaleAfter: -time.Second}}, "negative"},
		{"stale equals timeout", bichat.Config{Agent: agents.Config{Model: model},
			Limits: bichat.Limits{RunTimeout: time.Minute, StaleAfter: time.Minute}}, "StaleAfter"},
		{"stale below timeout", bichat.Config{Agent: agents.Config{Model: model},
			Limits: bichat.Limits{RunTimeout: time.Hour, StaleAfter: time.Minute}}, "StaleAfter"},
		{"stale below default timeout", bichat.Config{Agent: agents.Config{Model: model},
			Limits: bichat.Limits{StaleAfter: 5 * time.Minute}}, "StaleAfter"},
		{"bad agent config", bichat.Config{Agent: agents.Config{Model: model, MaxTurns: -1}}, "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			svc, err := bichat.New(tc.cfg)
			if err == nil || svc != nil {
				t.Fatalf("New = (%v, %v), want an error", svc, err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestNewDefaultStoreWorks(t *testing.T) {
	t.Parallel()
	svc, err := bichat.New(bichat.Config{Agent: agents.Config{Model: &scripted.Model{Turns: []scripted.Turn{{Text: "Hi."}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sess, err := svc.CreateSession(t.Context(), alice, bichat.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	finished(t, collect(t, svc.Send(t.Context(), alice, sess.ID, "Hello")))
	msgs, err := svc.Messages(t.Context(), alice, sess.ID, domain.MessageListOptions{})
	if err != nil || len(msgs) != 2 || msgs[1].Status != domain.StatusComplete {
		t.Fatalf("Messages = %+v, %v; want a complete exchange in the default store", msgs, err)
	}
}

// TestNewDefaultStaleAfter observes the StaleAfter default through
// RecoverStale: 15 minutes, or RunTimeout plus 5 minutes when that is
// longer.
func TestNewDefaultStaleAfter(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		runTimeout time.Duration
		stale      time.Duration
	}{
		{"default", 0, bichat.DefaultStaleAfter},
		{"long run timeout", 20 * time.Minute, 25 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, &scripted.Model{}, nil, func(c *bichat.Config) { c.Limits.RunTimeout = tc.runTimeout })
			sess := f.session(t, alice, "")
			now := f.clock.Now()
			young := generating(t, f, sess, now.Add(-tc.stale+time.Minute))
			old := generating(t, f, sess, now.Add(-tc.stale-time.Minute))
			n, err := f.svc.RecoverStale(t.Context())
			if err != nil || n != 1 {
				t.Fatalf("RecoverStale = %d, %v; want 1", n, err)
			}
			if m := f.message(t, alice, young); m.Status != domain.StatusGenerating {
				t.Errorf("message %s younger than %s is %s", young, tc.stale, m.Status)
			}
			if m := f.message(t, alice, old); m.Status != domain.StatusFailed {
				t.Errorf("message %s older than %s is %s", old, tc.stale, m.Status)
			}
		})
	}
}

// generating stores a question and a generating answer last updated at
// updated, directly in the store, and returns the answer's id.
func generating(t testing.TB, f *fixture, sess *domain.Session, updated time.Time) string {
	t.Helper()
	return storeExchange(t, f, sess, domain.StatusGenerating, updated)
}

func storeExchange(t testing.TB, f *fixture, sess *domain.Session, status domain.MessageStatus, at time.Time) string {
	t.Helper()
	q := &domain.Message{ID: domain.NewID(), TenantID: sess.TenantID, SessionID: sess.ID, Role: domain.RoleUser,
		Parts: []domain.Part{domain.TextPart("question at " + at.Format(time.RFC3339Nano))}, Status: domain.StatusComplete,
		CreatedAt: at, UpdatedAt: at}
	a := &domain.Message{ID: domain.NewID(), TenantID: sess.TenantID, SessionID: sess.ID, Role: domain.RoleAssistant,
		Parts: []domain.Part{domain.TextPart("answer at " + at.Format(time.RFC3339Nano))}, Status: status,
		CreatedAt: at, UpdatedAt: at}
	if err := f.store.CreateMessages(t.Context(), q, a); err != nil {
		t.Fatal(err)
	}
	return a.ID
}

func TestNewDefaultToolRecordChars(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 2500)
	tool := agents.MustTool("echo", "Echo a long text.", func(context.Context, struct{}) (string, error) { return long, nil })
	model := &scripted.Model{Turns: []scripted.Turn{{ToolCalls: []scripted.Call{{Name: "echo", Args: "{}"}}}, {Text: "Echoed."}}}
	f := newFixture(t, model, []agents.Tool{tool})
	sess := f.session(t, alice, "")
	evs, _ := finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "echo")))
	m := f.message(t, alice, evs[0].(*agents.RunStarted).MessageID)
	if len(m.Metadata.ToolCalls) != 1 {
		t.Fatalf("ToolCalls = %+v", m.Metadata.ToolCalls)
	}
	r := m.Metadata.ToolCalls[0]
	if n := len([]rune(r.Result)); !r.Truncated || n > bichat.DefaultToolRecordChars || n < bichat.DefaultToolRecordChars-1 {
		t.Errorf("record result has %d characters (truncated %v), want about %d", n, r.Truncated, bichat.DefaultToolRecordChars)
	}
}

func TestNewDefaultHistoryMessages(t *testing.T) {
	t.Parallel()
	model := &scripted.Model{Turns: []scripted.Turn{{Text: "Answer."}}}
	f := newFixture(t, model, nil)
	sess := f.session(t, alice, "")
	base := f.clock.Now().Add(-time.Hour)
	for i := range 30 { // 60 messages
		storeExchange(t, f, sess, domain.StatusComplete, base.Add(time.Duration(i)*time.Second))
	}
	finished(t, collect(t, f.svc.Send(t.Context(), alice, sess.ID, "newest")))
	req := f.model.Requests()[0]
	if got, want := len(req.Messages), bichat.DefaultHistoryMessages+1; got != want {
		t.Fatalf("request has %d messages, want %d (default history plus the question)", got, want)
	}
	// The window holds the most recent messages.
	if got := req.Messages[len(req.Messages)-2].Text(); !strings.Contains(got, base.Add(29*time.Second).Format(time.RFC3339Nano)) {
		t.Errorf("last history message = %q, want the newest stored answer", got)
	}
}

// ---------------------------------------------------------------------------
// Permissions, principals, ownership and tenancy
// ---------------------------------------------------------------------------

func TestPermissionsMatrix(t *testing.T) {
	t.Parallel()
	principals := []struct {
		name  string
		p     domain.Principal
		allow []domain.Permission
	}{
		{"viewer", aliceViewer, []domain.Permission{domain.PermRead}},
		{"contributor", alice, []domain.Permission{domain.PermRead, domain.PermWrite, domain.PermDelete}},
		{"admin", aliceAdmin, []domain.Permission{domain.PermRead, domain.PermWrite, domain.PermDelete}},
		{"no roles", domain.Principal{TenantID: "acme", UserID: "alice"}, nil},
		{"unknown role", domain.Principal{TenantID: "acme", UserID: "alice", Roles: []domain.AccessRole{"owner"}}, nil},
		{"viewer with explicit write", domain.Principal{TenantID: "acme", UserID: "alice",
			Roles: []domain.AccessRole{domain.AccessViewer}, Permissions: []domain.Permission{domain.PermRead, domain.PermWrite}},
			[]domain.Permission{domain.PermRead, domain.PermWrite}},
		{"admin restricted to read", domain.Principal{TenantID: "acme", UserID: "alice",
			Roles: []domain.AccessRole{domain.AccessAdmin}, Permissions: []domain.Permission{domain.PermRead}},
			[]domain.Permission{domain.PermRead}},
		{"delete only", domain.Principal{TenantID: "acme", UserID: "alice", Permissions: []domain.Permission{domain.PermDelete}},
			[]domain.Permission{domain.PermDelete}},
	}
	for _, pc := range principals {
		for _, op := range serviceOps() {
			t.Run(pc.name+"/"+op.name, func(t *testing.T) {
				t.Parallel()
				w := newWorld(t)
				before := w.state(t)
				err := op.call(t, w, pc.p)
				if slices.Contains(pc.allow, op.perm) {
					if err != nil {
						t.Fatalf("%s by %s: %v, want success", op.name, pc.name, err)
					}
					return
				}
				if !errors.Is(err, domain.ErrForbidden) {
					t.Fatalf("%s by %s: %v, want ErrForbidden", op.name, pc.name, err)
				}
				w.unchanged(t, before)
			})
		}
	}
}

func TestInvalidPrincipal(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	principals := []struct {
		name  string
		p     domain.Principal
		field string
	}{
		{"empty tenant", domain.Principal{UserID: "alice", Roles: alice.Roles}, "principal.tenant_id"},
		{"tenant with space", domain.Principal{TenantID: "ac me", UserID: "alice", Roles: alice.Roles}, "principal.tenant_id"},
		{"empty user", domain.Principal{TenantID: "acme", Roles: alice.Roles}, "principal.user_id"},
		{"user with spaces", domain.Principal{TenantID: "acme", UserID: "alice smith", Roles: alice.Roles}, "principal.user_id"},
		{"user too long", domain.Principal{TenantID: "acme", UserID: strings.Repeat("a", 129), Roles: alice.Roles}, "principal.user_id"},
		{"user not ascii", domain.Principal{TenantID: "acme", UserID: "alicé", Roles: alice.Roles}, "principal.user_id"},
	}
	before := w.state(t)
	for _, pc := range principals {
		for _, op := range serviceOps() {
			t.Run(pc.name+"/"+op.name, func(t *testing.T) {
				err := op.call(t, w, pc.p)
				if !hasField(err, pc.field) {
					t.Fatalf("%s: %v, want ErrInvalid naming %s", op.name, err, pc.field)
				}
			})
		}
	}
	w.unchanged(t, before)
}

func TestOwnershipAndTenancy(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	before := w.state(t)
	others := []struct {
		name string
		p    domain.Principal
	}{
		{"same tenant, other user", bob},
		{"other tenant, same user id", stranger},
	}
	for _, o := range others {
		for _, op := range serviceOps() {
			if op.name == "CreateSession" || op.name == "ListSessions" {
				continue
			}
			t.Run(o.name+"/"+op.name, func(t *testing.T) {
				if err := op.call(t, w, o.p); !errors.Is(err, domain.ErrNotFound) {
					t.Fatalf("%s on alice's data: %v, want ErrNotFound", op.name, err)
				}
			})
		}
		t.Run(o.name+"/ListSessions", func(t *testing.T) {
			page, err := w.svc.ListSessions(t.Context(), o.p, domain.ListOptions{})
			if err != nil || page.Total != 0 || len(page.Items) != 0 {
				t.Fatalf("ListSessions = %+v, %v; want nothing of alice's", page, err)
			}
		})
	}
	w.unchanged(t, before)
	// Replay of an unknown run is not found either, so a run id's
	// existence is not revealed.
	if _, err := w.svc.Replay(t.Context(), alice, domain.NewID(), 0); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Replay of an unknown run: %v, want ErrNotFound", err)
	}
}

// ---------------------------------------------------------------------------
// Input validation (ids, titles, listing, model)
// ---------------------------------------------------------------------------

func TestMalformedIDs(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	before := w.state(t)
	upper := strings.ToUpper(domain.NewID())
	bad := []string{"", "not-a-uuid", upper, domain.NewID()[:35], "{" + domain.NewID()[1:35] + "}"}
	type idOp struct {
		name, field string
		call        func(t *testing.T, id string) error
	}
	svc := w.svc
	ops := []idOp{
		{"GetSession", "session_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.GetSession(ctx, alice, id)
			return err
		}},
		{"RenameSession", "session_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.RenameSession(ctx, alice, id, "x")
			return err
		}},
		{"DeleteSession", "session_id", func(t *testing.T, id string) error {
			return svc.DeleteSession(t.Context(), alice, id)
		}},
		{"Messages", "session_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.Messages(ctx, alice, id, domain.MessageListOptions{})
			return err
		}},
		{"Messages.before", "before", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.Messages(ctx, alice, w.sess.ID, domain.MessageListOptions{Before: id})
			return err
		}},
		{"Send", "session_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			return onlyErr(t, collect(t, svc.Send(ctx, alice, id, "hello")))
		}},
		{"Message", "message_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.Message(ctx, alice, id)
			return err
		}},
		{"Artifacts", "message_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.Artifacts(ctx, alice, id)
			return err
		}},
		{"PendingInterrupt", "message_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.PendingInterrupt(ctx, alice, id)
			return err
		}},
		{"Resume", "message_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			return onlyErr(t, collect(t, svc.Resume(ctx, alice, id, validAnswers)))
		}},
		{"Approve", "message_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			return onlyErr(t, collect(t, svc.Approve(ctx, alice, id, w.token)))
		}},
		{"Deny", "message_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			return onlyErr(t, collect(t, svc.Deny(ctx, alice, id, w.token, "")))
		}},
		{"Replay", "run_id", func(t *testing.T, id string) error {
			ctx := t.Context()
			_, err := svc.Replay(ctx, alice, id, 0)
			return err
		}},
	}
	for _, op := range ops {
		for _, id := range bad {
			if id == "" && op.field == "before" {
				continue // an empty Before means no filter
			}
			t.Run(fmt.Sprintf("%s/%q", op.name, id), func(t *testing.T) {
				if err := op.call(t, id); !hasField(err, op.field) {
					t.Fatalf("%s(%q): %v, want ErrInvalid naming %s", op.name, id, err, op.field)
				}
			})
		}
	}
	w.unchanged(t, before)
}

func TestTitleValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil)
	sess := f.session(t, alice, "Original")
	cases := []struct {
		name  string
		title string
		ok    bool
		want  string // stored title when ok
	}{
		{"255 ascii", strings.Repeat("a", 255), true, strings.Repeat("a", 255)},
		{"255 multi-byte", strings.Repeat("東", 255), true, strings.Repeat("東", 255)},
		{"256 ascii", strings.Repeat("a", 256), false, ""},
		{"256 multi-byte", strings.Repeat("é", 256), false, ""},
		{"trimmed to 255", "  " + strings.Repeat("a", 255) + "\n", true, strings.Repeat("a", 255)},
		{"whitespace only", " \t\n ", false, ""},
		{"invalid utf-8", "bad \xff title", false, ""},
		{"NUL", "a\x00b", false, ""},
	}
	t.Run("group", func(t *testing.T) {
		for _, tc := range cases {
			t.Run("create/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s, err := f.svc.CreateSession(t.Context(), alice, bichat.SessionOptions{Title: tc.title})
				if tc.ok {
					if err != nil || s.Title != tc.want {
						t.Fatalf("CreateSession = %v, %v; want title of %d characters", s, err, len([]rune(tc.want)))
					}
					return
				}
				if !hasField(err, "title") {
					t.Fatalf("CreateSession: %v, want ErrInvalid naming title", err)
				}
			})
			t.Run("rename/"+tc.name, func(t *testing.T) {
				t.Parallel()
				s := f.session(t, alice, "Before")
				got, err := f.svc.RenameSession(t.Context(), alice, s.ID, tc.title)
				if tc.ok {
					if err != nil || got.Title != tc.want {
						t.Fatalf("RenameSession = %v, %v", got, err)
					}
					return
				}
				if !hasField(err, "title") {
					t.Fatalf("RenameSession: %v, want ErrInvalid naming title", err)
				}
				if s2, _ := f.svc.GetSession(t.Context(), alice, s.ID); s2.Title != "Before" {
					t.Errorf("title after a refused rename = %q", s2.Title)
				}
			})
		}
	})
	if got, _ := f.svc.GetSession(t.Context(), alice, sess.ID); got.Title != "Original" {
		t.Errorf("untouched session title = %q", got.Title)
	}
}

func TestListAndModelValidation(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil)
	ctx := t.Context()
	cases := []struct {
		name  string
		opts  domain.ListOptions
		field string
	}{
		{"page size 101", domain.ListOptions{PageSize: 101}, "page_size"},
		{"negative page size", domain.ListOptions{PageSize: -1}, "page_size"},
		{"negative page", domain.ListOptions{Page: -1}, "page"},
		{"unknown sort", domain.ListOptions{Sort: "owner"}, "sort"},
		{"unknown order", domain.ListOptions{Order: "up"}, "order"},
	}
	for _, tc := range cases {
		if _, err := f.svc.ListSessions(ctx, alice, tc.opts); !hasField(err, tc.field) {
			t.Errorf("%s: %v, want ErrInvalid naming %s", tc.name, err, tc.field)
		}
	}
	if page, err := f.svc.ListSessions(ctx, alice, domain.ListOptions{PageSize: 100}); err != nil || page.PageSize != 100 {
		t.Errorf("page size 100: %+v, %v", page, err)
	}

	if _, err := f.svc.CreateSession(ctx, alice, bichat.SessionOptions{Model: "gpt-imaginary"}); !hasField(err, "model") {
		t.Errorf("unknown model: %v, want ErrInvalid naming model", err)
	}
	s, err := f.svc.CreateSession(ctx, alice, bichat.SessionOptions{Model: f.model.Info().Name})
	if err != nil || s.Model != "scripted" {
		t.Errorf("the service's own model: %+v, %v", s, err)
	}

	sess := f.session(t, alice, "")
	if _, err := f.svc.Messages(ctx, alice, sess.ID, domain.MessageListOptions{Limit: -1}); !hasField(err, "limit") {
		t.Errorf("negative message limit: %v, want ErrInvalid naming limit", err)
	}
	if _, err := f.svc.Replay(ctx, alice, domain.NewID(), -1); !hasField(err, "after_seq") {
		t.Errorf("negative after_seq: %v, want ErrInvalid naming after_seq", err)
	}
	page, err := f.svc.ListSessions(ctx, alice, domain.ListOptions{})
	if err != nil || page.Total != 2 {
		t.Errorf("refused calls created sessions: %+v, %v", page, err)
	}
}

// ---------------------------------------------------------------------------
// Sessions
// ---------------------------------------------------------------------------

func TestSessionLifecycle(t *testing.T) {
	t.Parallel()
	f := newFixture(t, brainModel(), []agents.Tool{salesTool(nil)})
	ctx := t.Context()

	sess, err := f.svc.CreateSession(ctx, alice, bichat.SessionOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !domain.ValidID(sess.ID) || sess.Title != bichat.DefaultTitle || sess.TenantID != "acme" || sess.OwnerID != "alice" ||
		!sess.CreatedAt.Equal(f.clock.Now()) || !sess.UpdatedAt.Equal(sess.CreatedAt) {
		t.Fatalf("created session = %+v", sess)
	}
	got, err := f.svc.GetSession(ctx, alice, sess.ID)
	if err != nil || !reflect.DeepEqual(got, sess) {
		t.Fatalf("GetSession = %+v, %v; want %+v", got, err, sess)
	}
	named := f.session(t, alice, "  Q3 review ")
	if named.Title != "Q3 review" {
		t.Errorf("title = %q, want it trimmed", named.Title)
	}

	f.clock.Advance(time.Minute)
	renamed, err := f.svc.RenameSession(ctx, alice, sess.ID, "Budget")
	if err != nil {
		t.Fatal(err)
	}
	got, _ = f.svc.GetSession(ctx, alice, sess.ID)
	if got.Title != "Budget" || renamed.Title != "Budget" || !got.UpdatedAt.Equal(sess.UpdatedAt.Add(time.Minute)) ||
		!got.CreatedAt.Equal(sess.CreatedAt) {
		t.Errorf("after rename: %+v (created %s, updated %s)", got, sess.CreatedAt, sess.UpdatedAt)
	}

	// Delete cascades: messages, artifacts, checkpoints and the run log.
	evs, _ := finished(t, collect(t, f.svc.Send(ctx, alice, sess.ID, "[chart] EMEA")))
	rs := evs[0].(*agents.RunStarted)
	_, in := interrupted(t, collect(t, f.svc.Send(ctx, alice, named.ID, "[ask] which")))
	askMsg := in.MessageID
	if arts, err := f.svc.Artifacts(ctx, alice, rs.MessageID); err != nil || len(arts) != 1 {
		t.Fatalf("Artifacts before delete = %v, %v", arts, err)
	}
	for _, id := range []string{sess.ID, named.ID} {
		if err := f.svc.DeleteSession(ctx, alice, id); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
	}
	if _, err := f.svc.GetSession(ctx, alice, sess.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("GetSession after delete: %v", err)
	}
	if _, err := f.svc.Messages(ctx, alice, sess.ID, domain.MessageListOptions{}); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Messages after delete: %v", err)
	}
	if _, err := f.svc.Message(ctx, alice, rs.MessageID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Message after delete: %v", err)
	}
	if _, err := f.svc.Artifacts(ctx, alice, rs.MessageID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("Artifacts after delete: %v", err)
	}
	if evs, err := f.svc.Replay(ctx, alice, rs.RunID, 0); len(evs) != 0 || (err != nil && !errors.Is(err, domain.ErrNotFound)) {
		t.Errorf("Replay after delete = %d events, %v; want none", len(evs), err)
	}
	if arts, _ := f.store.ListArtifacts(ctx, "acme", rs.MessageID); len(arts) != 0 {
		t.Errorf("store still holds %d artifacts", len(arts))
	}
	if log, _ := f.store.ListRunEvents(ctx, "acme", rs.RunID, 0, 0); len(log) != 0 {
		t.Errorf("store still holds %d run events", len(log))
	}
	if _, err := f.store.GetCheckpoint(ctx, "acme", askMsg); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("checkpoint after delete: %v", err)
	}
	if err := f.svc.DeleteSession(ctx, alice, sess.ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("second DeleteSession: %v", err)
	}
}

func TestListSessionsThroughService(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil)
	ctx := t.Context()
	titles := []string{"Revenue Q1", "churn", "Revenue Q2", "Budget", "revenue by region"}
	for _, title := range titles {
		f.session(t, alice, title)
		f.clock.Advance(time.Second)
	}
	f.session(t, bob, "Revenue of bob")

	page, err := f.svc.ListSessions(ctx, alice, domain.ListOptions{})
	if err != nil || page.Total != 5 || page.Items[0].Title != "revenue by region" || page.Items[4].Title != "Revenue Q1" {
		t.Fatalf("default listing (updated desc) = %+v, %v", page, err)
	}
	cases := []struct {
		name  string
		opts  domain.ListOptions
		want  []string
		total int
	}{
		{"page 1 of 2", domain.ListOptions{PageSize: 2, Sort: domain.SortCreated, Order: domain.Asc}, []string{"Revenue Q1", "churn"}, 5},
		{"page 3 of 2", domain.ListOptions{Page: 3, PageSize: 2, Sort: domain.SortCreated, Order: domain.Asc}, []string{"revenue by region"}, 5},
		{"past the end", domain.ListOptions{Page: 4, PageSize: 2}, []string{}, 5},
		{"search ignores case", domain.ListOptions{Search: "REVENUE", Sort: domain.SortTitle, Order: domain.Asc},
			[]string{"revenue by region", "Revenue Q1", "Revenue Q2"}, 3},
		{"title desc", domain.ListOptions{Sort: domain.SortTitle, Order: domain.Desc, PageSize: 2}, []string{"Revenue Q2", "Revenue Q1"}, 5},
		{"no match", domain.ListOptions{Search: "bob"}, []string{}, 0},
	}
	for _, tc := range cases {
		page, err := f.svc.ListSessions(ctx, alice, tc.opts)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		got := make([]string, len(page.Items))
		for i, s := range page.Items {
			got[i] = s.Title
		}
		if !slices.Equal(got, tc.want) || page.Total != tc.total {
			t.Errorf("%s: titles %q total %d, want %q total %d", tc.name, got, page.Total, tc.want, tc.total)
		}
	}
}

func TestSessionEventsOnBus(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil)
	ctx := t.Context()
	sess := f.session(t, alice, "First")
	if _, err := f.svc.RenameSession(ctx, alice, sess.ID, "Second"); err != nil {
		t.Fatal(err)
	}
	if err := f.svc.DeleteSession(ctx, alice, sess.ID); err != nil {
		t.Fatal(err)
	}
	// Refused calls publish nothing.
	_, _ = f.svc.RenameSession(ctx, bob, sess.ID, "Third")
	_, _ = f.svc.CreateSession(ctx, aliceViewer, bichat.SessionOptions{})

	want := []struct {
		kind  hooks.Kind
		title string
	}{
		{hooks.KindSessionCreate, "First"},
		{hooks.KindSessionUpdate, "Second"},
		{hooks.KindSessionDelete, ""},
	}
	for _, w := range want {
		evs := f.bus.ofKind(w.kind)
		if len(evs) != 1 {
			t.Errorf("%s published %d times, want once", w.kind, len(evs))
			continue
		}
		e := evs[0]
		if e.meta.TenantID != "acme" || e.meta.UserID != "alice" || e.meta.SessionID != sess.ID || e.title != w.title || e.meta.Time.IsZero() {
			t.Errorf("%s = %+v, want tenant acme, user alice, session %s, title %q", w.kind, e, sess.ID, w.title)
		}
	}
}

// ---------------------------------------------------------------------------
// RecoverStale
// ---------------------------------------------------------------------------

func TestRecoverStale(t *testing.T) {
	t.Parallel()
	f := newFixture(t, &scripted.Model{}, nil, func(c *bichat.Config) {
		c.Limits.RunTimeout = time.Minute
		c.Limits.StaleAfter = 2 * time.Minute
	})
	ctx := t.Context()
	sess := f.session(t, alice, "")
	other := f.session(t, stranger, "")
	now := f.clock.Now()
	stale := generating(t, f, sess, now.Add(-3*time.Minute))
	staleOther := generating(t, f, other, now.Add(-3*time.Minute))
	fresh := generating(t, f, sess, now.Add(-time.Minute))
	awaiting := storeExchange(t, f, sess, domain.StatusAwaitingInput, now.Add(-time.Hour))
	done := storeExchange(t, f, sess, domain.StatusComplete, now.Add(-time.Hour))

	n, err := f.svc.RecoverStale(ctx)
	if err != nil || n != 2 {
		t.Fatalf("RecoverStale = %d, %v; want 2 (one per tenant)", n, err)
	}
	for _, c := range []struct {
		p  domain.Principal
		id string
	}{{alice, stale}, {stranger, staleOther}} {
		m := f.message(t, c.p, c.id)
		if m.Status != domain.StatusFailed || m.Metadata.Error == nil || m.Metadata.Error.Code != "interrupted" || m.Metadata.Error.Message == "" {
			t.Errorf("stale message = %s %+v, want failed with code interrupted", m.Status, m.Metadata.Error)
		}
	}
	for id, want := range map[string]domain.MessageStatus{fresh: domain.StatusGenerating, awaiting: domain.StatusAwaitingInput, done: domain.StatusComplete} {
		if m := f.message(t, alice, id); m.Status != want || m.Metadata.Error != nil {
			t.Errorf("message %s = %s %+v, want %s untouched", id, m.Status, m.Metadata.Error, want)
		}
	}
	if n, err := f.svc.RecoverStale(ctx); err != nil || n != 0 {
		t.Errorf("second RecoverStale = %d, %v; want 0", n, err)
	}
	// Once the fresh one is old enough, it is recovered too.
	f.clock.Advance(2 * time.Minute)
	if n, err := f.svc.RecoverStale(ctx); err != nil || n != 1 {
		t.Errorf("RecoverStale after the clock moved = %d, %v; want 1", n, err)
	}
}
