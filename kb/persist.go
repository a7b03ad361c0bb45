package kb

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/index/scorch"

	"github.com/bichat-go/bichat/domain"
)

// catalogFile is the on-disk form of a MemoryCatalog (catalog.json).
type catalogFile struct {
	Version int         `json:"version"`
	Scopes  []scopeFile `json:"scopes"`
}

type scopeFile struct {
	Scope Scope `json:"scope"`
	// Index is the scope's Bleve index directory, relative to the
	// catalog directory.
	Index    string        `json:"index"`
	Datasets []datasetFile `json:"datasets"`
}

type datasetFile struct {
	Dataset domain.Dataset `json:"dataset"`
	Vector  []float32      `json:"vector,omitempty"`
}

const catalogFileName = "catalog.json"

// scopeDir is a scope's index directory name: a hash, so any tenant id is
// a safe path.
func scopeDir(s Scope) string {
	h := sha256.Sum256([]byte(s.TenantID + "\x00" + s.Ontology))
	return filepath.Join("indexes", hex.EncodeToString(h[:12]))
}

// Save writes the catalog to dir: catalog.json (definitions and vectors)
// and one Bleve index per scope under dir/indexes. Scopes whose index
// already lives in dir (a catalog loaded from dir) keep it; others get a
// fresh one. catalog.json is replaced atomically.
func (c *MemoryCatalog) Save(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("kb: save catalog: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return fmt.Errorf("kb: save catalog: %w", err)
	}
	c.mu.RLock()
	if c.closed {
		c.mu.RUnlock()
		return errClosed
	}
	scopes := make(map[Scope]*scopeState, len(c.scopes))
	for k, v := range c.scopes {
		scopes[k] = v
	}
	sameDir := c.diskRoot == abs
	c.mu.RUnlock()

	file := catalogFile{Version: 1}
	for scope, s := range scopes {
		s.wmu.Lock()
		sf, err := s.save(abs, scope, sameDir)
		s.wmu.Unlock()
		if err != nil {
			return fmt.Errorf("kb: save scope %s: %w", scope, err)
		}
		file.Scopes = append(file.Scopes, sf)
	}
	sortScopes(file.Scopes)
	raw, err := json.Marshal(file)
	if err != nil {
		return fmt.Errorf("kb: save catalog: %w", err)
	}
	tmp, err := os.CreateTemp(abs, ".catalog-*.json")
	if err != nil {
		return fmt.Errorf("kb: save catalog: %w", err)
	}
	_, werr := tmp.Write(raw)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("kb: save catalog: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(abs, catalogFileName)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("kb: save catalog: %w", err)
	}
	return nil
}

func (s *scopeState) save(root string, scope Scope, sameDir bool) (scopeFile, error) {
	rel := scopeDir(scope)
	sf := scopeFile{Scope: scope, Index: rel}
	s.mu.RLock()
	for _, n := range s.names {
		e := s.entries[n]
		sf.Datasets = append(sf.Datasets, datasetFile{Dataset: e.ds, Vector: e.vec})
	}
	vocab := make(map[string]bool, len(s.vocab))
	for w := range s.vocab {
		vocab[w] = true
	}
	s.mu.RUnlock()
	if sameDir && s.onDisk {
		return sf, nil // the live index is the saved one
	}
	path := filepath.Join(root, rel)
	if err := os.RemoveAll(path); err != nil {
		return sf, err
	}
	m, err := newIndexMapping()
	if err != nil {
		return sf, err
	}
	idx, err := bleve.NewUsing(path, m, scorch.Name, scorch.Name, nil)
	if err != nil {
		return sf, err
	}
	batch := idx.NewBatch()
	for _, d := range sf.Datasets {
		if err := batch.Index(d.Dataset.Name, indexDoc(d.Dataset, vocab)); err != nil {
			_ = idx.Close()
			return sf, err
		}
	}
	if err := idx.Batch(batch); err != nil {
		_ = idx.Close()
		return sf, err
	}
	return sf, idx.Close()
}

