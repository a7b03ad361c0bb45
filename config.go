package bichat

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/quota"
	"github.com/bichat-go/bichat/redact"
)

// Config configures a Service. Agent.Model is required; every other zero
// value means a documented default.
type Config struct {
	// Agent configures the agent: model, system prompt, tools, limits,
	// confirmation key, request builder. Its Bus is replaced by Config.Bus.
	Agent agents.Config
	// Store holds the repositories. Nil repositories default to one shared
	// in-memory store (data is lost when the process exits). Store.Runs
	// and Store.Results are optional for a host that supplies its own
	// repositories: with a nil Runs, runs are claimed without a lease (the
	// behaviour before leases: Claim, and Limits.StaleAfter decides when a
	// generating message of another process is dead), Cancel reaches only
	// runs of this process and the reaper only recovers stale messages and
	// expired interrupts.
	Store domain.Repositories
	// ArtifactStore keeps the content of the files tools produce (charts,
	// workbooks, reports). Nil means an in-memory store
	// (memory.ArtifactStore), lost when the process exits; use
	// domain/fsartifacts to keep files on disk.
	ArtifactStore domain.ArtifactStore
	// Models resolves the model a session asks for (SessionOptions.Model),
	// e.g. a *providers.Registry. Nil: every session uses Agent.Model.
	Models ModelResolver
	// Context configures the context compiler that builds each model
	// request (on by default).
	Context ContextOptions
	// Knowledge connects the dataset catalog, recipes and documents of the
	// per-question discovery step (off when empty).
	Knowledge Knowledge
	// Bus receives agent, tool, session and message events; nil disables
	// them.
	Bus *hooks.Bus
	// Limits bound history, records and run time.
	Limits Limits
	// Costs records what every model call cost, per session and per
	// tenant per day (the session and tenant-day budgets read it; hosts
	// read it for reports). Nil means an in-memory ledger
	// (memory.NewCostLedger, bounded); replicas that share budgets share a
	// PostgreSQL one (domain/postgres Store implements domain.CostLedger).
	// The cost of each answer is also in its message's
	// Metadata.CostUSD.
	Costs domain.CostLedger
	// Budgets cap what model calls may cost per message, per session and
	// per tenant per day (none by default).
	Budgets Budgets
	// Redactor scrubs secrets (API keys, bearer tokens, DSN passwords,
	// the host's own patterns and values) from everything the service
	// sends out: model requests (prompts), the events of Send, Resume,
	// Approve, Deny and Watch, the stored answers and their error
	// messages, the errors it returns and its log records. Nil means
	// redact.Default() (the built-in patterns). Events on Config.Bus are
	// scrubbed by the bus: create it with
	// hooks.Options{Redact: redactor.Func()}; the audit chain takes the
	// same function.
	Redactor *redact.Redactor
	// DisableRedaction turns the Redactor off (not recommended: for
	// hosts that scrub elsewhere).
	DisableRedaction bool
	// Quota, when set, limits requests per minute, model tokens per
	// minute and concurrent runs per tenant and per user (package quota:
	// quota.NewMemory for one process, quota/postgres for replicas).
	// Send, Resume, Approve and Deny take a request and a run slot, held
	// until the run ends; the tokens of every model call are charged. A
	// refused request yields a *RateLimitError (HTTP 429 with
	// Retry-After) and creates nothing.
	Quota quota.Limiter
	// Attributes maps the caller of each question to the data-scoping
	// attributes its tool calls carry (agents.CallInfo.Attributes): the
	// PostgreSQL data adapter sets them as transaction-local settings for
	// row-level security (see tools/sqldb/postgres Options.Settings). Nil
	// means DefaultAttributes. An error refuses the question.
	Attributes func(ctx context.Context, p domain.Principal) (map[string]string, error)
	// Logger reports problems that do not fail a call, such as a run-log
	// write error; nil means slog.Default().
	Logger *slog.Logger
	// Now returns the current time (default time.Now).
	Now func() time.Time
}

// Limits bound what the service keeps and how long runs may take.
type Limits struct {
	// HistoryMessages is how many earlier messages of the session are sent
	// to the model with each question (default 50).
	HistoryMessages int
	// ToolRecordChars caps the arguments and result of each tool call
	// recorded in the message metadata, in characters (default 2000).
	ToolRecordChars int
	// RunTimeout bounds one run (default 10 minutes).
	RunTimeout time.Duration
	// StaleAfter is the age after which RecoverStale fails a message still
	// generating (default 15 minutes; it must exceed RunTimeout). With
	// leases (Store.Runs set) it only matters for messages claimed without
	// a lease.
	StaleAfter time.Duration
	// RunLease is how long a run's lease lasts unless renewed (default 15
	// seconds). A running run renews it every RunLease/3; a run whose
	// lease ran out (its process died or hung) is failed by the reaper
	// with code "lease_expired", and its session takes new questions
	// again. A shorter lease frees sessions sooner after a crash and costs
	// more renewals.
	RunLease time.Duration
	// ReapInterval is how often RunReaper sweeps for expired leases and
	// interrupts (default RunLease/3).
	ReapInterval time.Duration
	// InterruptTTL is how long a question or confirmation request waits
	// for its answer (default 24 hours). After it the interrupt expired:
	// Resume, Approve and Deny yield ErrExpired and fail the message with
	// code "expired", as the reaper does. (A confirmation token expires on
	// its own schedule, agents.Config.ConfirmationTTL: Approve and Deny
	// then refuse it with agents.ErrTokenExpired and the message keeps
	// waiting.)
	InterruptTTL time.Duration
}

