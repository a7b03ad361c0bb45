package neo4j

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/kb"
)

// Record is one result row, keyed by the RETURN aliases.
type Record map[string]any

// Tx runs Cypher inside a transaction and returns every record.
type Tx interface {
	Run(ctx context.Context, cypher string, params map[string]any) ([]Record, error)
}

// Session opens managed transactions: ExecuteRead runs work in a read
// transaction, ExecuteWrite in a write transaction (the driver retries
// transient failures).
type Session interface {
	ExecuteRead(ctx context.Context, work func(Tx) (any, error)) (any, error)
	ExecuteWrite(ctx context.Context, work func(Tx) (any, error)) (any, error)
	Close(ctx context.Context) error
}

// Sessions opens sessions. FromDriver adapts a neo4j.DriverWithContext;
// tests supply a fake.
type Sessions interface {
	NewSession(ctx context.Context) Session
}

// Options configures New.
type Options struct {
	// Embedder embeds definitions and questions; required for the vector
	// side (nil: full-text only). It is used as given: fit a
	// kb.HashEmbedder on your definitions first (HashEmbedder.Fit) if
	// you want IDF weights.
	Embedder kb.Embedder
	// Mode is the default search mode.
	Mode kb.SearchMode
	// Bus receives kb.EmbeddingFailed events.
	Bus *hooks.Bus
	// RRFConstant for the fusion; default kb.DefaultRRFConstant.
	RRFConstant float64
	// Candidates per side before fusion; default kb.DefaultCandidates
	// (50). A search for k hits
	// ranks max(Candidates, k), so a search for fewer hits returns a
	// prefix of one for more, up to Candidates.
	Candidates int
	// MaxOversample caps the vector and full-text index queries, which
	// cover all scopes and are filtered afterwards: each asks for
	// candidates×4, at most MaxOversample (default 1000).
	MaxOversample int
}

// Catalog is kb.Catalog on Neo4j.
type Catalog struct {
	db   Sessions
	opts Options

	schemaOnce sync.Mutex
	schemaDone bool
}

var _ kb.Catalog = (*Catalog)(nil)

// New returns a Catalog over db. The indexes are created on first use
// (EnsureSchema).
func New(db Sessions, opts Options) *Catalog {
	if opts.RRFConstant <= 0 {
		opts.RRFConstant = kb.DefaultRRFConstant
	}
	if opts.MaxOversample <= 0 {
		opts.MaxOversample = 1000
	}
	return &Catalog{db: db, opts: opts}
}

