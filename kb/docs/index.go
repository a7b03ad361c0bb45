package docs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/index/scorch/mergeplan"
	"github.com/blevesearch/bleve/v2/mapping"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// ErrClosed is returned by every method of an Index after Close.
var ErrClosed = errors.New("docs: index is closed")

// DefaultBatchSize is the number of documents AddBatch and Rebuild send to
// Bleve at a time when Options.BatchSize is zero.
const DefaultBatchSize = 1000

// Options configures an Index. The zero value keeps every scope's index
// in memory.
type Options struct {
	// Dir, when set, keeps each scope's index on disk in its own
	// subdirectory of Dir (named by a hash of the scope), created on first
	// use and reopened by a later Index with the same Dir. Only one Index
	// may use a Dir at a time. Empty keeps the indexes in memory.
	Dir string
	// BatchSize is the number of documents indexed per Bleve batch by
	// AddBatch and Rebuild; 0 means DefaultBatchSize. Larger batches index
	// faster and make fewer segments (in memory, segments are never
	// merged, so a memory index built in few large batches searches
	// faster).
	BatchSize int
}

// Index is the knowledge-base document index: one Bleve index per scope,
// so a search can only ever see documents of its own scope. Documents are
// scored with BM25 over title, content and tags (English analysis with
// stemming), with optional fuzzy matching and highlighted snippets.
//
// Each scope holding documents keeps an open Bleve index (with one
// background goroutine in memory, three on disk) until Close or Drop. An
// Index is safe for concurrent use. Close releases it.
type Index struct {
	opts    Options
	mapping mapping.IndexMapping

	mu     sync.Mutex
	closed bool
	shards map[kb.Scope]*shard
}

// shard is the index of one scope. Readers and writers hold mu for reading
// while they use idx; Rebuild and Close hold it for writing to swap or
// close idx, so no call ever sees a closed index.
type shard struct {
	mu  sync.RWMutex
	idx bleve.Index
	dir string // "" in memory
}

// New returns an empty Index (or, with Options.Dir, one that reopens the
// scopes already stored there on first use).
func New(opts Options) (*Index, error) {
	if opts.BatchSize < 0 {
		return nil, fmt.Errorf("docs: negative batch size %d", opts.BatchSize)
	}
	if opts.BatchSize == 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.Dir != "" {
		if err := os.MkdirAll(opts.Dir, 0o750); err != nil {
			return nil, fmt.Errorf("docs: create index directory: %w", err)
		}
	}
	m, err := newMapping()
	if err != nil {
		return nil, err
	}
	return &Index{opts: opts, mapping: m, shards: map[kb.Scope]*shard{}}, nil
}

// Field names in the Bleve documents.
const (
	fieldTitle    = "title"
	fieldContent  = "content"
	fieldTags     = "tags"     // keyword: exact tag filter, stored
	fieldTagText  = "tag_text" // analysed tags for matching words
	fieldSource   = "source"
	fieldMetadata = "metadata" // JSON object, stored only
)

func newMapping() (mapping.IndexMapping, error) {
	text := func(store bool) *mapping.FieldMapping {
		f := mapping.NewTextFieldMapping()
		f.Analyzer = en.AnalyzerName
		f.Store = store
		f.IncludeTermVectors = store // locations feed the snippets
		f.IncludeInAll = false
		f.DocValues = false
		return f
	}
	stored := func() *mapping.FieldMapping {
		f := mapping.NewTextFieldMapping()
		f.Index = false
		f.Store = true
		f.IncludeInAll = false
		f.IncludeTermVectors = false
		f.DocValues = false
		return f
	}
	tags := mapping.NewTextFieldMapping()
	tags.Analyzer = keyword.Name
	tags.Store = true
	tags.IncludeInAll = false
	tags.IncludeTermVectors = false
	tags.DocValues = false

	dm := mapping.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldTitle, text(true))
	dm.AddFieldMappingsAt(fieldContent, text(true))
	dm.AddFieldMappingsAt(fieldTags, tags)
	dm.AddFieldMappingsAt(fieldTagText, text(false))
	dm.AddFieldMappingsAt(fieldSource, stored())
	dm.AddFieldMappingsAt(fieldMetadata, stored())

	im := mapping.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.ScoringModel = index.BM25Scoring
	im.StoreDynamic = false
	im.IndexDynamic = false
	im.DocValuesDynamic = false
	if err := im.Validate(); err != nil {
		return nil, fmt.Errorf("docs: index mapping: %w", err)
	}
	return im, nil
}

