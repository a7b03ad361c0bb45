package knowledge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/docs"
	"github.com/bichat-go/bichat/kb/recipes"
)

// Tool names.
const (
	SearchToolName     = "kb_search"
	SaveRecipeToolName = "save_recipe"
)

// Limits of kb_search.
const (
	DefaultSearchLimit = 5
	MaxSearchLimit     = 20
	// snippetSize bounds each snippet shown to the model, in bytes.
	snippetSize = 240
)

// CitationSource is the Source of the citations kb_search returns.
const CitationSource = docs.CitationSource

// Option configures the tools.
type Option func(*config)

type config struct {
	scope    *kb.Scope
	ontology string
}

// WithScope fixes the scope the tool works in. A call whose run belongs
// to another tenant (agents.CallInfo.TenantID) is refused. Without it the
// tenant comes from the call's CallInfo.
func WithScope(s kb.Scope) Option { return func(c *config) { c.scope = &s } }

// WithOntology sets the ontology combined with the call's tenant when no
// fixed scope is given.
func WithOntology(name string) Option { return func(c *config) { c.ontology = name } }

// errNoTenant is what the model sees when a tool runs outside a tenant.
var errNoTenant = errors.New("the knowledge base is not available in this conversation (no tenant)")

// scope resolves the call's scope.
func (c *config) resolve(ctx context.Context) (kb.Scope, error) {
	info, ok := agents.CallInfoFromContext(ctx)
	if c.scope != nil {
		if ok && info.TenantID != "" && info.TenantID != c.scope.TenantID {
			return kb.Scope{}, fmt.Errorf("%w: this tool serves another tenant", domain.ErrForbidden)
		}
		return *c.scope, nil
	}
	if !ok || info.TenantID == "" {
		return kb.Scope{}, errNoTenant
	}
	s := kb.Scope{TenantID: info.TenantID, Ontology: c.ontology}
	if err := s.Validate(); err != nil {
		return kb.Scope{}, err
	}
	return s, nil
}

