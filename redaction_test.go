package bichat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/hooks/audit"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/redact"
)

// leakyLedger is a cost ledger whose writes fail with an error that
// quotes its connection string, the way a careless storage layer does.
type leakyLedger struct {
	domain.CostLedger
	dsn string
}

func (l leakyLedger) AddCost(context.Context, domain.CostEntry) error {
	return fmt.Errorf("ledger: connect %s: connection refused", l.dsn)
}

// jsonEvents records every bus event as JSON, errors included.
type jsonEvents struct {
	mu  sync.Mutex
	out []string
}

func (j *jsonEvents) Handle(_ context.Context, e hooks.Event) error {
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	s := string(b)
	// Err fields are not in the JSON: add their text.
	switch v := e.(type) {
	case *hooks.ToolError:
		if v.Err != nil {
			s += v.Err.Error()
		}
	case *hooks.LLMResponse:
		if v.Err != nil {
			s += v.Err.Error()
		}
	case *hooks.AgentError:
		if v.Err != nil {
			s += v.Err.Error()
		}
	}
	j.mu.Lock()
	j.out = append(j.out, string(e.Kind())+" "+s)
	j.mu.Unlock()
	return nil
}

// TestSecretsNeverLeave runs a conversation full of secrets (in the
// question, the model's streamed answer split across chunks, tool
// arguments and results, a tool error, a model failure, a storage error)
// and scans every channel the service writes to: the streamed events and
// errors, the requests sent to the model, the bus events, the service's
// log, the audit chain, the stored messages and the run log.
func TestSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	secrets := map[string]string{
		"openai":    "sk-proj-" + strings.Repeat("Ab3dE", 10),
		"anthropic": "sk-ant-api03-" + strings.Repeat("xY9_q", 18) + "AA",
		"google":    "AIza" + "SyD3x4mpleK3yF0rT3st1ngPurp0sesOnly",
		"bearer":    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ",
		"dsn":       "Sup3r-S3cret-PW",
		"host":      "hunter2-acme-vault",
		"pattern":   "ACME-123456",
	}
	dsn := "postgres://admin:" + secrets["dsn"] + "@db.internal:5432/sales"
	r, err := redact.New(redact.Options{Secrets: []string{secrets["host"]},
		Patterns: []*regexp.Regexp{regexp.MustCompile(`ACME-\d{6}`)}})
	if err != nil {
		t.Fatal(err)
	}
	echo := agents.MustTool("lookup", "Looks a customer up.", func(_ context.Context, in struct {
		Key string `json:"key"`
	}) (agents.Result, error) {
		return agents.Result{Summary: "customer found; their token is Bearer " + secrets["bearer"] + " and account " + secrets["pattern"],
			Payload: map[string]string{"note": "ok"}}, nil
	})
	broken := agents.MustTool("connect", "Connects to the warehouse.", func(context.Context, struct{}) (agents.Result, error) {
		return agents.Result{}, errors.New("dial " + dsn + ": connection refused")
	})
	m := &scripted.Model{ChunkSize: 5, Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == domain.RoleUser && strings.Contains(last.Text(), "fail") {
			return scripted.Turn{Err: errors.New("upstream said: invalid key " + secrets["openai"])}, nil
		}
		if last.Role == domain.RoleUser {
			return scripted.Turn{Text: "Using key " + secrets["anthropic"] + " now.",
				ToolCalls: []scripted.Call{scripted.CallJSON("lookup", map[string]string{"key": secrets["google"]}),
					scripted.CallJSON("connect", map[string]string{})}}, nil
		}
		return scripted.Turn{Text: "Done: vault " + secrets["host"] + ", account " + secrets["pattern"] + "."}, nil
	}}
	var logs bytes.Buffer
	var logMu sync.Mutex
	logger := slog.New(slog.NewJSONHandler(lockedWriter{&logs, &logMu}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	bus := hooks.New(hooks.Options{Redact: r.Func(), OnError: func(*hooks.HandlerError) {}})
	busEvents := &jsonEvents{}
	if _, err := bus.Subscribe(busEvents); err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Subscribe(hooks.NewSlogHandler(logger, hooks.SlogOptions{})); err != nil {
		t.Fatal(err)
	}
	auditSink := audit.NewMemory()
	rec, err := audit.New(auditSink, audit.Options{Redact: r.Func()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bus.Subscribe(rec); err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	svc, err := bichat.New(bichat.Config{
		Agent:    agents.Config{Model: m, System: "You are a test analyst.", Tools: []agents.Tool{echo, broken}},
		Store:    store.Repositories(),
		Bus:      bus,
		Logger:   logger,
		Redactor: r,
		Costs:    leakyLedger{dsn: dsn},
	})
	if err != nil {
		t.Fatal(err)
	}
	closeAtEnd(t, svc)
	ctx := t.Context()
	s, err := svc.CreateSession(ctx, alice, bichat.SessionOptions{Title: "secrets"})
	if err != nil {
		t.Fatal(err)
	}
	var channels = map[string][]string{}
	add := func(ch, s string) { channels[ch] = append(channels[ch], s) }
	stream := func(q string) {
		for ev, err := range svc.Send(ctx, alice, s.ID, q) {
			if err != nil {
				add("stream errors", err.Error())
				continue
			}
			b, merr := agents.MarshalEvent(ev)
			if merr != nil {
				t.Fatal(merr)
			}
			add("stream", string(b))
			if td, ok := ev.(*agents.TextDelta); ok {
				add("streamed text", td.Text) // joined below
			}
		}
	}
	stream("My key is " + secrets["openai"] + " and the database is " + dsn + "; who is the customer?")
	stream("now fail, please")
	add("streamed text joined", strings.Join(channels["streamed text"], ""))
	for _, req := range m.Requests() {
		b, _ := json.Marshal(req)
		add("prompts", string(b))
	}
	msgs, err := svc.Messages(ctx, alice, s.ID, domain.MessageListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range msgs {
		b, _ := json.Marshal(msg)
		add("stored messages", string(b))
		if msg.Role == domain.RoleAssistant {
			evs, err := svc.Replay(ctx, alice, msg.RunID, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range evs {
				b, _ := agents.MarshalEvent(ev)
				add("run log", string(b))
			}
		}
	}
	busEvents.mu.Lock()
	channels["bus events"] = append([]string(nil), busEvents.out...)
	busEvents.mu.Unlock()
	for e, err := range auditSink.Entries(ctx, alice.TenantID) {
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(e)
		add("audit", string(b))
	}
	if err := audit.VerifyTenant(ctx, auditSink, alice.TenantID); err != nil {
		t.Fatalf("audit chain: %v", err)
	}
	logMu.Lock()
	add("logs", logs.String())
	logMu.Unlock()

	// Each channel saw the conversation, and none holds a secret.
	for _, ch := range []string{"stream", "stream errors", "streamed text joined", "prompts", "stored messages", "run log",
		"bus events", "audit", "logs"} {
		all := strings.Join(channels[ch], "\n")
		if len(all) == 0 {
			t.Errorf("channel %q is empty: the test does not exercise it", ch)
			continue
		}
		if !strings.Contains(all, redact.DefaultReplacement) {
			t.Errorf("channel %q shows no redaction at all", ch)
		}
		for name, secret := range secrets {
			if strings.Contains(all, secret) {
				t.Errorf("channel %q leaks the %s secret:\n%s", ch, name, excerpt(all, secret))
			}
		}
	}
	// The conversation is intact around the redactions.
	if !strings.Contains(strings.Join(channels["streamed text joined"], ""), "Using key "+redact.DefaultReplacement+" now.") {
		t.Errorf("streamed text = %q", channels["streamed text joined"])
	}
}

// lockedWriter serialises writes to a buffer shared with the test.
type lockedWriter struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func excerpt(s, secret string) string {
	i := strings.Index(s, secret)
	from, to := max(0, i-120), min(len(s), i+len(secret)+60)
	return s[from:to]
}
