package bichat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	bctx "github.com/bichat-go/bichat/context"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
	"github.com/bichat-go/bichat/kb/recipes"
)

// Knowledge connects the service to what the agent knows besides the data.
// Before each question the service runs a discovery step: the datasets the
// question most likely needs (hybrid search in Catalog, with join-hint
// expansion), the join hints among them, recipes that answered similar
// questions on the same schema, and matching documents. They reach the
// model as reference and memory blocks of the context compiler. Every
// field is optional; the zero value discovers nothing.
type Knowledge struct {
	// Catalog holds the dataset definitions (kb.MemoryCatalog,
	// kb/neo4j).
	Catalog kb.Catalog
	// Recipes remembers questions answered before with the SQL that
	// worked (*recipes.Memory). Service.SaveRecipe adds to it.
	Recipes RecipeMemory
	// Documents is the knowledge base (*docs.Index).
	Documents docs.Searcher
	// Ontology selects the semantic model within the tenant: the scope of
	// every call is {principal's tenant, Ontology}.
	Ontology string
	// Discover tunes the dataset search (default: 10 datasets with
	// join-hint expansion).
	Discover kb.DiscoverOptions
	// RecipeCount is how many recipes are recalled (default 3, negative:
	// none).
	RecipeCount int
	// DocumentCount is how many documents are included (default 3,
	// negative: none).
	DocumentCount int
	// SQLTool names the tool whose "sql" argument SaveRecipe keeps
	// (default "query_database").
	SQLTool string
	// Semantic, when set, is the semantic layer (a *semantic.Model of
	// package tools/semantic): its Describe text reaches the model as a
	// reference block with every question, next to the query_metrics
	// tool the host adds to Agent.Tools.
	Semantic interface{ Describe() string }
}

// RecipeMemory is what the service needs of a recipe store;
// *recipes.Memory implements it.
type RecipeMemory interface {
	Recall(ctx context.Context, scope kb.Scope, q recipes.Query) ([]recipes.Match, error)
	SaveRecipe(ctx context.Context, scope kb.Scope, n recipes.NewRecipe) (recipes.Recipe, error)
}

// KindDiscovery is the kind of DiscoveryEvent.
const KindDiscovery hooks.Kind = "knowledge.discovery"

// DiscoveryEvent is published once per run with what the discovery step
// found for the question, or the error that made it find nothing (the run
// goes on without it).
type DiscoveryEvent struct {
	hooks.Meta
	Datasets  []string      `json:"datasets,omitempty"`
	JoinHints int           `json:"join_hints,omitempty"`
	Recipes   int           `json:"recipes,omitempty"`
	Documents int           `json:"documents,omitempty"`
	Duration  time.Duration `json:"duration"`
	Error     string        `json:"error,omitempty"`
}

// Kind returns KindDiscovery.
func (*DiscoveryEvent) Kind() hooks.Kind { return KindDiscovery }

// Scrub scrubs the error message for a redacting bus
// (hooks.Options.Redact).
func (e *DiscoveryEvent) Scrub(f func(string) string) { e.Error = f(e.Error) }

// SendOption adjusts one Send (or Resume, Approve, Deny).
type SendOption func(*sendOptions)

type sendOptions struct {
	state        *bctx.State
	hints        []string
	cancelOnStop bool
}

// WithHints gives the discovery step what the host knows about the
// question (a business definition, "revenue means net of refunds", the
// report the user came from): searched on its own with its own weight
// (kb.DiscoverOptions.Hints, HintWeight), never glued onto the question.
func WithHints(hints ...string) SendOption {
	return func(o *sendOptions) { o.hints = append(o.hints, hints...) }
}

type hintsKey struct{}

// WithState hands the model a snapshot of what the user sees in the host
// application (current page, selected dataset, visible items) as a state
// block of the context.
func WithState(st bctx.State) SendOption {
	return func(o *sendOptions) { o.state = &st }
}

type stateKey struct{}

func (k Knowledge) scope(tenantID string) kb.Scope {
	return kb.Scope{TenantID: tenantID, Ontology: k.Ontology}
}

func countOr(n, def int) int {
	switch {
	case n < 0:
		return 0
	case n == 0:
		return def
	}
	return n
}

// sessionBlocks supplies the context compiler with the host's rules, the
// state snapshot of the Send and the discovery step's findings. The
// compiler calls it once per run.
func (s *Service) sessionBlocks(ctx context.Context, t *agents.TurnContext) ([]bctx.Block, error) {
	b := bctx.NewBuilder(nil)
	if len(s.cfg.Context.Rules) > 0 {
		b.Rules(s.cfg.Context.Rules...)
	}
	if st, ok := ctx.Value(stateKey{}).(*bctx.State); ok && st != nil {
		b.State(*st)
	}
	if sl := s.cfg.Knowledge.Semantic; sl != nil {
		if d := sl.Describe(); d != "" {
			b.Add(bctx.KindReference, bctx.CodecRules, bctx.Rules{Text: "Semantic layer (query it with query_metrics):\n" + d})
		}
	}
	if t != nil && t.Input != nil {
		s.discover(ctx, t.Input, b)
	}
	return b.Blocks()
}