// Cypher statements. Every one is a constant with parameters: no value
// is ever formatted into Cypher.
const (
	cypherConstraint = "CREATE CONSTRAINT dataset_key IF NOT EXISTS FOR (d:Dataset) REQUIRE (d.tenant, d.ontology, d.name) IS UNIQUE"
	cypherVectorIdx  = "CREATE VECTOR INDEX dataset_embedding IF NOT EXISTS FOR (d:Dataset) ON (d.embedding) " +
		"OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}"
	cypherFulltextIdx = "CREATE FULLTEXT INDEX dataset_text IF NOT EXISTS FOR (d:Dataset) ON EACH [d.search_name, d.search_text]"

	cypherHashes = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WHERE d.name IN $names " +
		"RETURN d.name AS name, d.hash AS hash, d.embedding IS NOT NULL AS embedded"
	cypherUpsert = "UNWIND $rows AS row " +
		"MERGE (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) " +
		"SET d.source = row.source, d.kind = row.kind, d.description = row.description, d.yaml = row.yaml, " +
		"d.definition = row.definition, d.search_name = row.search_name, d.search_text = row.search_text, " +
		"d.hash = row.hash, d.join_targets = row.join_targets, " +
		"d.embedding = CASE WHEN row.keep_embedding THEN d.embedding ELSE row.embedding END"
	cypherReplaceFields = "UNWIND $rows AS row " +
		"MATCH (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) " +
		"OPTIONAL MATCH (d)-[:HAS_FIELD]->(old:Field) DETACH DELETE old " +
		"WITH DISTINCT d, row UNWIND row.fields AS f " +
		"CREATE (d)-[:HAS_FIELD]->(:Field {tenant: $tenant, ontology: $ontology, dataset: row.name, name: f.name, " +
		"type: f.type, description: f.description, primary_key: f.primary_key, nullable: f.nullable, position: f.position})"
	cypherUnlink   = "MATCH (a:Dataset {tenant: $tenant, ontology: $ontology})-[j:JOINS]->() WHERE a.name IN $names DELETE j"
	cypherIncoming = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"WHERE any(t IN d.join_targets WHERE t IN $names) RETURN d.definition AS definition"
	cypherLink = "UNWIND $links AS l " +
		"MATCH (a:Dataset {tenant: $tenant, ontology: $ontology, name: l.from}) " +
		"MATCH (b:Dataset {tenant: $tenant, ontology: $ontology, name: l.to}) " +
		"MERGE (a)-[j:JOINS {key: l.key}]->(b) " +
		"SET j.from_columns = l.from_columns, j.to_columns = l.to_columns, j.description = l.description"
	cypherDelete = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WHERE d.name IN $names " +
		"OPTIONAL MATCH (d)-[:HAS_FIELD]->(f:Field) DETACH DELETE f, d"
	cypherDatasets = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WHERE d.name IN $names " +
		"RETURN d.name AS name, d.definition AS definition"
	cypherList = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"RETURN d.name AS name, d.definition AS definition ORDER BY d.name LIMIT $limit"
	cypherRelationships = "MATCH (a:Dataset {tenant: $tenant, ontology: $ontology})-[j:JOINS]->(b:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"WHERE a.name IN $names OR b.name IN $names " +
		"RETURN a.name AS from, j.from_columns AS from_columns, b.name AS to, j.to_columns AS to_columns, j.description AS description"
	cypherVectorSearch = "CALL db.index.vector.queryNodes('dataset_embedding', $oversample, $embedding) YIELD node, score " +
		"WHERE node.tenant = $tenant AND node.ontology = $ontology " +
		"RETURN node.name AS name, score ORDER BY score DESC, name LIMIT $limit"
	cypherFulltextSearch = "CALL db.index.fulltext.queryNodes('dataset_text', $query, {limit: $oversample}) YIELD node, score " +
		"WHERE node.tenant = $tenant AND node.ontology = $ontology " +
		"RETURN node.name AS name, score ORDER BY score DESC, name LIMIT $limit"
	cypherMissingEmbeddings = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"WHERE d.embedding IS NULL OR size(d.embedding) <> $dimensions RETURN d.name AS name, d.definition AS definition"
	cypherSetEmbeddings = "UNWIND $rows AS row " +
		"MATCH (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) WHERE d.hash = row.hash " +
		"SET d.embedding = row.embedding"
)

// EnsureSchema creates the uniqueness constraint, the full-text index and
// (with an embedder) the vector index, idempotently. The catalog calls it
// before its first write or search.
func (c *Catalog) EnsureSchema(ctx context.Context) error {
	c.schemaOnce.Lock()
	defer c.schemaOnce.Unlock()
	if c.schemaDone {
		return nil
	}
	stmts := []struct {
		cypher string
		params map[string]any
	}{{cypherConstraint, nil}, {cypherFulltextIdx, nil}}
	if c.opts.Embedder != nil {
		stmts = append(stmts, struct {
			cypher string
			params map[string]any
		}{cypherVectorIdx, map[string]any{"dimensions": c.opts.Embedder.Dimensions()}})
	}
	// Schema commands cannot share a transaction with each other.
	for _, st := range stmts {
		if _, err := c.write(ctx, func(tx Tx) (any, error) { return tx.Run(ctx, st.cypher, st.params) }); err != nil {
			return fmt.Errorf("kb/neo4j: create schema: %w", err)
		}
	}
	c.schemaDone = true
	return nil
}

func (c *Catalog) read(ctx context.Context, work func(Tx) (any, error)) (any, error) {
	s := c.db.NewSession(ctx)
	defer s.Close(ctx)
	return s.ExecuteRead(ctx, work)
}

func (c *Catalog) write(ctx context.Context, work func(Tx) (any, error)) (any, error) {
	s := c.db.NewSession(ctx)
	defer s.Close(ctx)
	return s.ExecuteWrite(ctx, work)
}