// bleveDoc is what Bleve indexes for a Document.
func bleveDoc(d Document) (map[string]any, error) {
	m := map[string]any{
		fieldTitle:   d.Title,
		fieldContent: d.Content,
	}
	if len(d.Tags) > 0 {
		m[fieldTags] = d.Tags
		m[fieldTagText] = d.Tags
	}
	if d.Source != "" {
		m[fieldSource] = d.Source
	}
	if len(d.Metadata) > 0 {
		b, err := json.Marshal(d.Metadata)
		if err != nil {
			return nil, err
		}
		m[fieldMetadata] = string(b)
	}
	return m, nil
}

// scopeDir names a scope's directory: a hash, so any tenant and ontology
// spelling is a safe file name and scopes cannot collide.
func (x *Index) scopeDir(scope kb.Scope) string {
	sum := sha256.Sum256([]byte(scope.TenantID + "\x00" + scope.Ontology))
	return filepath.Join(x.opts.Dir, "scope-"+hex.EncodeToString(sum[:16]))
}

// shard returns the scope's shard. With create false it returns nil (and
// no error) for a scope that has no index yet.
func (x *Index) shard(scope kb.Scope, create bool) (*shard, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil, ErrClosed
	}
	if s := x.shards[scope]; s != nil {
		return s, nil
	}
	var (
		idx bleve.Index
		dir string
		err error
	)
	if x.opts.Dir == "" {
		if !create {
			return nil, nil
		}
		idx, err = x.newBleve("")
	} else {
		dir = x.scopeDir(scope)
		recoverSwap(dir)
		switch _, statErr := os.Stat(dir); {
		case statErr == nil:
			idx, err = bleve.Open(dir)
		case errors.Is(statErr, fs.ErrNotExist) && !create:
			return nil, nil
		case errors.Is(statErr, fs.ErrNotExist):
			idx, err = x.newBleve(dir)
		default:
			err = statErr
		}
	}
	if err != nil {
		return nil, fmt.Errorf("docs: open index of scope %s: %w", scope, err)
	}
	s := &shard{idx: idx, dir: dir}
	x.shards[scope] = s
	return s, nil
}

func (x *Index) newBleve(dir string) (bleve.Index, error) {
	return bleve.NewUsing(dir, x.mapping, scorch.Name, bleve.Config.DefaultKVStore, nil)
}

// recoverSwap finishes or undoes a Rebuild swap interrupted by a crash:
// when the live directory is missing but the previous one survives, it
// is put back.
func recoverSwap(dir string) {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(dir + ".old"); err == nil {
			_ = os.Rename(dir+".old", dir)
		}
	}
	_ = os.RemoveAll(dir + ".old")
}

// read runs fn with the scope's index held for reading; fn is not called
// (and read returns nil) when the scope has no index.
func (x *Index) read(scope kb.Scope, create bool, fn func(bleve.Index) error) error {
	s, err := x.shard(scope, create)
	if err != nil || s == nil {
		return err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.idx == nil {
		return ErrClosed
	}
	return fn(s.idx)
}

// Add indexes one document in scope, replacing any document with the same
// id. It returns a *domain.ValidationError for an invalid document.
func (x *Index) Add(ctx context.Context, scope kb.Scope, doc Document) error {
	return x.AddBatch(ctx, scope, []Document{doc})
}

// AddBatch indexes docs in scope, replacing documents with the same ids
// (the last one wins when docs repeats an id). Every document is
// validated before any is indexed: one invalid document rejects the call
// with a *domain.ValidationError naming it. Documents are sent to Bleve in
// batches of Options.BatchSize; each batch is applied atomically.
func (x *Index) AddBatch(ctx context.Context, scope kb.Scope, docs []Document) error {
	if len(docs) == 0 {
		return scope.Validate()
	}
	for i, d := range docs {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("docs: document %d (%q): %w", i, d.ID, err)
		}
	}
	return x.read(scope, true, func(idx bleve.Index) error {
		return x.indexAll(ctx, idx, docs)
	})
}

