package bichat

import (
	"context"
	"crypto/rand"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	bctx "github.com/bichat-go/bichat/context"
	"github.com/bichat-go/bichat/domain"
)

// ModelResolver finds the model a session asks for by name or alias
// (SessionOptions.Model). *providers.Registry implements it.
type ModelResolver interface {
	Model(name string) (agents.Model, error)
}

// ContextOptions configure the context compiler (package context) that
// builds every model request: exact token budgets, per-kind limits,
// overflow handling and prompt-cache breakpoints.
type ContextOptions struct {
	// Disable sends requests as the executor assembles them
	// (agents.DefaultBuilder): no budget and no cache hints. When
	// Agent.Builder is set, the host's builder is used and these options
	// do not apply.
	Disable bool
	// Policy returns the budget for a model. Nil means
	// context.PolicyFor(model.Info(), context.OverflowCompact) with a
	// context.ModelSummarizer on the same model, so a long conversation is
	// summarised rather than cut or refused.
	Policy func(model agents.Model) bctx.Policy
	// Rules are pinned rules added after Agent.System (the system prompt
	// is always pinned).
	Rules []string
}

// executorFor returns the executor of the model a session uses: the
// service's own for "" or its name, otherwise one built on first use from
// Config.Models and kept.
func (s *Service) executorFor(model string) (*agents.Executor, error) {
	if model == "" || model == s.model.Name {
		return s.exec, nil
	}
	s.execMu.Lock()
	defer s.execMu.Unlock()
	if e, ok := s.execs[model]; ok {
		return e, nil
	}
	if s.cfg.Models == nil {
		return nil, domain.Invalid("model", fmt.Sprintf("unknown model %q; this service runs %q", model, s.model.Name))
	}
	m, err := s.cfg.Models.Model(model)
	if err != nil {
		return nil, domain.Invalid("model", fmt.Sprintf("model %q is not available: %v", model, err))
	}
	e, err := s.newExecutor(m)
	if err != nil {
		return nil, err
	}
	s.execs[model] = e
	return e, nil
}

// newExecutor builds an executor over m from the agent configuration,
// with the context compiler as its request builder unless the host set its
// own or disabled it.
func (s *Service) newExecutor(m agents.Model) (*agents.Executor, error) {
	cfg := s.cfg.Agent
	cfg.Model = m
	if host := cfg.Guard; host != nil {
		cfg.Guard = func(ctx context.Context, t *agents.TurnContext) error {
			if err := s.guard(ctx, t); err != nil {
				return err
			}
			return host(ctx, t)
		}
	} else {
		cfg.Guard = s.guard
	}
	if cfg.Redact == nil && s.redact != nil {
		cfg.Redact = s.redact.String
	}
	if cfg.Builder == nil && !s.cfg.Context.Disable {
		b, err := s.contextBuilder(m)
		if err != nil {
			return nil, err
		}
		cfg.Builder = b
	}
	e, err := agents.NewExecutor(cfg)
	if err != nil {
		return nil, fmt.Errorf("bichat: %w", err)
	}
	return e, nil
}

func (s *Service) contextBuilder(m agents.Model) (*bctx.RequestBuilder, error) {
	info := m.Info()
	r, err := bctx.RendererFor(info)
	if err != nil {
		return nil, fmt.Errorf("bichat: context renderer for %s/%s: %w", info.Provider, info.Name, err)
	}
	var p bctx.Policy
	if s.cfg.Context.Policy != nil {
		p = s.cfg.Context.Policy(m)
	} else {
		if info.ContextWindow <= 0 {
			info.ContextWindow = defaultContextWindow
		}
		p = bctx.PolicyFor(info, bctx.OverflowCompact)
		p.Summarizer = &bctx.ModelSummarizer{Model: m}
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("bichat: context policy for %s: %w", info.Name, err)
	}
	b := bctx.NewRequestBuilder(r, p)
	b.Compiler = s.compiler
	b.Bus = s.bus
	b.Session = s.sessionBlocks
	return b, nil
}

// defaultContextWindow is assumed for a model that does not report its
// window.
const defaultContextWindow = 128_000

// sharedConfirmationKey gives every executor of the service one signing
// key, so a token issued under one model's executor verifies under any.
// The replay guard is shared likewise.
func sharedConfirmationKey(cfg *agents.Config) error {
	if cfg.ReplayGuard == nil {
		cfg.ReplayGuard = &agents.MemoryReplayGuard{}
	}
	if len(cfg.ConfirmationKey) > 0 {
		return nil
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return fmt.Errorf("bichat: confirmation key: %w", err)
	}
	cfg.ConfirmationKey = key
	return nil
}