func newConfig(opts []Option) (*config, error) {
	c := &config{}
	for _, o := range opts {
		o(c)
	}
	if c.scope != nil {
		if err := c.scope.Validate(); err != nil {
			return nil, err
		}
	}
	if c.ontology != "" {
		if err := (kb.Scope{TenantID: "x", Ontology: c.ontology}).Validate(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// SearchArgs are the arguments of kb_search.
type SearchArgs struct {
	Query string `json:"query" jsonschema:"minLength=1,maxLength=1000,description=What to look for: words or a question about definitions\\, policies\\, metrics or procedures."`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1,maximum=20,description=How many documents to return (default 5)."`
}

// SearchPayload is the host-side result of kb_search (agents.Result.Payload).
type SearchPayload struct {
	Query string `json:"query"`
	// Total is the number of matching documents, of which Hits are the
	// best.
	Total uint64     `json:"total"`
	Hits  []docs.Hit `json:"hits"`
}

// SearchTool returns kb_search: a read-only, parallel-safe tool that
// searches the knowledge-base documents of the call's scope. The summary
// the model sees lists each hit as "[n] title (id)" with its highlighted
// snippets (matches in **bold**) and asks the model to cite as [n];
// Result.Citations carries the same hits as domain.Citation (source "kb",
// document id, title, URL, best snippet as plain text, score) for the
// host to render; Result.Payload is a SearchPayload.
func SearchTool(s docs.Searcher, opts ...Option) (agents.Tool, error) {
	if s == nil {
		return nil, errors.New("knowledge: kb_search needs a searcher")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	fn := func(ctx context.Context, in SearchArgs) (agents.Result, error) {
		scope, err := cfg.resolve(ctx)
		if err != nil {
			return agents.Result{}, err
		}
		limit := in.Limit
		if limit == 0 {
			limit = DefaultSearchLimit
		}
		res, err := s.Search(ctx, scope, in.Query, docs.SearchOptions{Limit: limit, Snippets: 2, SnippetSize: snippetSize})
		if err != nil {
			return agents.Result{}, fmt.Errorf("knowledge base search failed: %w", err)
		}
		return searchResult(in.Query, res), nil
	}
	return agents.NewTool(SearchToolName,
		"Search the knowledge base (documentation, metric definitions, business rules, policies) for passages relevant to the question. "+
			"Use it to ground answers in the company's own definitions; cite the passages you use as [n].",
		fn, agents.WithParallel())
}

func searchResult(query string, res docs.Results) agents.Result {
	var b strings.Builder
	if len(res.Hits) == 0 {
		fmt.Fprintf(&b, "No knowledge-base documents match %q. Try other words, or answer without the knowledge base.", query)
		return agents.Result{Summary: b.String(), Payload: SearchPayload{Query: query, Total: res.Total, Hits: []docs.Hit{}}}
	}
	fmt.Fprintf(&b, "%d of %d matching knowledge-base documents for %q. Cite a passage you use as [n].\n", len(res.Hits), res.Total, query)
	cites := make([]domain.Citation, 0, len(res.Hits))
	for i, h := range res.Hits {
		d := h.Document
		fmt.Fprintf(&b, "\n[%d] %s (%s", i+1, oneLine(d.Title), oneLine(d.ID))
		if u := d.URL(); u != "" {
			fmt.Fprintf(&b, ", %s", oneLine(u))
		}
		b.WriteString(")\n")
		for _, s := range h.Snippets {
			text := s.Mark("**", "**")
			if s.CutStart {
				text = "…" + text
			}
			if s.CutEnd {
				text += "…"
			}
			fmt.Fprintf(&b, "    %s\n", text)
		}
		cites = append(cites, h.Citation())
	}
	return agents.Result{
		Summary:   strings.TrimRight(b.String(), "\n"),
		Payload:   SearchPayload{Query: query, Total: res.Total, Hits: res.Hits},
		Citations: cites,
	}
}

// oneLine keeps a title or id on its line in the summary.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// RecipeSaver stores approved recipes; *recipes.Memory implements it.
type RecipeSaver interface {
	SaveRecipe(ctx context.Context, scope kb.Scope, r recipes.NewRecipe) (recipes.Recipe, error)
}

// DatasetResolver returns the current definitions of datasets by name;
// the dataset catalog (kb.Catalog) implements it. Unknown names may be
// left out of the result or reported as an error.
type DatasetResolver interface {
	Datasets(ctx context.Context, scope kb.Scope, names ...string) ([]domain.Dataset, error)
}

// SaveRecipeArgs are the arguments of save_recipe.
type SaveRecipeArgs struct {
	Question string   `json:"question" jsonschema:"minLength=1,maxLength=4000,description=The user's question the SQL answered\\, in their words."`
	SQL      []string `json:"sql" jsonschema:"minItems=1,maxItems=20,description=The SQL statements that produced the approved answer\\, in order."`
	Datasets []string `json:"datasets" jsonschema:"minItems=1,maxItems=50,description=Names of the datasets the SQL reads."`
}

// SavedRecipe is the host-side result of save_recipe.
type SavedRecipe struct {
	ID           string   `json:"id"`
	Question     string   `json:"question"`
	Datasets     []string `json:"datasets"`
	SQL          []string `json:"sql"`
	Fingerprint  string   `json:"fingerprint"`
	SuccessCount int      `json:"success_count"`
}

// SaveRecipeTool returns save_recipe, which a host may expose so the
// agent can offer to remember a query that worked. It has write
// permission: the executor never runs it on the model's word but stops
// with a confirmation request, and only the host's approval saves the
// recipe. The datasets are resolved to their current definitions (their
// schema fingerprint is stored); unknown names are refused.
func SaveRecipeTool(saver RecipeSaver, catalog DatasetResolver, opts ...Option) (agents.Tool, error) {
	if saver == nil || catalog == nil {
		return nil, errors.New("knowledge: save_recipe needs a recipe store and a dataset resolver")
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	fn := func(ctx context.Context, in SaveRecipeArgs) (agents.Result, error) {
		scope, err := cfg.resolve(ctx)
		if err != nil {
			return agents.Result{}, err
		}
		names := slices.Clone(in.Datasets)
		slices.Sort(names)
		names = slices.Compact(names)
		defs, err := catalog.Datasets(ctx, scope, names...)
		if err != nil {
			return agents.Result{}, fmt.Errorf("look up datasets %s: %w", strings.Join(names, ", "), err)
		}
		found := map[string]bool{}
		for _, d := range defs {
			found[d.Name] = true
		}
		var missing []string
		for _, n := range names {
			if !found[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			return agents.Result{}, fmt.Errorf("unknown datasets: %s; use the exact dataset names", strings.Join(missing, ", "))
		}
		r, err := saver.SaveRecipe(ctx, scope, recipes.NewRecipe{Question: in.Question, SQL: in.SQL, Datasets: defs})
		if err != nil {
			return agents.Result{}, fmt.Errorf("save recipe: %w", err)
		}
		out := SavedRecipe{ID: r.ID, Question: r.Question, Datasets: r.Datasets, SQL: r.SQL, Fingerprint: r.Fingerprint, SuccessCount: r.SuccessCount}
		return agents.Result{
			Summary: fmt.Sprintf("Saved recipe %s for %q (datasets: %s). It will be suggested for similar questions while these datasets keep their schema.",
				r.ID, r.Question, strings.Join(r.Datasets, ", ")),
			Payload:  out,
			Datasets: r.Datasets,
		}, nil
	}
	return agents.NewTool(SaveRecipeToolName,
		"Remember a question and the SQL that answered it well, so similar questions later reuse it. "+
			"Only call this after the user confirmed the answer was right; the user is asked to approve the save.",
		fn, agents.WithPermission(agents.PermWrite))
}
