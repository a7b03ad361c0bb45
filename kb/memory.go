package kb

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/custom"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/camelcase"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/porter"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/regexp"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	bleveindex "github.com/blevesearch/bleve_index_api"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/kb/internal/bleverank"
)

// CatalogOptions configures NewMemoryCatalog. The zero value is a hybrid
// catalog with the offline HashEmbedder.
type CatalogOptions struct {
	// Embedder embeds definitions and questions. Nil means the offline
	// NewHashEmbedder(HashEmbedderOptions{}); set NoEmbeddings for a
	// BM25-only catalog. An embedder that is a CorpusFitter is fitted per
	// scope on the scope's definitions.
	Embedder Embedder
	// NoEmbeddings creates the catalog without vectors (BM25 only). Call
	// SetEmbedder and Backfill to add them later.
	NoEmbeddings bool
	// Mode is the default SearchMode of Search.
	Mode SearchMode
	// Bus, when set, receives EmbeddingFailed events.
	Bus *hooks.Bus
	// RRFConstant is the c in 1/(c+rank) of reciprocal-rank fusion;
	// default DefaultRRFConstant.
	RRFConstant float64
	// BM25Weight and VectorWeight weigh the two rankings in the fusion;
	// defaults 1 and 1.
	BM25Weight, VectorWeight float64
	// NameWeight weighs a third ranking in hybrid mode: the candidates
	// ordered by how much of their own name the question contains.
	// Default 0.3; negative switches it off.
	NameWeight float64
	// CoverageWeight weighs a fourth ranking in hybrid mode: the
	// candidates ordered by the IDF-weighted share of the question's
	// terms their definition contains anywhere (without BM25's length
	// normalisation, which buries wide tables), plus a share of the terms
	// only their best-covering related dataset adds (the pair a join
	// would answer). Default 1; negative switches it off.
	CoverageWeight float64
	// SynonymBoost is the BM25 boost of the synonyms field (Dataset.Synonyms
	// and every Field.Synonyms); default DefaultSynonymBoost, negative
	// leaves the field out of the BM25 search (the coverage ranking and
	// the embeddings still read synonyms). The name field's boost is 3,
	// the text field's (description, field names and descriptions) 1.
	SynonymBoost float64
	// LocationBoost is the BM25 boost of the location field
	// (Dataset.Database and Dataset.Schema, so "the sales schema" finds
	// its tables); default DefaultLocationBoost, negative leaves it out.
	LocationBoost float64
	// ValueWeight weighs a fifth ranking in hybrid mode: the datasets
	// holding a column value the question mentions (Field.Values, see
	// FoldValue), also reported on each hit as MatchedValues. Default
	// DefaultValueWeight (2: a value named in the question is strong
	// evidence, and at 1 the first value match only ties with the
	// first vector neighbour); negative switches the ranking off
	// (matches are still reported).
	ValueWeight float64
	// MaxValuesPerField bounds the value index: only the first
	// MaxValuesPerField of a field's Values are indexed; default
	// DefaultMaxValuesPerField. Values longer than 80 characters or 8
	// words, one-word values shorter than two characters, without a
	// letter or that are English stop words, and every value of a
	// Sensitive field are never indexed. Memory grows by under 200 bytes
	// per value, the definition's own copy included (measured: 600,000
	// values of one or two words over 10,000 datasets, 109 MB).
	MaxValuesPerField int
	// Synonyms are the host's groups of interchangeable words ({"churn",
	// "attrition"}), used like the built-in Thesaurus: a question word of
	// a group also searches the group's other words at ExpansionWeight.
	// Each group needs two words or more (Validate).
	Synonyms [][]string
	// NoThesaurus leaves the built-in Thesaurus out (Synonyms still
	// apply).
	NoThesaurus bool
	// ExpansionWeight is the share of a question word's BM25 boost its
	// synonyms (Thesaurus and Synonyms) search with; default
	// DefaultExpansionWeight, negative switches expansion off.
	ExpansionWeight float64
	// Lexicon maps words to the words of a general-purpose lexical
	// database, such as WordNet's synonyms and broader terms
	// (LoadWordNet): a question word also searches its Lexicon words, at
	// LexiconWeight.
	// They cover the paraphrases a business thesaurus does not (lighter ~
	// weight, automobile ~ car, produce ~ production) and are noisier,
	// hence their own, lower weight. Words the Thesaurus or Synonyms
	// already expand to keep ExpansionWeight.
	Lexicon Lexicon
	// LexiconWeight is the share of a question word's BM25 boost its
	// Lexicon words search with; default DefaultLexiconWeight, negative
	// switches the lexicon off.
	LexiconWeight float64
	// Candidates is how many datasets each side ranks before fusion;
	// default DefaultCandidates. A search for k hits ranks max(Candidates,
	// k), so the first k hits of a search are the first k of any search
	// for more hits, up to Candidates.
	Candidates int
}

