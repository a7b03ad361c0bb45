package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/providers"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/sqldb"
	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// question is what the user asks.
const question = "Email the 2025 revenue figures for my region to my team."

// Question ids of the scripted analyst's form.
const (
	qRegion    = "region"
	qRecipient = "recipient"
)

// regions are the sample data's sales regions, the options the scripted
// analyst offers.
var regions = []string{"North", "South", "East", "West", "Central"}

// options are the command-line flags. region and to are the user's
// answers; deny refuses the email instead of approving it.
type options struct {
	offline bool
	region  string
	to      string
	deny    bool
	dbPath  string // an existing sample database ("": generate one)
}

func main() {
	o := options{}
	flag.BoolVar(&o.offline, "offline", false, "use the scripted analyst even when a provider is configured")
	flag.StringVar(&o.region, "region", "South", "the user's answer to \"which region?\"")
	flag.StringVar(&o.to, "to", "sales-team@example.com", "the user's answer to \"who should receive it?\"")
	flag.BoolVar(&o.deny, "deny", false, "deny the email instead of approving it")
	flag.StringVar(&o.dbPath, "db", "", "SQLite file holding the sample retail tables (default: generate one in a temporary folder)")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, o); err != nil {
		log.Fatal(err)
	}
}

// app is what outlives a process: the store (here in memory, shared by
// the Services this program builds one after the other; a real host uses
// domain/postgres), the confirmation key and replay guard every process
// shares, the data, and the host's outbox.
type app struct {
	o        options
	store    domain.Repositories
	key      []byte
	guard    agents.ReplayGuard
	db       *sqlite.DB
	datasets []domain.Dataset
	outbox   *outbox
	user     domain.Principal
	// model is the configured real model; nil means the scripted analyst,
	// a fresh one per process (analysts holds them, for the tests).
	model    agents.Model
	note     string
	analysts []*scripted.Model
	cleanup  func()
}

// newApp opens the data and the store.
func newApp(ctx context.Context, o options) (*app, error) {
	a := &app{o: o, store: memory.New().Repositories(), guard: &agents.MemoryReplayGuard{}, outbox: &outbox{},
		user:    domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}},
		cleanup: func() {}}
	// Every process must sign and verify confirmation tokens with the same
	// key; a real host loads it from its secret store.
	a.key = make([]byte, 32)
	if _, err := rand.Read(a.key); err != nil {
		return nil, err
	}
	path := o.dbPath
	if path == "" {
		dir, err := os.MkdirTemp("", "bichat-hitl-")
		if err != nil {
			return nil, err
		}
		a.cleanup = func() { os.RemoveAll(dir) }
		path = filepath.Join(dir, "retail.db")
		if err := sampledata.CreateSQLite(ctx, path); err != nil {
			a.cleanup()
			return nil, fmt.Errorf("create sample data: %w", err)
		}
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		a.cleanup()
		return nil, err
	}
	a.db = db
	if a.datasets, err = db.Introspect(ctx); err != nil {
		a.close()
		return nil, err
	}
	model, note, err := providers.FromEnv()
	if err != nil {
		a.close()
		return nil, err
	}
	a.note = note
	if !o.offline && model.Info().Provider != "scripted" {
		a.model = model
	}
	return a, nil
}

func (a *app) close() {
	a.db.Close()
	a.cleanup()
}