// Defaults of Limits.
const (
	DefaultHistoryMessages = 50
	DefaultToolRecordChars = 2000
	DefaultRunTimeout      = 10 * time.Minute
	DefaultStaleAfter      = 15 * time.Minute
	DefaultRunLease        = 15 * time.Second
	DefaultInterruptTTL    = 24 * time.Hour
	// DefaultTitle is the title of sessions created without one; the first
	// question replaces it.
	DefaultTitle = "New chat"
)

func (c *Config) normalize() error {
	if c.Agent.Model == nil {
		return errors.New("bichat: Config.Agent.Model is required")
	}
	l := &c.Limits
	if l.HistoryMessages < 0 || l.ToolRecordChars < 0 || l.RunTimeout < 0 || l.StaleAfter < 0 ||
		l.RunLease < 0 || l.ReapInterval < 0 || l.InterruptTTL < 0 {
		return errors.New("bichat: Config.Limits must not be negative")
	}
	if l.HistoryMessages == 0 {
		l.HistoryMessages = DefaultHistoryMessages
	}
	if l.ToolRecordChars == 0 {
		l.ToolRecordChars = DefaultToolRecordChars
	}
	if l.RunTimeout == 0 {
		l.RunTimeout = DefaultRunTimeout
	}
	if l.StaleAfter == 0 {
		l.StaleAfter = max(DefaultStaleAfter, l.RunTimeout+5*time.Minute)
	}
	if l.RunLease == 0 {
		l.RunLease = DefaultRunLease
	}
	if l.RunLease < 30*time.Millisecond {
		return errors.New("bichat: Limits.RunLease must be at least 30ms (it is renewed every third of it)")
	}
	if l.ReapInterval == 0 {
		l.ReapInterval = l.RunLease / 3
	}
	if l.InterruptTTL == 0 {
		l.InterruptTTL = DefaultInterruptTTL
	}
	if l.StaleAfter <= l.RunTimeout {
		return errors.New("bichat: Limits.StaleAfter must exceed Limits.RunTimeout, or RecoverStale would fail live runs")
	}
	s := &c.Store
	if s.Sessions == nil || s.Messages == nil || s.Checkpoints == nil || s.Artifacts == nil || s.RunEvents == nil {
		if s.Sessions != nil || s.Messages != nil || s.Checkpoints != nil || s.Artifacts != nil || s.RunEvents != nil {
			return errors.New("bichat: Config.Store must set all repositories or none (they cascade deletes into each other)")
		}
		*s = memory.New().Repositories()
	}
	if c.ArtifactStore == nil {
		c.ArtifactStore = memory.NewArtifactStore(0)
	}
	if err := c.Budgets.validate(); err != nil {
		return err
	}
	if c.Costs == nil {
		c.Costs = memory.NewCostLedger(memory.CostLedgerOptions{})
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if r := c.redactor(); r != nil {
		c.Logger = slog.New(r.Handler(c.Logger.Handler()))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	c.Agent.Bus = c.Bus
	if c.Agent.Now == nil {
		c.Agent.Now = c.Now
	}
	return nil
}

// DefaultAttributes are the data-scoping attributes of a principal when
// Config.Attributes is nil: "tenant_id", "user_id" and, when it has roles,
// "roles" (comma-separated).
func DefaultAttributes(_ context.Context, p domain.Principal) (map[string]string, error) {
	m := map[string]string{"tenant_id": p.TenantID, "user_id": p.UserID}
	if len(p.Roles) > 0 {
		roles := make([]string, len(p.Roles))
		for i, r := range p.Roles {
			roles[i] = string(r)
		}
		m["roles"] = strings.Join(roles, ",")
	}
	return m, nil
}

// attributes returns the data-scoping attributes of p.
func (s *Service) attributes(ctx context.Context, p domain.Principal) (map[string]string, error) {
	f := s.cfg.Attributes
	if f == nil {
		f = DefaultAttributes
	}
	m, err := f(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("bichat: data-scoping attributes of %s/%s: %w", p.TenantID, p.UserID, err)
	}
	return m, nil
}
