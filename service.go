package bichat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	bctx "github.com/bichat-go/bichat/context"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/redact"
)

// Service is the facade a host application talks to. It is safe for
// concurrent use. Every method takes the caller's Principal and checks
// tenant, ownership and permission before touching data: a viewer can read
// but not write or delete, and another user's or another tenant's session,
// message, artifact, checkpoint or run is not found, with exactly the
// error of a missing one (domain.ErrNotFound, same type, same text), so
// errors never reveal whether an id exists.
type Service struct {
	cfg   Config
	repos domain.Repositories
	exec  *agents.Executor
	bus   *hooks.Bus
	model agents.ModelInfo
	// busy holds the ids of sessions with a run in this process, so two
	// runs never overlap in one session (across processes the repository
	// check in prepareSend applies).
	busy sync.Map

	// compiler is shared by the context builders of every model (token
	// and summary caches).
	compiler *bctx.Compiler
	execMu   sync.Mutex
	execs    map[string]*agents.Executor // by session model name

	// life ends when Close is called; every run's context ends with it.
	life     context.Context
	endLife  context.CancelCauseFunc
	runMu    sync.Mutex
	closed   bool
	runs     map[string]*liveRun // runs of this process, by run id
	byMsg    map[string]*liveRun // the same, by message id
	runsDone sync.WaitGroup
	// recent holds the runs of this process that just finished (see
	// keepFinished in run.go); guarded by runMu.
	recent recentRuns
	// noHeartbeat stops lease renewals (a test hook that simulates a hung
	// process).
	noHeartbeat atomic.Bool
	// redact scrubs secrets (nil: redaction disabled).
	redact *redact.Redactor
}

// errBusy reports a session that already has a run in progress.
func errBusy(sessionID string) error {
	return fmt.Errorf("bichat: an answer is still being generated in session %s: %w", sessionID, domain.ErrConflict)
}

// acquire marks a session busy; release must follow when it returns true.
func (s *Service) acquire(sessionID string) bool {
	_, loaded := s.busy.LoadOrStore(sessionID, struct{}{})
	return !loaded
}

func (s *Service) release(sessionID string) { s.busy.Delete(sessionID) }

// New validates cfg and builds a Service. Call Close when done with it:
// runs belong to the Service and outlive the calls that started them.
func New(cfg Config) (*Service, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if err := sharedConfirmationKey(&cfg.Agent); err != nil {
		return nil, err
	}
	s := &Service{cfg: cfg, repos: cfg.Store, bus: cfg.Bus, compiler: bctx.NewCompiler(), execs: map[string]*agents.Executor{},
		runs: map[string]*liveRun{}, byMsg: map[string]*liveRun{}, redact: cfg.redactor()}
	s.life, s.endLife = context.WithCancelCause(context.Background())
	exec, err := s.newExecutor(cfg.Agent.Model)
	if err != nil {
		return nil, err
	}
	s.exec, s.model = exec, exec.ModelInfo()
	return s, nil
}

// Executor returns the executor of the service's default model
// (Agent.Model), e.g. to list its tools.
func (s *Service) Executor() *agents.Executor { return s.exec }

// SessionOptions configure a new session.
type SessionOptions struct {
	// Title is 1 to 255 characters; empty means DefaultTitle, which the
	// first question then replaces.
	Title string
	// Model is the model the session's questions go to: empty for the
	// service's model (Agent.Model), its name, or a name or alias
	// Config.Models resolves (e.g. "claude-sonnet", "gpt-5.5").
	Model string
}

// authorize validates the principal and checks a permission.
func authorize(p domain.Principal, perm domain.Permission) error {
	if err := p.Validate(); err != nil {
		return err
	}
	if !p.Can(perm) {
		return fmt.Errorf("bichat: %s permission required: %w", perm, domain.ErrForbidden)
	}
	return nil
}

func checkID(field, id string) error {
	if !domain.ValidID(id) {
		return domain.Invalid(field, "must be a UUID such as 01890a5d-ac96-774b-bcce-b302099a8057")
	}
	return nil
}