// readRecords runs one read query.
func (c *Catalog) readRecords(ctx context.Context, cypher string, params map[string]any) ([]Record, error) {
	out, err := c.read(ctx, func(tx Tx) (any, error) { return tx.Run(ctx, cypher, params) })
	if err != nil {
		return nil, err
	}
	recs, _ := out.([]Record)
	return recs, nil
}

func scoped(s kb.Scope, kv ...any) map[string]any {
	p := map[string]any{"tenant": s.TenantID, "ontology": s.Ontology}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}

func hashOf(yaml string) string {
	h := sha256.Sum256([]byte(yaml))
	return hex.EncodeToString(h[:])
}

// searchText is the pre-analysed text the full-text index sees: the
// catalog's own Terms (identifiers split, stemmed), so Lucene's analyzer
// only has to split on spaces.
func searchText(s string) string { return strings.Join(kb.Terms(s), " ") }

// Put implements kb.Catalog.
func (c *Catalog) Put(ctx context.Context, scope kb.Scope, datasets ...domain.Dataset) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	for i, d := range datasets {
		if err := d.Validate(); err != nil {
			return fmt.Errorf("kb/neo4j: put dataset %d (%q): %w", i, d.Name, err)
		}
		for j := range i {
			if datasets[j].Name == d.Name {
				return domain.Invalid(fmt.Sprintf("datasets[%d].name", i), fmt.Sprintf("duplicate dataset %q", d.Name))
			}
		}
	}
	if len(datasets) == 0 {
		return nil
	}
	if err := c.EnsureSchema(ctx); err != nil {
		return err
	}
	names := make([]string, len(datasets))
	for i, d := range datasets {
		names[i] = d.Name
	}
	recs, err := c.readRecords(ctx, cypherHashes, scoped(scope, "names", names))
	if err != nil {
		return fmt.Errorf("kb/neo4j: put datasets: %w", err)
	}
	existing := map[string]bool{}
	for _, r := range recs {
		if emb, _ := r["embedded"].(bool); emb {
			h, _ := r["hash"].(string)
			existing[str(r["name"])+"\x00"+h] = true
		}
	}
	rows := make([]map[string]any, len(datasets))
	var todo []int
	for i, d := range datasets {
		y := d.YAML()
		def, err := json.Marshal(d)
		if err != nil {
			return fmt.Errorf("kb/neo4j: encode dataset %q: %w", d.Name, err)
		}
		var targets []string
		for _, r := range d.Relationships {
			targets = append(targets, r.To)
		}
		fields := make([]map[string]any, len(d.Fields))
		for j, f := range d.Fields {
			fields[j] = map[string]any{"name": f.Name, "type": f.Type, "description": f.Description, "primary_key": f.PrimaryKey, "nullable": f.Nullable, "position": j}
		}
		h := hashOf(y)
		keep := existing[d.Name+"\x00"+h]
		rows[i] = map[string]any{
			"name": d.Name, "source": d.Source, "kind": d.Kind, "description": d.Description, "yaml": y,
			"definition": string(def), "search_name": searchText(d.Name + " " + d.Source),
			"search_text": searchText(kb.EmbeddingText(d)), "hash": h, "join_targets": nonNil(targets),
			"fields": fields, "keep_embedding": keep, "embedding": nil,
		}
		if !keep {
			todo = append(todo, i)
		}
	}
	if c.opts.Embedder != nil && len(todo) > 0 {
		texts := make([]string, len(todo))
		for j, i := range todo {
			texts[j] = kb.EmbeddingText(datasets[i])
		}
		vecs, err := c.embed(ctx, texts)
		if err != nil {
			failed := make([]string, len(todo))
			for j, i := range todo {
				failed[j] = datasets[i].Name
			}
			c.publish(ctx, scope, &kb.EmbeddingFailed{Scope: scope, Datasets: failed, Error: err.Error()})
		} else {
			for j, i := range todo {
				rows[i]["embedding"] = vecs[j]
			}
		}
	}
	// Incoming relationships from datasets already stored.
	inRecs, err := c.readRecords(ctx, cypherIncoming, scoped(scope, "names", names))
	if err != nil {
		return fmt.Errorf("kb/neo4j: put datasets: %w", err)
	}
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	var links []map[string]any
	for _, d := range datasets {
		for _, r := range d.Relationships {
			links = append(links, link(d.Name, r))
		}
	}
	for _, r := range inRecs {
		d, err := decode(r["definition"])
		if err != nil || want[d.Name] {
			continue
		}
		for _, rel := range d.Relationships {
			if want[rel.To] {
				links = append(links, link(d.Name, rel))
			}
		}
	}
	_, err = c.write(ctx, func(tx Tx) (any, error) {
		p := scoped(scope, "rows", rows)
		if _, err := tx.Run(ctx, cypherUpsert, p); err != nil {
			return nil, err
		}
		if _, err := tx.Run(ctx, cypherReplaceFields, p); err != nil {
			return nil, err
		}
		if _, err := tx.Run(ctx, cypherUnlink, scoped(scope, "names", names)); err != nil {
			return nil, err
		}
		if len(links) > 0 {
			if _, err := tx.Run(ctx, cypherLink, scoped(scope, "links", links)); err != nil {
				return nil, err
			}
		}
		return nil, nil
	})
	if err != nil {
		return fmt.Errorf("kb/neo4j: put datasets in scope %s: %w", scope, err)
	}
	return nil
}