func (x *Index) indexAll(ctx context.Context, idx bleve.Index, docs []Document) error {
	for start := 0; start < len(docs); start += x.opts.BatchSize {
		if err := ctx.Err(); err != nil {
			return err
		}
		end := min(start+x.opts.BatchSize, len(docs))
		b := idx.NewBatch()
		for _, d := range docs[start:end] {
			bd, err := bleveDoc(d)
			if err != nil {
				return fmt.Errorf("docs: document %q: %w", d.ID, err)
			}
			if err := b.Index(d.ID, bd); err != nil {
				return fmt.Errorf("docs: document %q: %w", d.ID, err)
			}
		}
		if err := idx.Batch(b); err != nil {
			return fmt.Errorf("docs: index batch: %w", err)
		}
	}
	return nil
}

// Delete removes the documents with these ids from scope and returns how
// many existed. Unknown ids are not an error; invalid ones are.
func (x *Index) Delete(ctx context.Context, scope kb.Scope, ids ...string) (int, error) {
	for _, id := range ids {
		if err := ValidateID(id); err != nil {
			return 0, err
		}
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	n := 0
	err := x.read(scope, false, func(idx bleve.Index) error {
		b := idx.NewBatch()
		seen := map[string]bool{}
		for _, id := range ids {
			if seen[id] {
				continue
			}
			seen[id] = true
			d, err := idx.Document(id)
			if err != nil {
				return fmt.Errorf("docs: delete %q: %w", id, err)
			}
			if d == nil {
				continue
			}
			n++
			b.Delete(id)
		}
		if b.Size() == 0 {
			return nil
		}
		if err := idx.Batch(b); err != nil {
			return fmt.Errorf("docs: delete batch: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Get returns the stored document with this id in scope, or an error
// matching domain.ErrNotFound (also for ids that exist only in another
// scope).
func (x *Index) Get(ctx context.Context, scope kb.Scope, id string) (Document, error) {
	if err := ValidateID(id); err != nil {
		return Document{}, err
	}
	if err := ctx.Err(); err != nil {
		return Document{}, err
	}
	var (
		doc   Document
		found bool
	)
	err := x.read(scope, false, func(idx bleve.Index) error {
		req := bleve.NewSearchRequestOptions(bleve.NewDocIDQuery([]string{id}), 1, 0, false)
		req.Fields = storedFields
		res, err := idx.SearchInContext(ctx, req)
		if err != nil {
			return fmt.Errorf("docs: get %q: %w", id, err)
		}
		if len(res.Hits) == 1 {
			doc, found = documentFromFields(res.Hits[0].ID, res.Hits[0].Fields, true), true
		}
		return nil
	})
	if err != nil {
		return Document{}, err
	}
	if !found {
		return Document{}, fmt.Errorf("docs: document %q: %w", id, domain.ErrNotFound)
	}
	return doc, nil
}

// Source yields documents to index, in any order. A source that fails
// part-way yields the error (and may stop).
type Source interface {
	Documents(ctx context.Context) iter.Seq2[Document, error]
}

// RebuildStats reports what Rebuild indexed.
type RebuildStats struct {
	// Documents is the number of documents in the scope afterwards.
	Documents uint64
	// Took is the time spent reading the source and building the index.
	Took time.Duration
}

// Rebuild replaces every document of scope with the documents src yields.
// The new index is built to the side and swapped in atomically: searches
// keep seeing the old documents until it is complete, and when src fails,
// a document is invalid or ctx ends, the old index stays untouched and the
// error is returned. Documents added to or deleted from the scope while
// Rebuild runs are overwritten by the swap.
func (x *Index) Rebuild(ctx context.Context, scope kb.Scope, src Source) (RebuildStats, error) {
	start := time.Now()
	if src == nil {
		return RebuildStats{}, errors.New("docs: rebuild needs a source")
	}
	if _, err := x.shard(scope, true); err != nil {
		return RebuildStats{}, err
	}
	dir := ""
	if x.opts.Dir != "" {
		dir = x.scopeDir(scope) + ".rebuild-" + domain.NewID()
	}
	fresh, err := x.newBleve(dir)
	if err != nil {
		return RebuildStats{}, fmt.Errorf("docs: rebuild scope %s: %w", scope, err)
	}
	discard := func() {
		_ = fresh.Close()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	batch := make([]Document, 0, x.opts.BatchSize)
	flush := func() error {
		err := x.indexAll(ctx, fresh, batch)
		batch = batch[:0]
		return err
	}
	for d, err := range src.Documents(ctx) {
		if err != nil {
			discard()
			return RebuildStats{}, fmt.Errorf("docs: rebuild scope %s: source: %w", scope, err)
		}
		if err := d.Validate(); err != nil {
			discard()
			return RebuildStats{}, fmt.Errorf("docs: rebuild scope %s: document %q: %w", scope, d.ID, err)
		}
		batch = append(batch, d)
		if len(batch) == x.opts.BatchSize {
			if err := flush(); err != nil {
				discard()
				return RebuildStats{}, err
			}
		}
	}
	if err := flush(); err != nil {
		discard()
		return RebuildStats{}, err
	}
	if err := ctx.Err(); err != nil {
		discard()
		return RebuildStats{}, err
	}
	n, err := fresh.DocCount()
	if err != nil {
		discard()
		return RebuildStats{}, err
	}
	if err := x.swap(scope, fresh, dir); err != nil {
		return RebuildStats{}, err
	}
	return RebuildStats{Documents: n, Took: time.Since(start)}, nil
}

// swap installs fresh (built in dir, "" in memory) as the scope's index.
func (x *Index) swap(scope kb.Scope, fresh bleve.Index, dir string) error {
	discard := func() {
		_ = fresh.Close()
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
	}
	s, err := x.shard(scope, true)
	if err != nil {
		discard()
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.idx == nil {
		discard()
		return ErrClosed
	}
	old := s.idx
	if dir == "" {
		s.idx = fresh
		_ = old.Close() // a memory index has nothing to flush
		return nil
	}
	// On disk: both indexes must be closed to move their directories, and
	// the fresh one reopened at the live path.
	if err := fresh.Close(); err != nil {
		_ = os.RemoveAll(dir)
		return fmt.Errorf("docs: rebuild scope %s: %w", scope, err) // the old index stays in service
	}
	var closeErr error
	if err := old.Close(); err != nil {
		closeErr = fmt.Errorf("docs: rebuild scope %s: close the old index: %w", scope, err)
	}
	live := s.dir
	if err := os.Rename(live, live+".old"); err != nil {
		_ = os.RemoveAll(dir)
		return x.reopen(s, scope, errors.Join(closeErr, fmt.Errorf("docs: rebuild scope %s: %w", scope, err)))
	}
	if err := os.Rename(dir, live); err != nil {
		_ = os.Rename(live+".old", live)
		_ = os.RemoveAll(dir)
		return x.reopen(s, scope, errors.Join(closeErr, fmt.Errorf("docs: rebuild scope %s: %w", scope, err)))
	}
	_ = os.RemoveAll(live + ".old")
	return x.reopen(s, scope, closeErr)
}

// reopen opens the shard's live directory again after a swap; cause is
// returned (joined with any open error).
func (x *Index) reopen(s *shard, scope kb.Scope, cause error) error {
	idx, err := bleve.Open(s.dir)
	if err != nil {
		s.idx = nil
		x.mu.Lock()
		delete(x.shards, scope)
		x.mu.Unlock()
		return errors.Join(cause, fmt.Errorf("docs: reopen index of scope %s: %w", scope, err))
	}
	s.idx = idx
	return cause
}

// Drop deletes every document of scope and its index (on disk, its
// directory), for a tenant or ontology that is gone. Dropping a scope
// without documents is not an error.
func (x *Index) Drop(ctx context.Context, scope kb.Scope) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return ErrClosed
	}
	s := x.shards[scope]
	x.mu.Unlock()
	// Close first (waiting for calls in progress; calls arriving meanwhile
	// get ErrClosed), then forget the shard and delete its files under
	// x.mu, so no call can open the directory while it goes. A shard
	// opened meanwhile by another call is closed in turn.
	var err error
	for {
		if s != nil {
			s.mu.Lock()
			if s.idx != nil {
				err = errors.Join(err, s.idx.Close())
				s.idx = nil
			}
			s.mu.Unlock()
		}
		x.mu.Lock()
		if cur := x.shards[scope]; cur != nil && cur != s {
			s = cur
			x.mu.Unlock()
			continue
		}
		delete(x.shards, scope)
		if x.opts.Dir != "" {
			dir := x.scopeDir(scope)
			err = errors.Join(err, os.RemoveAll(dir), os.RemoveAll(dir+".old"))
		}
		x.mu.Unlock()
		break
	}
	if err != nil {
		return fmt.Errorf("docs: drop scope %s: %w", scope, err)
	}
	return nil
}

// Stats describes the index of one scope.
type Stats struct {
	// Documents is the number of documents in the scope.
	Documents uint64 `json:"documents"`
	// DiskBytes is the size of the scope's index files (0 in memory).
	DiskBytes uint64 `json:"disk_bytes"`
	// MemoryBytes is Bleve's estimate of the memory an in-memory index
	// uses (0 on disk).
	MemoryBytes uint64 `json:"memory_bytes"`
}

// Stats returns the document count and index size of scope (zero for a
// scope that has no documents yet).
func (x *Index) Stats(ctx context.Context, scope kb.Scope) (Stats, error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	var st Stats
	err := x.read(scope, false, func(idx bleve.Index) error {
		n, err := idx.DocCount()
		if err != nil {
			return fmt.Errorf("docs: stats of scope %s: %w", scope, err)
		}
		st.Documents = n
		adv, err := idx.Advanced()
		if err != nil {
			return fmt.Errorf("docs: stats of scope %s: %w", scope, err)
		}
		// Scorch's memory estimate is only meaningful without the disk
		// persister, whose bookkeeping it subtracts.
		if m, ok := adv.(interface{ MemoryUsed() uint64 }); ok && x.opts.Dir == "" {
			st.MemoryBytes = m.MemoryUsed()
		}
		if sm, ok := adv.(interface{ StatsMap() map[string]any }); ok {
			if v, ok := sm.StatsMap()["CurOnDiskBytes"].(uint64); ok {
				st.DiskBytes = v
			}
		}
		return nil
	})
	return st, err
}

// Close closes every scope's index. Calls made after Close return
// ErrClosed; Close waits for calls in progress.
func (x *Index) Close() error {
	x.mu.Lock()
	if x.closed {
		x.mu.Unlock()
		return nil
	}
	x.closed = true
	shards := x.shards
	x.shards = nil
	x.mu.Unlock()
	var errs []error
	for scope, s := range shards {
		s.mu.Lock()
		if s.idx != nil {
			if err := s.idx.Close(); err != nil {
				errs = append(errs, fmt.Errorf("docs: close index of scope %s: %w", scope, err))
			}
			s.idx = nil
		}
		s.mu.Unlock()
	}
	return errors.Join(errs...)
}

// Compact merges an on-disk scope index into a single segment, which
// makes searches after a bulk load faster; it returns when the merge is
// done. Bleve never merges the segments of an index in memory (each batch
// stays one segment), so for a memory index Compact does nothing: load a
// large memory index in few large batches (Options.BatchSize) instead.
func (x *Index) Compact(ctx context.Context, scope kb.Scope) error {
	if x.opts.Dir == "" {
		return scope.Validate()
	}
	return x.read(scope, false, func(idx bleve.Index) error {
		adv, err := idx.Advanced()
		if err != nil {
			return fmt.Errorf("docs: compact scope %s: %w", scope, err)
		}
		s, ok := adv.(*scorch.Scorch)
		if !ok {
			return fmt.Errorf("docs: compact scope %s: index is %T, not scorch", scope, adv)
		}
		opts := mergeplan.SingleSegmentMergePlanOptions
		if err := s.ForceMerge(ctx, &opts); err != nil {
			return fmt.Errorf("docs: compact scope %s: %w", scope, err)
		}
		return ctx.Err()
	})
}