// checkText validates user-supplied text: valid UTF-8, 1 to max
// characters after trimming, and returns it trimmed.
func checkText(field, text string, max int) (string, error) {
	if !utf8.ValidString(text) {
		return "", domain.Invalid(field, "must be valid UTF-8")
	}
	t := strings.TrimSpace(text)
	n := utf8.RuneCountInString(t)
	if n == 0 {
		return "", domain.Invalid(field, "must not be empty")
	}
	if n > max {
		return "", domain.Invalid(field, fmt.Sprintf("must be at most %d characters (got %d)", max, n))
	}
	if strings.ContainsRune(t, 0) {
		return "", domain.Invalid(field, "must not contain NUL characters")
	}
	return t, nil
}

func (s *Service) meta(p domain.Principal, sessionID string) hooks.Meta {
	return hooks.Meta{Time: s.cfg.Now(), TenantID: p.TenantID, UserID: p.UserID, SessionID: sessionID}
}

// notFound is the one error every method returns for an entity the caller
// cannot see: missing, another user's or another tenant's. Its text names
// the kind of entity but neither the id nor anything the storage layer
// said, so the three cases are indistinguishable (same value for
// errors.Is, same concrete type, byte-identical text).
func notFound(kind string) error {
	return fmt.Errorf("bichat: %s: %w", kind, domain.ErrNotFound)
}

// lookupErr turns a repository error from loading an entity the caller
// asked for into notFound(kind) when it is a not-found, so the storage
// layer's wording never reaches the caller; other errors (storage down)
// are wrapped with op.
func lookupErr(op, kind string, err error) error {
	if errors.Is(err, domain.ErrNotFound) {
		return notFound(kind)
	}
	return fmt.Errorf("bichat: %s: %w", op, err)
}

// ownedSession loads a session and checks that p owns it; another owner's
// or another tenant's session is not found, with the same error as a
// missing one.
func (s *Service) ownedSession(ctx context.Context, p domain.Principal, id string) (*domain.Session, error) {
	if err := checkID("session_id", id); err != nil {
		return nil, err
	}
	sess, err := s.repos.Sessions.GetSession(ctx, p.TenantID, id)
	if err != nil {
		return nil, lookupErr("load session", "session", err)
	}
	if sess.OwnerID != p.UserID {
		return nil, notFound("session")
	}
	return sess, nil
}

// ownedMessage loads a message of a session p owns; any other message is
// not found, with the same error as a missing one.
func (s *Service) ownedMessage(ctx context.Context, p domain.Principal, id string) (*domain.Message, *domain.Session, error) {
	if err := checkID("message_id", id); err != nil {
		return nil, nil, err
	}
	msg, err := s.repos.Messages.GetMessage(ctx, p.TenantID, id)
	if err != nil {
		return nil, nil, lookupErr("load message", "message", err)
	}
	sess, err := s.repos.Sessions.GetSession(ctx, p.TenantID, msg.SessionID)
	if err != nil && !errors.Is(err, domain.ErrNotFound) {
		return nil, nil, fmt.Errorf("bichat: load session of message: %w", err)
	}
	if err != nil || sess.OwnerID != p.UserID {
		return nil, nil, notFound("message")
	}
	return msg, sess, nil
}

// CreateSession starts a conversation owned by p.
func (s *Service) CreateSession(ctx context.Context, p domain.Principal, opts SessionOptions) (*domain.Session, error) {
	if err := authorize(p, domain.PermWrite); err != nil {
		return nil, err
	}
	title := DefaultTitle
	if opts.Title != "" {
		t, err := checkText("title", opts.Title, domain.MaxTitleLen)
		if err != nil {
			return nil, err
		}
		title = t
	}
	if _, err := s.executorFor(opts.Model); err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	sess := &domain.Session{ID: domain.NewID(), TenantID: p.TenantID, OwnerID: p.UserID, Title: title,
		Model: opts.Model, CreatedAt: now, UpdatedAt: now}
	if err := s.repos.Sessions.CreateSession(ctx, sess); err != nil {
		return nil, fmt.Errorf("bichat: create session: %w", err)
	}
	s.bus.Publish(ctx, &hooks.SessionCreate{Meta: s.meta(p, sess.ID), Title: title})
	return sess, nil
}