// Defaults of CatalogOptions.
const (
	DefaultSynonymBoost    = 2.0
	DefaultLocationBoost   = 1.0
	DefaultValueWeight     = 2.0
	DefaultExpansionWeight = 0.3
	// DefaultLexiconWeight is a third of DefaultExpansionWeight: on the
	// pooled Spider benchmark WordNet's groups gained most at 0.1 (0.2
	// and 0.3 gave back part of the gain at recall@5).
	DefaultLexiconWeight = 0.1
)

// Validate reports a *domain.ValidationError for options a catalog
// cannot use: a synonym group with fewer than two non-empty words, or a
// negative MaxValuesPerField. Bootstrap and LoadCatalog call it;
// NewMemoryCatalog ignores unusable groups.
func (o CatalogOptions) Validate() error {
	for i, g := range o.Synonyms {
		n := 0
		for _, w := range g {
			if len(Words(w)) > 0 {
				n++
			}
		}
		if n < 2 {
			return domain.Invalid(fmt.Sprintf("synonyms[%d]", i), fmt.Sprintf("group %q needs at least two words", g))
		}
	}
	if o.MaxValuesPerField < 0 {
		return domain.Invalid("max_values_per_field", fmt.Sprintf("must not be negative (got %d)", o.MaxValuesPerField))
	}
	return nil
}

// DefaultCandidates is how many datasets each side of a hybrid search
// ranks before fusion by default. It does not grow with the number of
// hits asked for (below it), so asking for fewer hits returns a prefix
// of the longer list; Discover's default pool (30) stays below it. On
// the Spider benchmark 50, 100 and 150 give the same recall.
const DefaultCandidates = 50

// DefaultRRFConstant is the reciprocal-rank fusion constant catalogs use
// by default. It is far lower than the customary 60 because a catalog
// search needs only the first few ranks to be right, and because
// Discover's join-hint expansion lifts related datasets by a share of a
// strong hit's score: a low constant keeps the best hit's score well
// above the rest, so its related datasets are the ones that move up. On
// the Spider schema-retrieval benchmark 2 beat 5, 10, 20 and 60.
const DefaultRRFConstant = 2

// SearchOptions tunes one MemoryCatalog.SearchWith call.
type SearchOptions struct {
	// K is the number of hits; <= 0 means 10.
	K int
	// Mode selects the sides; the zero value is Hybrid.
	Mode SearchMode
	// NoExpansion searches the question's own words only (no Thesaurus
	// or Synonyms expansion) for this call.
	NoExpansion bool
	// NoValues leaves the value ranking out of this call's fusion
	// (MatchedValues are still reported).
	NoValues bool
}

// MemoryCatalog is the embedded Catalog: per scope, a Bleve BM25 index
// (identifiers split into words, lower-cased, Porter-stemmed, English stop
// words removed) over dataset names, descriptions and fields, plus one
// embedding per dataset; searches fuse both rankings by reciprocal-rank
// fusion. Scopes are separate indexes, so term statistics never mix
// tenants. Save and LoadCatalog persist it to a directory.
//
// It is safe for concurrent use. Writers of one scope are serialised;
// searches never wait on an embedder call.
type MemoryCatalog struct {
	opts CatalogOptions
	// exp expands question terms with their synonyms (nil: none).
	exp Expander
	// lex expands them with the Lexicon's words (nil: none).
	lex Expander

	mu       sync.RWMutex
	embedder Embedder // nil: no vectors
	scopes   map[Scope]*scopeState
	closed   bool
	// diskRoot is the directory the catalog was loaded from: its scopes'
	// Bleve indexes live there.
	diskRoot string
}

// entry is one stored dataset.
type entry struct {
	ds   domain.Dataset
	yaml string
	hash [32]byte
	vec  []float32
	// nameTerms are the distinct terms of the dataset's own name (the
	// part after the last dot), for the name-coverage ranking.
	nameTerms []string
	// terms are the definition's distinct terms (definitionTerms), for
	// the coverage ranking.
	terms []string
}

