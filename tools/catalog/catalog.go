package catalog

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/kb"
)

// Option configures the tools.
type Option func(*config)

type config struct {
	scope    *kb.Scope
	ontology string
	maxList  int
}

// WithScope fixes the scope of every call (a single-tenant host).
func WithScope(s kb.Scope) Option { return func(c *config) { c.scope = &s } }

// WithOntology sets the ontology used with the call's tenant when the
// scope comes from the call context.
func WithOntology(name string) Option { return func(c *config) { c.ontology = name } }

// WithMaxList caps how many datasets list_datasets shows the model
// (default 200); the count is always the full count.
func WithMaxList(n int) Option { return func(c *config) { c.maxList = n } }

// ErrNoScope is returned when neither WithScope nor the call context
// names a tenant.
var ErrNoScope = errors.New("catalog: no scope: set WithScope or run the tool inside an agent run with a tenant")

func newConfig(opts []Option) *config {
	c := &config{maxList: 200}
	for _, o := range opts {
		o(c)
	}
	return c
}

func (c *config) scopeFor(ctx context.Context) (kb.Scope, error) {
	if c.scope != nil {
		return *c.scope, nil
	}
	info, ok := agents.CallInfoFromContext(ctx)
	if !ok || info.TenantID == "" {
		return kb.Scope{}, ErrNoScope
	}
	return kb.Scope{TenantID: info.TenantID, Ontology: c.ontology}, nil
}

// ListInput is list_datasets' (empty) argument object.
type ListInput struct{}

// DatasetInfo is one entry of list_datasets.
type DatasetInfo struct {
	Name        string `json:"name"`
	Source      string `json:"source"`
	Kind        string `json:"kind,omitempty"`
	Description string `json:"description,omitempty"`
	Fields      int    `json:"fields"`
}

// ListOutput is list_datasets' result; the host receives it as the
// payload.
type ListOutput struct {
	Count    int           `json:"count"`
	Datasets []DatasetInfo `json:"datasets"`
	// Truncated is set when the model was shown only the first datasets.
	Truncated bool `json:"truncated,omitempty"`
}