// discover runs the discovery step for the run's question and adds what it
// finds to b. A failing source is reported (event and log) and skipped: the
// agent can still list and search datasets with its tools.
func (s *Service) discover(ctx context.Context, in *agents.Input, b *bctx.Builder) {
	k := s.cfg.Knowledge
	if k.Catalog == nil && k.Recipes == nil && k.Documents == nil {
		return
	}
	question := messageText(in.Message)
	if question == "" {
		return
	}
	start := time.Now()
	scope := k.scope(in.TenantID)
	ev := &DiscoveryEvent{Meta: hooks.Meta{TenantID: in.TenantID, UserID: in.UserID, SessionID: in.SessionID,
		MessageID: in.MessageID, RunID: in.RunID}}
	var errs []error
	var datasets []domain.Dataset
	if k.Catalog != nil {
		hints, _ := ctx.Value(hintsKey{}).([]string)
		d, err := s.discoverDatasets(ctx, in.TenantID, question, hints)
		if err != nil {
			errs = append(errs, fmt.Errorf("datasets: %w", err))
		} else {
			for _, h := range d.Hits {
				datasets = append(datasets, h.Dataset)
				ev.Datasets = append(ev.Datasets, h.Dataset.Name)
			}
			b.Datasets(datasets...)
			b.JoinHints(d.JoinHints...)
			if note := valueMatches(d.Hits); note != "" {
				b.Add(bctx.KindReference, bctx.CodecRules, bctx.Rules{Text: note})
			}
			ev.JoinHints = len(d.JoinHints)
		}
	}
	if n := countOr(k.RecipeCount, 3); k.Recipes != nil && n > 0 {
		ms, err := k.Recipes.Recall(ctx, scope, recipes.Query{Question: question, Datasets: datasets, K: n})
		if err != nil {
			errs = append(errs, fmt.Errorf("recipes: %w", err))
		}
		for _, m := range ms {
			// A verified recipe is shown as verified only while its schema
			// still matches: the model is never told a query is checked
			// when the tables it read have changed since.
			b.Recipes(bctx.Recipe{Question: m.Recipe.Question, SQL: m.Recipe.SQL, Successes: m.Recipe.SuccessCount,
				Datasets: m.Recipe.Datasets, Verified: m.Recipe.Verified && m.SchemaMatch})
		}
		ev.Recipes = len(ms)
	}
	if n := countOr(k.DocumentCount, 3); k.Documents != nil && n > 0 {
		res, err := k.Documents.Search(ctx, scope, question, docs.SearchOptions{Limit: n, Snippets: 1})
		if err != nil {
			errs = append(errs, fmt.Errorf("documents: %w", err))
		}
		for _, h := range res.Hits {
			c := h.Citation()
			b.KBHits(bctx.KBHit{Title: c.Title, Snippet: c.Snippet, Score: h.Score, Citation: c})
		}
		ev.Documents = len(res.Hits)
	}
	ev.Duration = time.Since(start)
	if err := errors.Join(errs...); err != nil {
		ev.Error = err.Error()
		s.cfg.Logger.WarnContext(ctx, "bichat: discovery incomplete", "run_id", in.RunID, "error", err)
	}
	if s.bus != nil {
		ev.Time = s.cfg.Now()
		s.bus.Publish(ctx, ev)
	}
}

// discoverDatasets is the catalog part of the discovery step: the
// datasets the question most likely needs (Knowledge.Discover, with the
// Send's hints added to its own) and the join hints among them. The run
// and Discover both use it, so an evaluation measures what the run saw.
func (s *Service) discoverDatasets(ctx context.Context, tenantID, question string, hints []string) (*kb.Discovery, error) {
	k := s.cfg.Knowledge
	opts := k.Discover
	if len(hints) > 0 {
		opts.Hints = append(append([]string(nil), opts.Hints...), hints...)
	}
	return kb.Discover(ctx, k.Catalog, k.scope(tenantID), question, opts)
}

// Discover runs the dataset part of the discovery step a Send of question
// would run (WithHints options are honoured, others ignored) and returns
// the datasets it finds, best first. An evaluation uses it to measure the
// retrieval recall of the discovery step (package agents/eval).
//
// Errors: domain.ErrForbidden without read permission; domain.ErrInvalid
// when no catalog is configured (Config.Knowledge.Catalog) or the
// question is empty or longer than domain.MaxMessageLen characters.
func (s *Service) Discover(ctx context.Context, p domain.Principal, question string, opts ...SendOption) ([]kb.DatasetHit, error) {
	if err := authorize(p, domain.PermRead); err != nil {
		return nil, err
	}
	if s.cfg.Knowledge.Catalog == nil {
		return nil, domain.Invalid("knowledge.catalog", "no dataset catalog is configured (Config.Knowledge.Catalog)")
	}
	question, err := checkText("question", question, domain.MaxMessageLen)
	if err != nil {
		return nil, err
	}
	d, err := s.discoverDatasets(ctx, p.TenantID, question, sendOpts(opts).hints)
	if err != nil {
		return nil, fmt.Errorf("bichat: discover: %w", err)
	}
	return d.Hits, nil
}