// nameTerms returns the distinct non-stop-word terms of the last
// segment of a dataset name.
func nameTerms(name string) []string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	var out []string
	for _, w := range Words(name) {
		if t := Stem(w); !stopWords[w] && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

type scopeState struct {
	wmu sync.Mutex // serialises writers (Put, Delete, Backfill)

	mu      sync.RWMutex
	index   bleve.Index
	onDisk  bool // index opened from the catalog's directory
	entries map[string]*entry
	names   []string // sorted
	// emb is the embedder the vectors come from (fitted for this scope
	// when the catalog's embedder is a CorpusFitter); fitN is the size of
	// the corpus it was fitted on.
	emb  Embedder
	fitN int
	// rels indexes relationships by both ends.
	rels map[string][]domain.Relationship
	// mat is the search snapshot of the vectors, rebuilt on the first
	// search after a change (nil when stale).
	mat *matrix
	// cov is the term-coverage snapshot of the definitions, rebuilt on
	// the first hybrid search after a change (nil when stale).
	cov *coverage
	// vals is the value-index snapshot of the definitions, rebuilt on
	// the first search after a change (nil when stale).
	vals *ValueIndex
	// vocab holds every word the scope's definitions use; compound
	// identifiers ("countrylanguage") are split into vocabulary words for
	// the text index.
	vocab map[string]bool
}

// NewMemoryCatalog returns an empty catalog.
func NewMemoryCatalog(opts CatalogOptions) *MemoryCatalog {
	c := &MemoryCatalog{opts: opts, scopes: map[Scope]*scopeState{}}
	if !opts.NoEmbeddings {
		c.embedder = opts.Embedder
		if c.embedder == nil {
			c.embedder = NewHashEmbedder(HashEmbedderOptions{})
		}
	}
	if c.opts.RRFConstant <= 0 {
		c.opts.RRFConstant = DefaultRRFConstant
	}
	if c.opts.BM25Weight <= 0 {
		c.opts.BM25Weight = 1
	}
	if c.opts.VectorWeight <= 0 {
		c.opts.VectorWeight = 1
	}
	if c.opts.SynonymBoost == 0 {
		c.opts.SynonymBoost = DefaultSynonymBoost
	}
	if c.opts.LocationBoost == 0 {
		c.opts.LocationBoost = DefaultLocationBoost
	}
	if c.opts.ValueWeight == 0 {
		c.opts.ValueWeight = DefaultValueWeight
	}
	if c.opts.ExpansionWeight == 0 {
		c.opts.ExpansionWeight = DefaultExpansionWeight
	}
	if c.opts.MaxValuesPerField <= 0 {
		c.opts.MaxValuesPerField = DefaultMaxValuesPerField
	}
	if c.opts.ExpansionWeight > 0 {
		var groups [][]string
		if !c.opts.NoThesaurus {
			groups = Thesaurus()
		}
		c.exp = NewExpander(append(groups, c.opts.Synonyms...))
	}
	if c.opts.LexiconWeight == 0 {
		c.opts.LexiconWeight = DefaultLexiconWeight
	}
	if c.opts.LexiconWeight > 0 && len(c.opts.Lexicon) > 0 {
		c.lex = c.opts.Lexicon.Expander()
	}
	return c
}

// Bootstrap builds a catalog from introspected datasets (as the SQL
// adapters' Introspect returns them, table and column comments as
// descriptions): it creates a MemoryCatalog with opts and puts datasets
// into scope in one batch, so the embedder is fitted once.
func Bootstrap(ctx context.Context, scope Scope, datasets []domain.Dataset, opts CatalogOptions) (*MemoryCatalog, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("kb: bootstrap catalog: %w", err)
	}
	c := NewMemoryCatalog(opts)
	if err := c.Put(ctx, scope, datasets...); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("kb: bootstrap catalog: %w", err)
	}
	return c, nil
}

// Close releases the indexes. The catalog is unusable afterwards.
func (c *MemoryCatalog) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	var errs []error
	for _, s := range c.scopes {
		if s.index != nil {
			errs = append(errs, s.index.Close())
		}
	}
	return errors.Join(errs...)
}

// SetEmbedder replaces the embedder (nil switches vectors off). Vectors
// from the previous embedder are no longer used; call Backfill per scope
// to embed the datasets again.
func (c *MemoryCatalog) SetEmbedder(e Embedder) {
	c.mu.Lock()
	c.embedder = e
	states := make([]*scopeState, 0, len(c.scopes))
	for _, s := range c.scopes {
		states = append(states, s)
	}
	c.mu.Unlock()
	for _, s := range states {
		s.wmu.Lock()
		s.mu.Lock()
		s.emb, s.fitN, s.mat = nil, 0, nil
		for _, e := range s.entries {
			e.vec = nil
		}
		s.mu.Unlock()
		s.wmu.Unlock()
	}
}

var errClosed = errors.New("kb: catalog closed")

// state returns the scope's state, creating it when create is set (nil,
// nil when absent and not created).
func (c *MemoryCatalog) state(scope Scope, create bool) (*scopeState, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	c.mu.RLock()
	s, closed := c.scopes[scope], c.closed
	c.mu.RUnlock()
	if closed {
		return nil, errClosed
	}
	if s != nil || !create {
		return s, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil, errClosed
	}
	if s = c.scopes[scope]; s != nil {
		return s, nil
	}
	idx, err := newMemIndex()
	if err != nil {
		return nil, fmt.Errorf("kb: create index for scope %s: %w", scope, err)
	}
	s = &scopeState{index: idx, entries: map[string]*entry{}, rels: map[string][]domain.Relationship{}, vocab: map[string]bool{}}
	c.scopes[scope] = s
	return s, nil
}

func (c *MemoryCatalog) currentEmbedder() Embedder {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.embedder
}