// GetSession returns one of p's sessions.
func (s *Service) GetSession(ctx context.Context, p domain.Principal, id string) (*domain.Session, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	return s.ownedSession(ctx, p, id)
}

// ListSessions pages through p's sessions.
func (s *Service) ListSessions(ctx context.Context, p domain.Principal, opts domain.ListOptions) (domain.Page[domain.Session], error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return domain.Page[domain.Session]{}, err
	}
	opts, err := opts.Normalize()
	if err != nil {
		return domain.Page[domain.Session]{}, err
	}
	page, err := s.repos.Sessions.ListSessions(ctx, p.TenantID, p.UserID, opts)
	if err != nil {
		return domain.Page[domain.Session]{}, fmt.Errorf("bichat: list sessions: %w", err)
	}
	return page, nil
}

// RenameSession changes a session's title (1 to 255 characters).
func (s *Service) RenameSession(ctx context.Context, p domain.Principal, id, title string) (*domain.Session, error) {
	if err := authorize(p, domain.PermWrite); err != nil {
		return nil, err
	}
	t, err := checkText("title", title, domain.MaxTitleLen)
	if err != nil {
		return nil, err
	}
	sess, err := s.ownedSession(ctx, p, id)
	if err != nil {
		return nil, err
	}
	sess.Title = t
	sess.UpdatedAt = s.cfg.Now().UTC()
	if err := s.repos.Sessions.UpdateSession(ctx, sess); err != nil {
		// Deleted meanwhile: the same not-found as any unknown session.
		return nil, lookupErr("rename session", "session", err)
	}
	s.bus.Publish(ctx, &hooks.SessionUpdate{Meta: s.meta(p, sess.ID), Title: t, Model: sess.Model})
	return sess, nil
}

// DeleteSession deletes a session with its messages, checkpoints,
// artifacts and run log. It needs the delete permission.
func (s *Service) DeleteSession(ctx context.Context, p domain.Principal, id string) error {
	if err := authorize(p, domain.PermDelete); err != nil {
		return err
	}
	if _, err := s.ownedSession(ctx, p, id); err != nil {
		return err
	}
	if err := s.repos.Sessions.DeleteSession(ctx, p.TenantID, id); err != nil {
		return lookupErr("delete session", "session", err)
	}
	s.bus.Publish(ctx, &hooks.SessionDelete{Meta: s.meta(p, id)})
	return nil
}

// Messages returns a session's messages, oldest first.
func (s *Service) Messages(ctx context.Context, p domain.Principal, sessionID string, opts domain.MessageListOptions) ([]domain.Message, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	if opts.Limit < 0 {
		return nil, domain.Invalid("limit", "must not be negative")
	}
	if opts.Before != "" {
		if err := checkID("before", opts.Before); err != nil {
			return nil, err
		}
	}
	if _, err := s.ownedSession(ctx, p, sessionID); err != nil {
		return nil, err
	}
	msgs, err := s.repos.Messages.ListMessages(ctx, p.TenantID, sessionID, opts)
	if err != nil {
		// opts.Before names no message of this session (missing, or in a
		// session p cannot see), or the session was deleted meanwhile.
		return nil, lookupErr("list messages", "message", err)
	}
	return msgs, nil
}

// Message returns one message of one of p's sessions.
func (s *Service) Message(ctx context.Context, p domain.Principal, id string) (*domain.Message, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	msg, _, err := s.ownedMessage(ctx, p, id)
	return msg, err
}

// Artifacts returns the artifacts produced for a message.
func (s *Service) Artifacts(ctx context.Context, p domain.Principal, messageID string) ([]domain.Artifact, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	if _, _, err := s.ownedMessage(ctx, p, messageID); err != nil {
		return nil, err
	}
	arts, err := s.repos.Artifacts.ListArtifacts(ctx, p.TenantID, messageID)
	if err != nil {
		return nil, lookupErr("list artifacts", "message", err)
	}
	return arts, nil
}