func link(owner string, r domain.Relationship) map[string]any {
	if r.From == "" {
		r.From = owner
	}
	return map[string]any{
		"from": r.From, "to": r.To, "from_columns": nonNil(r.FromColumns), "to_columns": nonNil(r.ToColumns),
		"description": r.Description, "key": strings.Join(r.FromColumns, ",") + "=" + strings.Join(r.ToColumns, ","),
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// embed returns L2-normalised vectors as []float64 (Neo4j's LIST<FLOAT>).
func (c *Catalog) embed(ctx context.Context, texts []string) ([][]float64, error) {
	vs, err := c.opts.Embedder.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("embedder returned %d vectors for %d texts", len(vs), len(texts))
	}
	out := make([][]float64, len(vs))
	for i, v := range vs {
		if len(v) != c.opts.Embedder.Dimensions() {
			return nil, fmt.Errorf("embedder returned %d dimensions, want %d", len(v), c.opts.Embedder.Dimensions())
		}
		var n float64
		for _, x := range v {
			n += float64(x) * float64(x)
		}
		f := make([]float64, len(v))
		for j, x := range v {
			if n > 0 {
				f[j] = float64(x) / math.Sqrt(n)
			}
		}
		out[i] = f
	}
	return out, nil
}

func (c *Catalog) publish(ctx context.Context, scope kb.Scope, e *kb.EmbeddingFailed) {
	if c.opts.Bus == nil {
		return
	}
	e.Meta.Time = time.Now()
	e.Meta.TenantID = scope.TenantID
	c.opts.Bus.Publish(ctx, e)
}

// Delete implements kb.Catalog.
func (c *Catalog) Delete(ctx context.Context, scope kb.Scope, names ...string) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if len(names) == 0 {
		return nil
	}
	_, err := c.write(ctx, func(tx Tx) (any, error) { return tx.Run(ctx, cypherDelete, scoped(scope, "names", names)) })
	if err != nil {
		return fmt.Errorf("kb/neo4j: delete datasets in scope %s: %w", scope, err)
	}
	return nil
}

// Datasets implements kb.Catalog.
func (c *Catalog) Datasets(ctx context.Context, scope kb.Scope, names ...string) ([]domain.Dataset, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	recs, err := c.readRecords(ctx, cypherDatasets, scoped(scope, "names", names))
	if err != nil {
		return nil, fmt.Errorf("kb/neo4j: datasets: %w", err)
	}
	by := map[string]domain.Dataset{}
	for _, r := range recs {
		d, err := decode(r["definition"])
		if err != nil {
			return nil, fmt.Errorf("kb/neo4j: datasets: %w", err)
		}
		by[d.Name] = d
	}
	out := make([]domain.Dataset, 0, len(names))
	for _, n := range names {
		if d, ok := by[n]; ok {
			out = append(out, d)
		}
	}
	return out, nil
}