// Put implements Catalog.
func (c *MemoryCatalog) Put(ctx context.Context, scope Scope, datasets ...domain.Dataset) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := validateDatasets(datasets); err != nil {
		return fmt.Errorf("kb: put datasets: %w", err)
	}
	if len(datasets) == 0 {
		return nil
	}
	s, err := c.state(scope, true)
	if err != nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()

	// New entries; unchanged definitions keep their vectors.
	s.mu.RLock()
	fresh := make([]*entry, len(datasets))
	for i, d := range datasets {
		d = cloneDataset(d)
		y := d.YAML()
		e := &entry{ds: d, yaml: y, hash: definitionHash(d, y), nameTerms: nameTerms(d.Name), terms: definitionTerms(d)}
		if old := s.entries[d.Name]; old != nil && old.hash == e.hash {
			e.vec = old.vec
		}
		fresh[i] = e
	}
	total := len(s.entries)
	for _, d := range datasets {
		if s.entries[d.Name] == nil {
			total++
		}
	}
	s.mu.RUnlock()

	// Index the text side first: it never depends on the embedder.
	s.mu.Lock()
	for _, e := range fresh {
		addVocab(s.vocab, e.ds)
	}
	s.mu.Unlock()
	batch := s.index.NewBatch()
	for _, e := range fresh {
		if err := batch.Index(e.ds.Name, indexDoc(e.ds, s.vocab)); err != nil {
			return fmt.Errorf("kb: index dataset %q: %w", e.ds.Name, err)
		}
	}
	if err := s.index.Batch(batch); err != nil {
		return fmt.Errorf("kb: index datasets in scope %s: %w", scope, err)
	}

	s.mu.Lock()
	for _, e := range fresh {
		if old := s.entries[e.ds.Name]; old != nil {
			s.unlinkLocked(old)
		} else {
			s.names = insertSorted(s.names, e.ds.Name)
		}
		s.entries[e.ds.Name] = e
		s.linkLocked(e)
	}
	s.mat, s.cov, s.vals = nil, nil, nil
	s.mu.Unlock()

	c.embedScope(ctx, scope, s, total)
	return nil
}

// embedScope brings the scope's vectors up to date: it refits a
// CorpusFitter embedder when the scope has grown or shrunk by a quarter
// since the last fit (re-embedding everything) and otherwise embeds the
// entries without a vector. Failures are published, never returned.
// The caller holds s.wmu.
func (c *MemoryCatalog) embedScope(ctx context.Context, scope Scope, s *scopeState, total int) int {
	base := c.currentEmbedder()
	if base == nil {
		return 0
	}
	s.mu.RLock()
	emb, fitN := s.emb, s.fitN
	var todo []*entry
	refit := false
	if f, ok := base.(CorpusFitter); ok && (emb == nil || total*4 >= fitN*5 || total*4 <= fitN*3) {
		corpus := make([]string, 0, len(s.entries))
		for _, n := range s.names {
			corpus = append(corpus, EmbeddingText(s.entries[n].ds))
		}
		emb, fitN, refit = f.FitCorpus(corpus), len(corpus), true
	} else if emb == nil {
		emb = base
	}
	for _, n := range s.names {
		if e := s.entries[n]; refit || e.vec == nil || len(e.vec) != emb.Dimensions() {
			todo = append(todo, e)
		}
	}
	s.mu.RUnlock()
	if len(todo) == 0 {
		s.mu.Lock()
		s.emb, s.fitN = emb, fitN
		s.mu.Unlock()
		return 0
	}
	texts := make([]string, len(todo))
	for i, e := range todo {
		texts[i] = EmbeddingText(e.ds)
	}
	vecs, err := emb.Embed(ctx, texts)
	if err == nil && len(vecs) != len(texts) {
		err = fmt.Errorf("embedder returned %d vectors for %d texts", len(vecs), len(texts))
	}
	if err == nil {
		for i, v := range vecs {
			if len(v) != emb.Dimensions() {
				err = fmt.Errorf("embedder returned a vector of %d dimensions, want %d", len(v), emb.Dimensions())
				break
			}
			vecs[i] = normalized(v)
		}
	}
	if err != nil {
		names := make([]string, len(todo))
		for i, e := range todo {
			names[i] = e.ds.Name
		}
		c.publish(ctx, scope, &EmbeddingFailed{Scope: scope, Datasets: names, Error: err.Error()})
		if refit {
			// Vectors from the old fit cannot be compared with the new
			// one; keep the old fit until a successful embedding.
			return 0
		}
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if refit {
		for _, e := range s.entries {
			e.vec = nil
		}
	}
	for i, e := range todo {
		if s.entries[e.ds.Name] == e { // not replaced meanwhile
			e.vec = vecs[i]
		}
	}
	s.emb, s.fitN = emb, fitN
	s.mat = nil
	return len(todo)
}

func (c *MemoryCatalog) publish(ctx context.Context, scope Scope, e *EmbeddingFailed) {
	if c.opts.Bus == nil {
		return
	}
	e.Meta.Time = time.Now()
	e.Meta.TenantID = scope.TenantID
	c.opts.Bus.Publish(ctx, e)
}

// Delete implements Catalog.
func (c *MemoryCatalog) Delete(ctx context.Context, scope Scope, names ...string) error {
	s, err := c.state(scope, false)
	if err != nil || s == nil {
		return err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	batch := s.index.NewBatch()
	for _, n := range names {
		batch.Delete(n)
	}
	if err := s.index.Batch(batch); err != nil {
		return fmt.Errorf("kb: delete datasets in scope %s: %w", scope, err)
	}
	s.mu.Lock()
	for _, n := range names {
		if e := s.entries[n]; e != nil {
			s.unlinkLocked(e)
			delete(s.entries, n)
			i := sort.SearchStrings(s.names, n)
			s.names = append(s.names[:i], s.names[i+1:]...)
		}
	}
	s.mat, s.cov, s.vals = nil, nil, nil
	s.mu.Unlock()
	return nil
}

// Backfill implements Catalog.
func (c *MemoryCatalog) Backfill(ctx context.Context, scope Scope) (int, error) {
	if err := scope.Validate(); err != nil {
		return 0, err
	}
	if c.currentEmbedder() == nil {
		return 0, ErrNoEmbedder
	}
	s, err := c.state(scope, false)
	if err != nil || s == nil {
		return 0, err
	}
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.mu.RLock()
	total := len(s.entries)
	s.mu.RUnlock()
	n := c.embedScope(ctx, scope, s, total)
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, e := range s.entries {
		if e.vec == nil {
			return n, fmt.Errorf("kb: backfill scope %s: embedding failed (see the EmbeddingFailed event)", scope)
		}
	}
	return n, nil
}

// Datasets implements Catalog.
func (c *MemoryCatalog) Datasets(ctx context.Context, scope Scope, names ...string) ([]domain.Dataset, error) {
	s, err := c.state(scope, false)
	if err != nil || s == nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]domain.Dataset, 0, len(names))
	for _, n := range names {
		if e := s.entries[n]; e != nil {
			out = append(out, cloneDataset(e.ds))
		}
	}
	return out, nil
}