func messageText(m agents.Message) string {
	var sb strings.Builder
	for _, p := range m.Parts {
		if p.Type == domain.PartText {
			if sb.Len() > 0 {
				sb.WriteByte('\n')
			}
			sb.WriteString(p.Text)
		}
	}
	return strings.TrimSpace(sb.String())
}

// SaveRecipe remembers a good answer: the question of the user message
// before messageID, and the SQL of the answer's successful SQL tool calls
// (Knowledge.SQLTool), over the current definitions of the datasets the
// answer used. Call it when the user marks the answer good; the discovery
// step then offers the recipe for similar questions on the same schema.
//
// Errors: domain.ErrForbidden without write permission; domain.ErrNotFound
// for a message p cannot see; domain.ErrInvalid when recipes are not
// configured, the message is not a complete answer, or it ran no SQL.
func (s *Service) SaveRecipe(ctx context.Context, p domain.Principal, messageID string) (*recipes.Recipe, error) {
	if err := authorize(p, domain.PermWrite); err != nil {
		return nil, err
	}
	k := s.cfg.Knowledge
	if k.Recipes == nil {
		return nil, domain.Invalid("knowledge.recipes", "no recipe memory is configured (Config.Knowledge.Recipes)")
	}
	msg, sess, err := s.ownedMessage(ctx, p, messageID)
	if err != nil {
		return nil, err
	}
	if msg.Role != domain.RoleAssistant || msg.Status != domain.StatusComplete {
		return nil, domain.Invalid("message_id", fmt.Sprintf("message %s is not a complete answer", msg.ID))
	}
	tool := k.SQLTool
	if tool == "" {
		tool = "query_database"
	}
	var sqls []string
	for _, c := range msg.Metadata.ToolCalls {
		if c.Name != tool || c.Error != "" || c.Truncated {
			continue
		}
		var args struct {
			SQL string `json:"sql"`
		}
		if json.Unmarshal([]byte(c.Arguments), &args) == nil && strings.TrimSpace(args.SQL) != "" {
			sqls = append(sqls, args.SQL)
		}
	}
	if len(sqls) == 0 {
		return nil, domain.Invalid("message_id", fmt.Sprintf("message %s ran no complete, successful %s call to remember", msg.ID, tool))
	}
	question, err := s.questionBefore(ctx, p, sess.ID, msg)
	if err != nil {
		return nil, err
	}
	scope := k.scope(p.TenantID)
	var datasets []domain.Dataset
	if k.Catalog != nil && len(msg.Metadata.DatasetsUsed) > 0 {
		if datasets, err = k.Catalog.Datasets(ctx, scope, msg.Metadata.DatasetsUsed...); err != nil {
			return nil, fmt.Errorf("bichat: save recipe: datasets: %w", err)
		}
	}
	r, err := k.Recipes.SaveRecipe(ctx, scope, recipes.NewRecipe{Question: question, SQL: sqls, Datasets: datasets})
	if err != nil {
		return nil, fmt.Errorf("bichat: save recipe: %w", err)
	}
	return &r, nil
}

// questionBefore returns the text of the last user message before m.
func (s *Service) questionBefore(ctx context.Context, p domain.Principal, sessionID string, m *domain.Message) (string, error) {
	msgs, err := s.repos.Messages.ListMessages(ctx, p.TenantID, sessionID, domain.MessageListOptions{Limit: 10, Before: m.ID})
	if err != nil {
		return "", fmt.Errorf("bichat: save recipe: load messages: %w", err)
	}
	q := ""
	for _, x := range msgs {
		if x.Role == domain.RoleUser {
			q = messageText(agents.Message{Role: x.Role, Parts: x.Parts})
		}
	}
	if q == "" {
		return "", domain.Invalid("message_id", fmt.Sprintf("message %s answers no question found in its session", m.ID))
	}
	return q, nil
}

// valueMatches tells the model which columns hold the values the question
// names ("customers.city holds 'Lyon'"), from the catalog's value index;
// "" when nothing matched.
func valueMatches(hits []kb.DatasetHit) string {
	var b strings.Builder
	for _, h := range hits {
		for _, m := range h.MatchedValues {
			if b.Len() == 0 {
				b.WriteString("Values the question mentions, and the columns that hold them:\n")
			}
			fmt.Fprintf(&b, "- %s.%s = %q\n", h.Dataset.Name, m.Field, m.Value)
		}
	}
	return b.String()
}