// ListDatasets returns the list_datasets tool: every dataset of the
// scope with its source and description.
func ListDatasets(cat kb.Catalog, opts ...Option) (agents.Tool, error) {
	cfg := newConfig(opts)
	return agents.NewTool("list_datasets",
		"List the datasets (tables and views) you can query, with their sources and descriptions. Use get_dataset_details for their columns.",
		func(ctx context.Context, _ ListInput) (agents.Result, error) {
			scope, err := cfg.scopeFor(ctx)
			if err != nil {
				return agents.Result{}, err
			}
			ds, err := cat.List(ctx, scope)
			if err != nil {
				return agents.Result{}, fmt.Errorf("list_datasets: %w", err)
			}
			out := ListOutput{Count: len(ds), Datasets: make([]DatasetInfo, len(ds))}
			for i, d := range ds {
				out.Datasets[i] = DatasetInfo{Name: d.Name, Source: d.Source, Kind: d.Kind, Description: d.Description, Fields: len(d.Fields)}
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d datasets", len(ds))
			if len(ds) == 0 {
				b.WriteString(" (the catalog of this scope is empty).")
			} else {
				b.WriteString(":\n")
			}
			for i, d := range out.Datasets {
				if i == cfg.maxList {
					out.Truncated = true
					fmt.Fprintf(&b, "... and %d more (not shown).\n", len(ds)-i)
					break
				}
				fmt.Fprintf(&b, "- %s", d.Name)
				if d.Source != d.Name {
					fmt.Fprintf(&b, " (source %s)", d.Source)
				}
				if d.Description != "" {
					fmt.Fprintf(&b, ": %s", d.Description)
				}
				b.WriteByte('\n')
			}
			return agents.Result{Summary: strings.TrimRight(b.String(), "\n"), Payload: out}, nil
		}, agents.WithParallel())
}

// DetailsInput is get_dataset_details' argument object.
type DetailsInput struct {
	Names []string `json:"names" jsonschema:"minItems=1,maxItems=50,description=Dataset names as list_datasets shows them."`
}

// Unknown is a requested name the scope does not hold, with the closest
// existing names.
type Unknown struct {
	Name       string   `json:"name"`
	DidYouMean []string `json:"did_you_mean,omitempty"`
}

// DetailsOutput is get_dataset_details' payload.
type DetailsOutput struct {
	// Definitions holds each found dataset's YAML, in the order asked.
	Definitions []Definition `json:"definitions"`
	Unknown     []Unknown    `json:"unknown,omitempty"`
}

// Definition is one dataset's YAML definition.
type Definition struct {
	Name string `json:"name"`
	YAML string `json:"yaml"`
}

// GetDatasetDetails returns the get_dataset_details tool: the YAML
// definitions (columns, types, descriptions, joins) of the named
// datasets; unknown names are reported with the closest existing names.
func GetDatasetDetails(cat kb.Catalog, opts ...Option) (agents.Tool, error) {
	cfg := newConfig(opts)
	return agents.NewTool("get_dataset_details",
		"Get the definitions (columns with types and descriptions, primary keys, join paths) of datasets by name. Read them before writing SQL.",
		func(ctx context.Context, in DetailsInput) (agents.Result, error) {
			scope, err := cfg.scopeFor(ctx)
			if err != nil {
				return agents.Result{}, err
			}
			names := dedupe(in.Names)
			ds, err := cat.Datasets(ctx, scope, names...)
			if err != nil {
				return agents.Result{}, fmt.Errorf("get_dataset_details: %w", err)
			}
			found := map[string]bool{}
			var out DetailsOutput
			var b strings.Builder
			for _, d := range ds {
				found[d.Name] = true
				y := d.YAML()
				out.Definitions = append(out.Definitions, Definition{Name: d.Name, YAML: y})
				b.WriteString(y)
				b.WriteString("---\n")
			}
			var missing []string
			for _, n := range names {
				if !found[n] {
					missing = append(missing, n)
				}
			}
			if len(missing) > 0 {
				all, err := cat.List(ctx, scope)
				if err != nil {
					return agents.Result{}, fmt.Errorf("get_dataset_details: %w", err)
				}
				known := make([]string, len(all))
				for i, d := range all {
					known[i] = d.Name
				}
				for _, n := range missing {
					u := Unknown{Name: n, DidYouMean: closest(n, known, 3)}
					out.Unknown = append(out.Unknown, u)
					fmt.Fprintf(&b, "unknown dataset %q", n)
					if len(u.DidYouMean) > 0 {
						fmt.Fprintf(&b, "; did you mean: %s", strings.Join(u.DidYouMean, ", "))
					}
					b.WriteString("\n")
				}
			}
			sum := strings.TrimSuffix(strings.TrimRight(b.String(), "\n"), "---")
			return agents.Result{Summary: strings.TrimRight(sum, "\n"), Payload: out, Datasets: namesOf(out.Definitions)}, nil
		}, agents.WithParallel())
}

func namesOf(ds []Definition) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Name
	}
	return out
}

func dedupe(in []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range in {
		n = strings.TrimSpace(n)
		if n != "" && !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

// closest returns up to n known names nearest to name: case-insensitive
// edit distance on the whole name and on the part after the schema, kept
// when the distance is at most a third of the longer name (or the one
// contains the other).
func closest(name string, known []string, n int) []string {
	type cand struct {
		name string
		d    int
	}
	lname := strings.ToLower(name)
	var cs []cand
	for _, k := range known {
		lk := strings.ToLower(k)
		d := levenshtein(lname, lk)
		if i := strings.LastIndexByte(lk, '.'); i >= 0 {
			d = min(d, levenshtein(lname, lk[i+1:]))
		}
		limit := max(len(lname), len(lk)) / 3
		if d <= max(limit, 2) || strings.Contains(lk, lname) || strings.Contains(lname, lk) {
			cs = append(cs, cand{k, d})
		}
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].name < cs[j].name
	})
	var out []string
	for i := 0; i < len(cs) && i < n; i++ {
		out = append(out, cs[i].name)
	}
	return out
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