// List implements Catalog.
func (c *MemoryCatalog) List(ctx context.Context, scope Scope) ([]domain.Dataset, error) {
	s, err := c.state(scope, false)
	if err != nil || s == nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]domain.Dataset, 0, len(s.names))
	for _, n := range s.names {
		out = append(out, cloneDataset(s.entries[n].ds))
	}
	return out, nil
}

// Relationships implements Catalog.
func (c *MemoryCatalog) Relationships(ctx context.Context, scope Scope, names ...string) ([]domain.Relationship, error) {
	s, err := c.state(scope, false)
	if err != nil || s == nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.relationshipsLocked(names), nil
}

func (s *scopeState) relationshipsLocked(names []string) []domain.Relationship {
	seen := map[string]bool{}
	var out []domain.Relationship
	for _, n := range names {
		for _, r := range s.rels[n] {
			if s.entries[r.From] == nil || s.entries[r.To] == nil {
				continue
			}
			if k := relKey(r); !seen[k] {
				seen[k] = true
				out = append(out, cloneRelationship(r))
			}
		}
	}
	SortRelationships(out)
	return out
}

func (s *scopeState) linkLocked(e *entry) {
	for _, r := range e.ds.Relationships {
		r = normalizeRelationship(e.ds.Name, r)
		s.rels[r.From] = append(s.rels[r.From], r)
		if r.To != r.From {
			s.rels[r.To] = append(s.rels[r.To], r)
		}
	}
}

func (s *scopeState) unlinkLocked(e *entry) {
	for _, r := range e.ds.Relationships {
		r = normalizeRelationship(e.ds.Name, r)
		k := relKey(r)
		for _, end := range []string{r.From, r.To} {
			list := s.rels[end]
			for i := range list {
				if relKey(list[i]) == k {
					list = append(list[:i:i], list[i+1:]...)
					break
				}
			}
			if len(list) == 0 {
				delete(s.rels, end)
			} else {
				s.rels[end] = list
			}
		}
	}
}

// Search implements Catalog with the catalog's default mode.
func (c *MemoryCatalog) Search(ctx context.Context, scope Scope, q string, k int) ([]DatasetHit, error) {
	return c.SearchWith(ctx, scope, q, SearchOptions{K: k, Mode: c.opts.Mode})
}