// List implements kb.Catalog.
func (c *Catalog) List(ctx context.Context, scope kb.Scope) ([]domain.Dataset, error) {
	return c.list(ctx, scope, 1<<31-1)
}

func (c *Catalog) list(ctx context.Context, scope kb.Scope, limit int) ([]domain.Dataset, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	recs, err := c.readRecords(ctx, cypherList, scoped(scope, "limit", limit))
	if err != nil {
		return nil, fmt.Errorf("kb/neo4j: list: %w", err)
	}
	out := make([]domain.Dataset, 0, len(recs))
	for _, r := range recs {
		d, err := decode(r["definition"])
		if err != nil {
			return nil, fmt.Errorf("kb/neo4j: list: %w", err)
		}
		out = append(out, d)
	}
	return out, nil
}

// Relationships implements kb.Catalog over the JOINS relationships.
func (c *Catalog) Relationships(ctx context.Context, scope kb.Scope, names ...string) ([]domain.Relationship, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, nil
	}
	recs, err := c.readRecords(ctx, cypherRelationships, scoped(scope, "names", names))
	if err != nil {
		return nil, fmt.Errorf("kb/neo4j: relationships: %w", err)
	}
	seen := map[string]bool{}
	var out []domain.Relationship
	for _, r := range recs {
		rel := domain.Relationship{From: str(r["from"]), To: str(r["to"]), FromColumns: strs(r["from_columns"]), ToColumns: strs(r["to_columns"]), Description: str(r["description"])}
		k := rel.From + "\x00" + strings.Join(rel.FromColumns, ",") + "\x00" + rel.To + "\x00" + strings.Join(rel.ToColumns, ",")
		if !seen[k] {
			seen[k] = true
			out = append(out, rel)
		}
	}
	kb.SortRelationships(out)
	return out, nil
}

// Search implements kb.Catalog with the default mode.
func (c *Catalog) Search(ctx context.Context, scope kb.Scope, q string, k int) ([]kb.DatasetHit, error) {
	return c.SearchWith(ctx, scope, q, kb.SearchOptions{K: k, Mode: c.opts.Mode})
}

// SearchWith searches with per-call options: the full-text index (over
// the catalog's own terms) and the vector index, each oversampled
// (candidates×4, capped) and filtered to the scope, fused by RRF.
func (c *Catalog) SearchWith(ctx context.Context, scope kb.Scope, q string, opts kb.SearchOptions) ([]kb.DatasetHit, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	k := opts.K
	if k <= 0 {
		k = 10
	}
	cands := c.opts.Candidates
	if cands <= 0 {
		cands = kb.DefaultCandidates
	}
	cands = max(cands, k)
	over := min(cands*4, c.opts.MaxOversample)
	var text, vec []kb.Ranked
	terms := kb.Terms(q)
	if opts.Mode != kb.VectorOnly && len(terms) > 0 {
		recs, err := c.readRecords(ctx, cypherFulltextSearch, scoped(scope, "query", luceneQuery(terms), "oversample", over, "limit", cands))
		if err != nil {
			return nil, fmt.Errorf("kb/neo4j: search: %w", err)
		}
		text = ranked(recs)
	}
	if opts.Mode != kb.BM25Only && c.opts.Embedder != nil && strings.TrimSpace(q) != "" {
		vs, err := c.embed(ctx, []string{q})
		if err != nil {
			c.publish(ctx, scope, &kb.EmbeddingFailed{Scope: scope, Query: true, Error: err.Error()})
		} else {
			recs, err := c.readRecords(ctx, cypherVectorSearch, scoped(scope, "embedding", vs[0], "oversample", over, "limit", cands))
			if err != nil {
				return nil, fmt.Errorf("kb/neo4j: search: %w", err)
			}
			vec = ranked(recs)
		}
	}
	fused := kb.FuseRRF(c.opts.RRFConstant, []float64{1, 1}, text, vec)
	if len(fused) > k {
		fused = fused[:k]
	}
	if len(fused) == 0 {
		ds, err := c.list(ctx, scope, k)
		if err != nil {
			return nil, err
		}
		hits := make([]kb.DatasetHit, len(ds))
		for i, d := range ds {
			hits[i] = kb.DatasetHit{Dataset: d, YAML: d.YAML(), Fallback: true}
		}
		return hits, nil
	}
	names := make([]string, len(fused))
	for i, f := range fused {
		names[i] = f.Name
	}
	ds, err := c.Datasets(ctx, scope, names...)
	if err != nil {
		return nil, err
	}
	by := map[string]domain.Dataset{}
	for _, d := range ds {
		by[d.Name] = d
	}
	hits := make([]kb.DatasetHit, 0, len(fused))
	for _, f := range fused {
		if d, ok := by[f.Name]; ok {
			hits = append(hits, kb.DatasetHit{Dataset: d, YAML: d.YAML(), Score: f.Score, BM25: f.Scores[0], Vector: f.Scores[1]})
		}
	}
	return hits, nil
}