// LoadCatalog opens a catalog saved with Save. The saved Bleve indexes are
// opened in place (no re-indexing), so later changes to those scopes are
// written to dir's indexes as they happen; call Save(dir) to record the
// definitions too. Stored vectors are kept when opts' embedder has the
// same dimensions; a CorpusFitter embedder is refitted and every dataset
// re-embedded; anything else is embedded afresh (see Backfill). An index
// that is missing or does not match the definitions is rebuilt in memory.
func LoadCatalog(ctx context.Context, dir string, opts CatalogOptions) (*MemoryCatalog, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("kb: load catalog: %w", err)
	}
	raw, err := os.ReadFile(filepath.Join(abs, catalogFileName))
	if err != nil {
		return nil, fmt.Errorf("kb: load catalog: %w", err)
	}
	var file catalogFile
	if err := json.Unmarshal(raw, &file); err != nil {
		return nil, fmt.Errorf("kb: load catalog %s: %w", catalogFileName, err)
	}
	if file.Version != 1 {
		return nil, fmt.Errorf("kb: load catalog: unsupported version %d", file.Version)
	}
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("kb: load catalog: %w", err)
	}
	c := NewMemoryCatalog(opts)
	c.diskRoot = abs
	for _, sf := range file.Scopes {
		if err := c.loadScope(ctx, abs, sf); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("kb: load scope %s: %w", sf.Scope, err)
		}
	}
	return c, nil
}

func (c *MemoryCatalog) loadScope(ctx context.Context, root string, sf scopeFile) error {
	if err := sf.Scope.Validate(); err != nil {
		return err
	}
	ds := make([]domain.Dataset, len(sf.Datasets))
	for i, d := range sf.Datasets {
		ds[i] = d.Dataset
	}
	if err := validateDatasets(ds); err != nil {
		return err
	}
	s := &scopeState{entries: map[string]*entry{}, rels: map[string][]domain.Relationship{}, vocab: map[string]bool{}}
	for _, d := range ds {
		addVocab(s.vocab, d)
	}
	idx, err := bleve.Open(filepath.Join(root, sf.Index))
	if err == nil {
		if n, cerr := idx.DocCount(); cerr != nil || n != uint64(len(ds)) {
			_ = idx.Close()
			idx, err = nil, fmt.Errorf("index holds %d documents, catalog %d", n, len(ds))
		}
	}
	if err == nil {
		s.index, s.onDisk = idx, true
	} else {
		// Rebuild from the definitions.
		if s.index, err = newMemIndex(); err != nil {
			return err
		}
		batch := s.index.NewBatch()
		for _, d := range ds {
			if err := batch.Index(d.Name, indexDoc(d, s.vocab)); err != nil {
				return err
			}
		}
		if err := s.index.Batch(batch); err != nil {
			return err
		}
	}
	_, fitter := c.embedder.(CorpusFitter)
	for i, d := range ds {
		y := d.YAML()
		e := &entry{ds: cloneDataset(d), yaml: y, hash: definitionHash(d, y), nameTerms: nameTerms(d.Name), terms: definitionTerms(d)}
		if v := sf.Datasets[i].Vector; c.embedder != nil && !fitter && len(v) == c.embedder.Dimensions() {
			e.vec = v
		}
		s.entries[d.Name] = e
		s.names = insertSorted(s.names, d.Name)
		s.linkLocked(e)
	}
	c.mu.Lock()
	c.scopes[sf.Scope] = s
	c.mu.Unlock()
	s.wmu.Lock()
	defer s.wmu.Unlock()
	c.embedScope(ctx, sf.Scope, s, len(ds))
	return nil
}

func sortScopes(s []scopeFile) {
	sort.Slice(s, func(i, j int) bool { return s[i].Scope.String() < s[j].Scope.String() })
}