// SearchWith is Search with per-call options (the mode, for comparing
// the sides).
func (c *MemoryCatalog) SearchWith(ctx context.Context, scope Scope, q string, opts SearchOptions) ([]DatasetHit, error) {
	s, err := c.state(scope, false)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, nil
	}
	k := opts.K
	if k <= 0 {
		k = 10
	}
	q = QuestionText(q) // "ordered by" must not find the orders table
	cands := c.opts.Candidates
	if cands <= 0 {
		cands = DefaultCandidates
	}
	cands = max(cands, k)
	// The two sides run concurrently: the vector side in its own
	// goroutine, BM25 in this one.
	var bm, vec []Ranked
	var vecDone chan struct{}
	if opts.Mode != BM25Only && strings.TrimSpace(q) != "" {
		vecDone = make(chan struct{})
		go func() {
			defer close(vecDone)
			vec = c.vectorSearch(ctx, scope, s, q, cands)
		}()
	}
	if opts.Mode != VectorOnly && strings.TrimSpace(q) != "" {
		var exps []expansion
		if !opts.NoExpansion {
			exps = []expansion{{c.exp, c.opts.ExpansionWeight}, {c.lex, c.opts.LexiconWeight}}
		}
		bm, err = s.bm25(ctx, q, cands, c.fieldBoosts(), exps)
	}
	if vecDone != nil {
		<-vecDone
	}
	if err != nil {
		return nil, fmt.Errorf("kb: search scope %s: %w", scope, err)
	}
	var covered []Ranked
	if opts.Mode == Hybrid && c.opts.CoverageWeight >= 0 {
		s.mu.RLock()
		cov := s.cov
		s.mu.RUnlock()
		if cov == nil {
			s.mu.Lock()
			if s.cov == nil {
				s.cov = s.buildCoverageLocked()
			}
			cov = s.cov
			s.mu.Unlock()
		}
		covered = cov.rank(q, bm, vec)
	}
	s.mu.RLock()
	vi := s.vals
	s.mu.RUnlock()
	if vi == nil {
		s.mu.Lock()
		if s.vals == nil {
			s.vals = buildValueIndex(s.names, func(n string) domain.Dataset { return s.entries[n].ds }, c.opts.MaxValuesPerField)
		}
		vi = s.vals
		s.mu.Unlock()
	}
	valueRanked, valueMatches := vi.Match(q)
	var valued []Ranked
	if opts.Mode == Hybrid && !opts.NoValues && c.opts.ValueWeight > 0 {
		valued = valueRanked
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var named []Ranked
	if opts.Mode == Hybrid && c.opts.NameWeight >= 0 {
		named = s.nameCoverage(q, bm, vec)
	}
	nw := c.opts.NameWeight
	if nw == 0 {
		nw = 0.3
	}
	cw := c.opts.CoverageWeight
	if cw == 0 {
		cw = 1
	}
	fused := FuseRRF(c.opts.RRFConstant, []float64{c.opts.BM25Weight, c.opts.VectorWeight, nw, cw, c.opts.ValueWeight}, bm, vec, named, covered, valued)

	hits := make([]DatasetHit, 0, k)
	for _, f := range fused {
		e := s.entries[f.Name]
		if e == nil {
			continue // deleted between the index read and now
		}
		hits = append(hits, DatasetHit{Dataset: cloneDataset(e.ds), YAML: e.yaml, Score: f.Score, BM25: f.Scores[0], Vector: f.Scores[1],
			MatchedValues: slices.Clone(valueMatches[f.Name])})
		if len(hits) == k {
			break
		}
	}
	if len(hits) == 0 {
		for _, n := range s.names {
			e := s.entries[n]
			hits = append(hits, DatasetHit{Dataset: cloneDataset(e.ds), YAML: e.yaml, Fallback: true})
			if len(hits) == k {
				break
			}
		}
	}
	return hits, nil
}

