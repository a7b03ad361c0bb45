package bichat

import (
	"errors"
	"log/slog"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/hooks"
)

// Config configures a Service. Agent.Model is required; every other zero
// value means a documented default.
type Config struct {
	// Agent configures the agent: model, system prompt, tools, limits,
	// confirmation key, request builder. Its Bus is replaced by Config.Bus.
	Agent agents.Config
	// Store holds the repositories. Nil repositories default to one shared
	// in-memory store (data is lost when the process exits).
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
	// generating (default 15 minutes; it must exceed RunTimeout).
	StaleAfter time.Duration
}

// Defaults of Limits.
const (
	DefaultHistoryMessages = 50
	DefaultToolRecordChars = 2000
	DefaultRunTimeout      = 10 * time.Minute
	DefaultStaleAfter      = 15 * time.Minute
	// DefaultTitle is the title of sessions created without one; the first
	// question replaces it.
	DefaultTitle = "New chat"
)

func (c *Config) normalize() error {
	if c.Agent.Model == nil {
		return errors.New("bichat: Config.Agent.Model is required")
	}
	l := &c.Limits
	if l.HistoryMessages < 0 || l.ToolRecordChars < 0 || l.RunTimeout < 0 || l.StaleAfter < 0 {
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
	if c.Logger == nil {
		c.Logger = slog.Default()
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