// start builds a new Service over the shared store, as a process of the
// host would after a restart: nothing of the run is in memory, only in the
// store.
func (a *app) start(out io.Writer, process int) (*bichat.Service, error) {
	model := a.model
	if model == nil {
		m := analyst()
		a.analysts = append(a.analysts, m)
		model = m
	}
	data, err := sqldb.New(sqldb.Config{DB: a.db, Datasets: a.datasets})
	if err != nil {
		return nil, err
	}
	send, err := newSendEmail(a.outbox)
	if err != nil {
		return nil, err
	}
	svc, err := bichat.New(bichat.Config{
		Agent: agents.Config{
			Model: model,
			System: "You are a careful BI analyst. Ask the user (ask_user_question) for what you need to know; " +
				"query the sample retail tables with query_database; send email only with send_email.",
			Tools:           append(data.All(), send),
			ConfirmationKey: a.key,
			ReplayGuard:     a.guard,
		},
		Store: a.store,
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\n== process %d: a new Service over the same store (model %s/%s)\n", process, model.Info().Provider, model.Info().Name)
	return svc, nil
}

func run(ctx context.Context, out io.Writer, o options) error {
	a, err := newApp(ctx, o)
	if err != nil {
		return err
	}
	defer a.close()
	if a.model == nil {
		fmt.Fprintln(out, "offline demo: a scripted analyst stands in for the LLM (set a provider key to use a real model)")
	} else {
		fmt.Fprintln(out, a.note)
	}

	svc, err := a.start(out, 1)
	if err != nil {
		return err
	}
	// Whichever process is current when run returns is closed (Close may
	// be called again on one closed already).
	defer func() { svc.Close(context.WithoutCancel(ctx)) }()
	msgID, err := a.ask(ctx, out, svc)
	if err != nil {
		return err
	}
	// Each answer is given by another process: the run stopped, its
	// checkpoint is in the store, and any process can continue it.
	for process := 2; ; process++ {
		msg, err := svc.Message(ctx, a.user, msgID)
		if err != nil {
			return err
		}
		if msg.Status != domain.StatusAwaitingInput {
			break
		}
		if err := svc.Close(ctx); err != nil {
			return err
		}
		if process > 8 {
			return errors.New("the agent kept asking; giving up")
		}
		if svc, err = a.start(out, process); err != nil {
			return err
		}
		in, err := svc.PendingInterrupt(ctx, a.user, msgID)
		if err != nil {
			return err
		}
		switch in.Kind {
		case domain.CheckpointQuestion:
			err = a.answer(ctx, out, svc, msgID, in)
		case domain.CheckpointConfirmation:
			err = a.decide(ctx, out, svc, msgID, in, !o.deny)
		default:
			err = fmt.Errorf("message %s waits for an unknown %q", msgID, in.Kind)
		}
		if err != nil {
			return err
		}
	}
	return a.report(ctx, out, svc, msgID)
}

// ask creates a session and asks the question; the run stops at the
// agent's question.
func (a *app) ask(ctx context.Context, out io.Writer, svc *bichat.Service) (string, error) {
	sess, err := svc.CreateSession(ctx, a.user, bichat.SessionOptions{})
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "user       %s\n", question)
	return a.stream(ctx, out, svc, svc.Send(ctx, a.user, sess.ID, question))
}

// answer shows the pending questions and resumes the run with the user's
// answers.
func (a *app) answer(ctx context.Context, out io.Writer, svc *bichat.Service, msgID string, in *bichat.Interrupt) error {
	for _, q := range in.Questions {
		labels := make([]string, len(q.Options))
		for i, o := range q.Options {
			labels[i] = o.Label
		}
		fmt.Fprintf(out, "pending    question %s: %q options=%v\n", q.ID, q.Question, labels)
	}
	answers := answersFor(in.Questions, a.o)
	for _, q := range in.Questions {
		fmt.Fprintf(out, "user       %s → %s\n", q.ID, strings.Join(append(slices.Clone(answers[q.ID].Selected), answers[q.ID].Text), ""))
	}
	_, err := a.stream(ctx, out, svc, svc.Resume(ctx, a.user, msgID, answers))
	return err
}

// decide shows the pending confirmation and approves or denies it.
func (a *app) decide(ctx context.Context, out io.Writer, svc *bichat.Service, msgID string, in *bichat.Interrupt, approve bool) error {
	c := in.Confirmation
	fmt.Fprintf(out, "pending    confirmation: %s (%s) %s\n", c.Tool, c.Permission, c.Arguments)
	fmt.Fprintf(out, "           outbox before the decision: %d email(s)\n", len(a.outbox.emails()))
	var events iter.Seq2[agents.Event, error]
	if approve {
		fmt.Fprintln(out, "user       approves")
		events = svc.Approve(ctx, a.user, msgID, c.Token)
	} else {
		fmt.Fprintln(out, "user       denies: not now")
		events = svc.Deny(ctx, a.user, msgID, c.Token, "not now")
	}
	_, err := a.stream(ctx, out, svc, events)
	return err
}

// stream prints a run's events and returns its message id.
func (a *app) stream(ctx context.Context, out io.Writer, svc *bichat.Service, events iter.Seq2[agents.Event, error]) (string, error) {
	var msgID string
	var text strings.Builder
	flush := func() {
		if t := strings.TrimSpace(text.String()); t != "" {
			fmt.Fprintf(out, "assistant  %s\n", strings.ReplaceAll(t, "\n", " "))
		}
		text.Reset()
	}
	for ev, err := range events {
		if err != nil {
			return "", err
		}
		msgID = ev.Header().MessageID
		switch e := ev.(type) {
		case *agents.RunStarted:
			if e.ResumedFrom != "" {
				fmt.Fprintln(out, "resumed    from the stored checkpoint")
			}
		case *agents.TextDelta:
			text.WriteString(e.Text)
		case *agents.ToolCallStarted:
			flush()
			fmt.Fprintf(out, "tool call  %s (%s)\n", e.Name, e.Permission)
		case *agents.ToolCallFinished:
			switch {
			case e.Error != "":
				fmt.Fprintf(out, "tool done  %s (%s): %s\n", e.Name, e.ErrorCode, e.Error)
			case e.Name == agents.ToolAskUserQuestion:
				fmt.Fprintf(out, "tool done  %s: %s\n", e.Name, strings.ReplaceAll(e.Summary, "\n", " "))
			default:
				fmt.Fprintf(out, "tool done  %s (ok)\n", e.Name)
			}
		case *agents.Interrupted:
			flush()
			fmt.Fprintf(out, "interrupted, waiting for a %s (the checkpoint is stored; this process may stop)\n", e.Kind)
		case *agents.RunFinished:
			flush()
			fmt.Fprintf(out, "finished   %s\n", e.Reason)
		case *agents.RunFailed:
			flush()
			fmt.Fprintf(out, "failed     %s: %s\n", e.Code, e.Message)
		}
	}
	if msgID == "" {
		return "", errors.New("the run produced no events")
	}
	msg, err := svc.Message(ctx, a.user, msgID)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(out, "stored     message %s\n", msg.Status)
	return msgID, nil
}

// report prints the answer as persisted and the outbox.
func (a *app) report(ctx context.Context, out io.Writer, svc *bichat.Service, msgID string) error {
	msg, err := svc.Message(ctx, a.user, msgID)
	if err != nil {
		return err
	}
	fmt.Fprintln(out, "\n== persisted")
	fmt.Fprintf(out, "assistant %s: %s\n", msg.Status, strings.ReplaceAll(msg.Text(), "\n", " "))
	for _, tc := range msg.Metadata.ToolCalls {
		status := "ok"
		if tc.Error != "" {
			status = "error: " + tc.Error
		}
		fmt.Fprintf(out, "  tool %s %s\n", tc.Name, status)
	}
	sent := a.outbox.emails()
	fmt.Fprintf(out, "\n== outbox: %d email(s)\n", len(sent))
	for _, e := range sent {
		fmt.Fprintf(out, "%s to %s: %s\n  %s\n", e.ID, e.To, e.Subject, e.Body)
	}
	return nil
}

// answersFor answers questions as the user of this demo: an option
// matching -region is chosen (or -region as free text where allowed, else
// the first option); a free-text question about the recipient gets -to,
// any other -region.
func answersFor(questions []agents.Question, o options) agents.Answers {
	answers := agents.Answers{}
	for _, q := range questions {
		switch {
		case len(q.Options) > 0:
			i := slices.IndexFunc(q.Options, func(op agents.QuestionOption) bool { return strings.EqualFold(op.Label, o.region) })
			switch {
			case i >= 0:
				answers[q.ID] = agents.QuestionAnswer{Selected: []string{q.Options[i].Label}}
			case q.AllowOther:
				answers[q.ID] = agents.QuestionAnswer{Text: o.region}
			default:
				answers[q.ID] = agents.QuestionAnswer{Selected: []string{q.Options[0].Label}}
			}
		case recipientRE.MatchString(q.Question):
			answers[q.ID] = agents.QuestionAnswer{Text: o.to}
		default:
			answers[q.ID] = agents.QuestionAnswer{Text: o.region}
		}
	}
	return answers
}

var recipientRE = regexp.MustCompile(`(?i)\b(who|whom|recipients?|e-?mail|address|send it to)\b`)