// nameCoverage ranks the candidates the other sides found by the share
// of their own name's terms the question contains ("documents" names
// Documents fully and Document_Structures half), ties by candidate order
// (first appearance in lists, which are deterministic and break their
// own ties by name; measured on Spider, this beats breaking these ties
// by name: the candidate order carries the other rankings' evidence);
// datasets whose name the question does not touch are left out. The
// caller holds s.mu.
func (s *scopeState) nameCoverage(q string, lists ...[]Ranked) []Ranked {
	qt := map[string]bool{}
	for _, t := range Terms(q) {
		qt[t] = true
	}
	seen := map[string]bool{}
	var out []Ranked
	for _, l := range lists {
		for _, r := range l {
			e := s.entries[r.Name]
			if seen[r.Name] || e == nil || len(e.nameTerms) == 0 {
				continue
			}
			seen[r.Name] = true
			hit := 0
			for _, t := range e.nameTerms {
				if qt[t] {
					hit++
				}
			}
			if hit > 0 {
				out = append(out, Ranked{Name: r.Name, Score: float64(hit) / float64(len(e.nameTerms))})
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Score > out[j].Score })
	return out
}

// expansion is an Expander and the weight its words search with.
type expansion struct {
	x Expander
	w float64
}

// bm25 ranks the scope's datasets for q with Bleve: scores at float32
// precision, ties by name, so the ranking does not depend on the index's
// internal document order (see bleverank).
func (s *scopeState) bm25(ctx context.Context, q string, n int, boosts []float64, exps []expansion) ([]Ranked, error) {
	qq, err := s.bm25Query(ctx, q, boosts, exps)
	if err != nil || qq == nil {
		return nil, err
	}
	req := bleve.NewSearchRequestOptions(qq, n, 0, false)
	res, err := bleverank.Search(ctx, s.index, req)
	if err != nil {
		return nil, err
	}
	out := make([]Ranked, 0, len(res.Hits))
	for _, h := range res.Hits {
		out = append(out, Ranked{Name: h.ID, Score: h.Score})
	}
	return out, nil
}

// bm25Query analyses q like the index and ORs one term query per term
// and field (boosts[i] for bm25Fields[i]; a field with a negative boost
// is not searched). Terms found in more than half of the scope's
// datasets are left out when rarer terms remain: their BM25 weight is a
// few percent of a rare term's, and their long posting lists are most of
// a search's cost on a large catalog. Each expansion's words for the
// question's terms are searched too, at its weight times the boost; a
// word an earlier expansion (or the question) already has keeps that
// weight.
func (s *scopeState) bm25Query(ctx context.Context, q string, boosts []float64, exps []expansion) (query.Query, error) {
	an := s.index.Mapping().AnalyzerNamed(analyzerName)
	if an == nil {
		return nil, fmt.Errorf("analyzer %s missing", analyzerName)
	}
	var terms []string
	seen := map[string]bool{}
	for _, tok := range an.Analyze([]byte(q)) {
		if t := string(tok.Term); !seen[t] {
			seen[t] = true
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	type weighted struct {
		t string
		w float64
	}
	all := make([]weighted, 0, len(terms))
	for _, t := range terms {
		all = append(all, weighted{t, 1})
	}
	have := slices.Clone(terms)
	for _, e := range exps {
		if e.x == nil || e.w <= 0 {
			continue
		}
		for _, t := range e.x.Expand(terms) { // the question's terms, not earlier expansions
			if !slices.Contains(have, t) {
				have = append(have, t)
				all = append(all, weighted{t, e.w})
			}
		}
	}
	adv, err := s.index.Advanced()
	if err != nil {
		return nil, err
	}
	r, err := adv.Reader()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	docs, err := r.DocCount()
	if err != nil {
		return nil, err
	}
	var rare, common []query.Query
	for _, wt := range all {
		t := wt.t
		for fi, f := range bm25Fields {
			if boosts[fi] < 0 {
				continue
			}
			tfr, err := r.TermFieldReader(ctx, []byte(t), f.name, false, false, false)
			if err != nil {
				return nil, err
			}
			df := tfr.Count()
			_ = tfr.Close()
			if df == 0 {
				continue
			}
			tq := bleve.NewTermQuery(t)
			tq.SetField(f.name)
			tq.SetBoost(boosts[fi] * wt.w)
			if df*2 > docs {
				common = append(common, tq)
			} else {
				rare = append(rare, tq)
			}
		}
	}
	if len(rare) == 0 {
		rare = common
	}
	if len(rare) == 0 {
		return nil, nil
	}
	return bleve.NewDisjunctionQuery(rare...), nil
}

// vectorSearch ranks the scope's datasets by cosine similarity to q;
// nil when the scope has no vectors or q cannot be embedded (published).
func (c *MemoryCatalog) vectorSearch(ctx context.Context, scope Scope, s *scopeState, q string, n int) []Ranked {
	s.mu.RLock()
	emb := s.emb
	s.mu.RUnlock()
	if emb == nil {
		return nil
	}
	vs, err := emb.Embed(ctx, []string{q})
	if err == nil && (len(vs) != 1 || len(vs[0]) != emb.Dimensions()) {
		err = fmt.Errorf("embedder returned %d vectors for 1 text", len(vs))
	}
	if err != nil {
		c.publish(ctx, scope, &EmbeddingFailed{Scope: scope, Query: true, Error: err.Error()})
		return nil
	}
	qv := normalized(vs[0])
	s.mu.RLock()
	if s.emb != emb {
		s.mu.RUnlock()
		return nil // refitted meanwhile: vectors not comparable; BM25 only this time
	}
	m := s.mat
	s.mu.RUnlock()
	if m == nil {
		s.mu.Lock()
		if s.mat == nil {
			s.mat = s.buildMatrixLocked()
		}
		m = s.mat
		s.mu.Unlock()
	}
	return m.top(qv, n)
}

// bm25Fields are the indexed fields and their default query boosts
// (fieldBoosts applies the catalog's options).
var bm25Fields = []struct {
	name  string
	boost float64
}{
	{"name", 3},
	{"text", 1},
	{"synonyms", DefaultSynonymBoost},
	{"location", DefaultLocationBoost},
}

// fieldBoosts returns the query boost of each of bm25Fields under the
// catalog's options (negative: the field is not searched).
func (c *MemoryCatalog) fieldBoosts() []float64 {
	b := make([]float64, len(bm25Fields))
	for i, f := range bm25Fields {
		b[i] = f.boost
	}
	b[2], b[3] = c.opts.SynonymBoost, c.opts.LocationBoost
	return b
}

// definitionHash identifies a definition's content: what the agent reads
// and what is embedded (synonyms are embedded but not in the YAML).
func definitionHash(d domain.Dataset, yaml string) [32]byte {
	return sha256.Sum256([]byte(yaml + "\x00" + EmbeddingText(d)))
}

const analyzerName = "bichat_identifier"

// indexDoc is the Bleve document of a dataset: its name (and source)
// and one text of description, field names and field descriptions, each
// followed by the parts of its compound identifiers (see decompound);
// the synonyms of the dataset and its fields; and the database and
// schema it lives in. Values are not in Bleve (see ValueIndex).
func indexDoc(d domain.Dataset, vocab map[string]bool) map[string]any {
	var text strings.Builder
	text.WriteString(d.Description)
	for _, f := range d.Fields {
		text.WriteString("\n" + f.Name)
		if f.Description != "" {
			text.WriteString(" " + f.Description)
		}
	}
	name := d.Name
	if d.Source != "" && d.Source != d.Name {
		name += " " + d.Source
	}
	var fields strings.Builder
	for _, f := range d.Fields {
		fields.WriteString(f.Name + " ")
	}
	syn := strings.Join(d.Synonyms, "\n")
	for _, f := range d.Fields {
		for _, w := range f.Synonyms {
			syn += "\n" + w
		}
	}
	return map[string]any{
		"name":     name + " " + decompound(name, vocab),
		"text":     text.String() + "\n" + decompound(fields.String(), vocab),
		"synonyms": syn,
		"location": strings.TrimSpace(d.Database + " " + d.Schema),
	}
}

// addVocab records the words of a dataset's identifiers and descriptions.
func addVocab(vocab map[string]bool, d domain.Dataset) {
	add := func(s string) {
		for _, w := range Words(s) {
			vocab[w] = true
		}
	}
	add(d.Name)
	add(d.Source)
	add(d.Description)
	for _, f := range d.Fields {
		add(f.Name)
		add(f.Description)
	}
}

// decompound returns the parts of the compound words of text: a word of
// eight letters or more that is two vocabulary words of three letters or
// more run together ("countrylanguage", "highschooler") yields both, so a
// question about languages finds the countrylanguage table. The longest
// balanced split wins; words that do not split are left out.
func decompound(text string, vocab map[string]bool) string {
	var out []string
	for _, w := range Words(text) {
		if len(w) < 8 {
			continue
		}
		best, bestMin := -1, 0
		for i := 3; i <= len(w)-3; i++ {
			if vocab[w[:i]] && vocab[w[i:]] && min(i, len(w)-i) > bestMin {
				best, bestMin = i, min(i, len(w)-i)
			}
		}
		if best > 0 {
			out = append(out, w[:best], w[best:])
		}
	}
	return strings.Join(out, " ")
}

// newIndexMapping is the Bleve mapping of a catalog scope: BM25 scoring
// and an analyzer that splits identifiers (letters and digits apart,
// camelCase apart), lower-cases, drops English stop words and stems.
func newIndexMapping() (mapping.IndexMapping, error) {
	im := bleve.NewIndexMapping()
	im.ScoringModel = bleveindex.BM25Scoring
	if err := im.AddCustomTokenizer("bichat_words", map[string]any{
		"type":   regexp.Name,
		"regexp": `\p{L}+|\p{N}+`,
	}); err != nil {
		return nil, err
	}
	if err := im.AddCustomAnalyzer(analyzerName, map[string]any{
		"type":          custom.Name,
		"tokenizer":     "bichat_words",
		"token_filters": []string{camelcase.Name, lowercase.Name, en.StopName, porter.Name},
	}); err != nil {
		return nil, err
	}
	im.DefaultAnalyzer = analyzerName
	dm := bleve.NewDocumentStaticMapping()
	for _, f := range bm25Fields {
		fm := bleve.NewTextFieldMapping()
		fm.Analyzer = analyzerName
		fm.Store = false
		fm.IncludeTermVectors = false
		fm.DocValues = false
		dm.AddFieldMappingsAt(f.name, fm)
	}
	im.DefaultMapping = dm
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	return im, nil
}

func newMemIndex() (bleve.Index, error) {
	m, err := newIndexMapping()
	if err != nil {
		return nil, err
	}
	// Scorch with an empty path keeps its segments in memory (and, unlike
	// the upsidedown memory store, supports BM25 statistics).
	return bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
}

func normalized(v []float32) []float32 {
	out := make([]float32, len(v))
	copy(out, v)
	normalize(out)
	return out
}

func insertSorted(s []string, v string) []string {
	i := sort.SearchStrings(s, v)
	s = append(s, "")
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func cloneDataset(d domain.Dataset) domain.Dataset {
	d.Fields = append([]domain.Field(nil), d.Fields...)
	rs := make([]domain.Relationship, len(d.Relationships))
	for i, r := range d.Relationships {
		rs[i] = cloneRelationship(r)
	}
	if len(rs) == 0 {
		rs = nil
	}
	d.Relationships = rs
	return d
}

func cloneRelationship(r domain.Relationship) domain.Relationship {
	r.FromColumns = append([]string(nil), r.FromColumns...)
	r.ToColumns = append([]string(nil), r.ToColumns...)
	return r
}