// luceneQuery ORs the terms; Terms yields letters and digits only, so
// nothing needs escaping.
func luceneQuery(terms []string) string {
	seen := map[string]bool{}
	var out []string
	for _, t := range terms {
		if !seen[t] && !kb.IsStopWord(t) {
			seen[t] = true
			out = append(out, t)
		}
	}
	if len(out) == 0 {
		out = terms[:1]
	}
	return strings.Join(out, " OR ")
}

func ranked(recs []Record) []kb.Ranked {
	out := make([]kb.Ranked, 0, len(recs))
	for _, r := range recs {
		out = append(out, kb.Ranked{Name: str(r["name"]), Score: num(r["score"])})
	}
	// Equal scores are ordered by name: the indexes return them in
	// storage order, which differs between two loads of the same data.
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Backfill implements kb.Catalog: embeds every dataset of the scope
// without a vector of the embedder's dimensions.
func (c *Catalog) Backfill(ctx context.Context, scope kb.Scope) (int, error) {
	if err := scope.Validate(); err != nil {
		return 0, err
	}
	if c.opts.Embedder == nil {
		return 0, kb.ErrNoEmbedder
	}
	if err := c.EnsureSchema(ctx); err != nil {
		return 0, err
	}
	recs, err := c.readRecords(ctx, cypherMissingEmbeddings, scoped(scope, "dimensions", c.opts.Embedder.Dimensions()))
	if err != nil {
		return 0, fmt.Errorf("kb/neo4j: backfill: %w", err)
	}
	if len(recs) == 0 {
		return 0, nil
	}
	texts := make([]string, len(recs))
	rows := make([]map[string]any, len(recs))
	for i, r := range recs {
		d, err := decode(r["definition"])
		if err != nil {
			return 0, fmt.Errorf("kb/neo4j: backfill: %w", err)
		}
		texts[i] = kb.EmbeddingText(d)
		rows[i] = map[string]any{"name": d.Name, "hash": hashOf(d.YAML())}
	}
	vecs, err := c.embed(ctx, texts)
	if err != nil {
		return 0, fmt.Errorf("kb/neo4j: backfill scope %s: %w", scope, err)
	}
	for i := range rows {
		rows[i]["embedding"] = vecs[i]
	}
	if _, err := c.write(ctx, func(tx Tx) (any, error) { return tx.Run(ctx, cypherSetEmbeddings, scoped(scope, "rows", rows)) }); err != nil {
		return 0, fmt.Errorf("kb/neo4j: backfill scope %s: %w", scope, err)
	}
	return len(rows), nil
}

func decode(v any) (domain.Dataset, error) {
	s, ok := v.(string)
	if !ok {
		return domain.Dataset{}, errors.New("dataset node without a definition")
	}
	var d domain.Dataset
	if err := json.Unmarshal([]byte(s), &d); err != nil {
		return domain.Dataset{}, fmt.Errorf("decode dataset definition: %w", err)
	}
	return d, nil
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func strs(v any) []string {
	switch x := v.(type) {
	case []string:
		return append([]string(nil), x...)
	case []any:
		out := make([]string, 0, len(x))
		for _, e := range x {
			out = append(out, str(e))
		}
		return out
	}
	return nil
}

func num(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case float32:
		return float64(x)
	case int64:
		return float64(x)
	case int:
		return float64(x)
	}
	return 0
}
