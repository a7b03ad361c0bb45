package neo4j

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
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
	// SynonymBoost is the full-text boost of the synonyms (the dataset's
	// and its fields', domain.Dataset.Synonyms and domain.Field.Synonyms);
	// default kb.DefaultSynonymBoost, negative leaves them out of the
	// search. The name's boost is 3, the text's (description, field
	// names and descriptions) 1, as in kb.MemoryCatalog.
	SynonymBoost float64
	// LocationBoost is the full-text boost of the database and schema a
	// dataset lives in (domain.Dataset.Database and Schema); default
	// kb.DefaultLocationBoost, negative leaves them out of the search.
	LocationBoost float64
	// ValueWeight weighs the value ranking in hybrid fusion: the datasets
	// holding a column value the question mentions (domain.Field.Values,
	// see kb.FoldValue), reported on each hit as MatchedValues. Default
	// kb.DefaultValueWeight; negative switches the ranking off (matches
	// are still reported).
	ValueWeight float64
	// MaxValuesPerField bounds the value index: only the first
	// MaxValuesPerField of a field's Values become :Value nodes; default
	// kb.DefaultMaxValuesPerField. It applies when a dataset is Put:
	// after changing it, Put the datasets again. Long values (over 80
	// characters or 8 words), one-word values shorter than two
	// characters, without a letter or that are stop words, and every
	// value of a Sensitive field are never indexed.
	MaxValuesPerField int
	// Synonyms are the host's groups of interchangeable words ({"churn",
	// "attrition"}): a question word of a group also searches the
	// group's other words at ExpansionWeight, as do the groups of the
	// built-in kb.Thesaurus unless NoThesaurus is set. A group with fewer
	// than two words expands nothing (Validate reports it).
	Synonyms [][]string
	// NoThesaurus leaves kb.Thesaurus out (Synonyms still apply).
	NoThesaurus bool
	// ExpansionWeight is the share of a question word's boost its
	// synonyms search with; default kb.DefaultExpansionWeight, negative
	// switches expansion off.
	ExpansionWeight float64
	// Lexicon and LexiconWeight are kb.CatalogOptions' (a general
	// lexicon such as kb.LoadWordNet's, searched at LexiconWeight, default
	// kb.DefaultLexiconWeight; negative switches it off).
	Lexicon       kb.Lexicon
	LexiconWeight float64
}

// Validate reports a *domain.ValidationError for options the catalog
// cannot use: a synonym group with fewer than two words, or a negative
// MaxValuesPerField, with the same rules as kb.CatalogOptions.Validate.
func (o Options) Validate() error {
	return kb.CatalogOptions{Synonyms: o.Synonyms, MaxValuesPerField: o.MaxValuesPerField}.Validate()
}

// Catalog is kb.Catalog on Neo4j.
type Catalog struct {
	db   Sessions
	opts Options
	// exp expands question terms with their synonyms (nil: none).
	exp kb.Expander
	// lex expands them with the Lexicon's words (nil: none).
	lex kb.Expander

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
	if opts.SynonymBoost == 0 {
		opts.SynonymBoost = kb.DefaultSynonymBoost
	}
	if opts.LocationBoost == 0 {
		opts.LocationBoost = kb.DefaultLocationBoost
	}
	if opts.ValueWeight == 0 {
		opts.ValueWeight = kb.DefaultValueWeight
	}
	if opts.MaxValuesPerField <= 0 {
		opts.MaxValuesPerField = kb.DefaultMaxValuesPerField
	}
	if opts.ExpansionWeight == 0 {
		opts.ExpansionWeight = kb.DefaultExpansionWeight
	}
	c := &Catalog{db: db, opts: opts}
	if opts.ExpansionWeight > 0 {
		var groups [][]string
		if !opts.NoThesaurus {
			groups = kb.Thesaurus()
		}
		c.exp = kb.NewExpander(append(groups, opts.Synonyms...))
	}
	if c.opts.LexiconWeight == 0 {
		c.opts.LexiconWeight = kb.DefaultLexiconWeight
	}
	if c.opts.LexiconWeight > 0 && len(c.opts.Lexicon) > 0 {
		c.lex = c.opts.Lexicon.Expander()
	}
	return c
}

// Cypher statements. Every one is a constant with parameters: no value
// is ever formatted into Cypher.
const (
	cypherConstraint = "CREATE CONSTRAINT dataset_key IF NOT EXISTS FOR (d:Dataset) REQUIRE (d.tenant, d.ontology, d.name) IS UNIQUE"
	cypherVectorIdx  = "CREATE VECTOR INDEX dataset_embedding IF NOT EXISTS FOR (d:Dataset) ON (d.embedding) " +
		"OPTIONS {indexConfig: {`vector.dimensions`: $dimensions, `vector.similarity_function`: 'cosine'}}"
	cypherFulltextIdx = "CREATE FULLTEXT INDEX dataset_search IF NOT EXISTS FOR (d:Dataset) " +
		"ON EACH [d.search_name, d.search_text, d.search_synonyms, d.search_location]"
	cypherValueFirstIdx = "CREATE INDEX value_first IF NOT EXISTS FOR (v:Value) ON (v.tenant, v.ontology, v.first)"
	cypherValueKeyIdx   = "CREATE INDEX value_key IF NOT EXISTS FOR (v:Value) ON (v.tenant, v.ontology, v.key)"

	cypherHashes = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WHERE d.name IN $names " +
		"RETURN d.name AS name, d.hash AS hash, d.embedding IS NOT NULL AS embedded"
	cypherUpsert = "UNWIND $rows AS row " +
		"MERGE (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) " +
		"SET d.source = row.source, d.kind = row.kind, d.description = row.description, d.yaml = row.yaml, " +
		"d.definition = row.definition, d.search_name = row.search_name, d.search_text = row.search_text, " +
		"d.hash = row.hash, d.join_targets = row.join_targets, d.database = row.database, d.schema = row.schema, " +
		"d.synonyms = row.synonyms, d.search_synonyms = row.search_synonyms, d.search_location = row.search_location, " +
		"d.embedding = CASE WHEN row.keep_embedding THEN d.embedding ELSE row.embedding END"
	cypherReplaceFields = "UNWIND $rows AS row " +
		"MATCH (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) " +
		"OPTIONAL MATCH (d)-[:HAS_FIELD]->(old:Field) DETACH DELETE old " +
		"WITH DISTINCT d, row UNWIND row.fields AS f " +
		"CREATE (d)-[:HAS_FIELD]->(:Field {tenant: $tenant, ontology: $ontology, dataset: row.name, name: f.name, " +
		"type: f.type, description: f.description, primary_key: f.primary_key, nullable: f.nullable, position: f.position, " +
		"synonyms: f.synonyms, values: f.values, sensitive: f.sensitive})"
	cypherReplaceValues = "UNWIND $rows AS row " +
		"MATCH (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) " +
		"OPTIONAL MATCH (d)-[:HAS_VALUE]->(old:Value) DETACH DELETE old " +
		"WITH DISTINCT d, row UNWIND row.values AS v " +
		"CREATE (d)-[:HAS_VALUE]->(:Value {tenant: $tenant, ontology: $ontology, dataset: row.name, field: v.field, " +
		"value: v.value, key: v.key, first: v.first, position: v.position})"
	cypherUnlink   = "MATCH (a:Dataset {tenant: $tenant, ontology: $ontology})-[j:JOINS]->() WHERE a.name IN $names DELETE j"
	cypherIncoming = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"WHERE any(t IN d.join_targets WHERE t IN $names) RETURN d.definition AS definition"
	cypherLink = "UNWIND $links AS l " +
		"MATCH (a:Dataset {tenant: $tenant, ontology: $ontology, name: l.from}) " +
		"MATCH (b:Dataset {tenant: $tenant, ontology: $ontology, name: l.to}) " +
		"MERGE (a)-[j:JOINS {key: l.key}]->(b) " +
		"SET j.from_columns = l.from_columns, j.to_columns = l.to_columns, j.description = l.description, " +
		"j.cardinality = l.cardinality, j.inferred = l.inferred, j.confidence = l.confidence"
	cypherDelete = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WHERE d.name IN $names " +
		"OPTIONAL MATCH (d)-[:HAS_FIELD|HAS_VALUE]->(x) DETACH DELETE x, d"
	cypherDatasets = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WHERE d.name IN $names " +
		"RETURN d.name AS name, d.definition AS definition"
	cypherList = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"RETURN d.name AS name, d.definition AS definition ORDER BY d.name LIMIT $limit"
	cypherRelationships = "MATCH (a:Dataset {tenant: $tenant, ontology: $ontology})-[j:JOINS]->(b:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"WHERE a.name IN $names OR b.name IN $names " +
		"RETURN a.name AS from, j.from_columns AS from_columns, b.name AS to, j.to_columns AS to_columns, j.description AS description, " +
		"j.cardinality AS cardinality, j.inferred AS inferred, j.confidence AS confidence"
	cypherVectorSearch = "CALL db.index.vector.queryNodes('dataset_embedding', $oversample, $embedding) YIELD node, score " +
		"WHERE node.tenant = $tenant AND node.ontology = $ontology " +
		"RETURN node.name AS name, score ORDER BY score DESC, name LIMIT $limit"
	cypherFulltextSearch = "CALL db.index.fulltext.queryNodes('dataset_search', $query, {limit: $oversample}) YIELD node, score " +
		"WHERE node.tenant = $tenant AND node.ontology = $ontology " +
		"RETURN node.name AS name, score ORDER BY score DESC, name LIMIT $limit"
	cypherValueCandidates = "MATCH (v:Value {tenant: $tenant, ontology: $ontology}) WHERE v.first IN $words " +
		"RETURN v.dataset AS dataset, v.field AS field, v.value AS value, v.key AS key, v.position AS position " +
		"ORDER BY dataset, position"
	cypherValueHolding = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) WITH count(d) AS datasets " +
		"UNWIND $keys AS k OPTIONAL MATCH (v:Value {tenant: $tenant, ontology: $ontology, key: k}) " +
		"RETURN datasets, k AS key, count(DISTINCT v.dataset) AS holding"
	cypherMissingEmbeddings = "MATCH (d:Dataset {tenant: $tenant, ontology: $ontology}) " +
		"WHERE d.embedding IS NULL OR size(d.embedding) <> $dimensions RETURN d.name AS name, d.definition AS definition"
	cypherSetEmbeddings = "UNWIND $rows AS row " +
		"MATCH (d:Dataset {tenant: $tenant, ontology: $ontology, name: row.name}) WHERE d.hash = row.hash " +
		"SET d.embedding = row.embedding"
)

// EnsureSchema creates the uniqueness constraint, the full-text index,
// the two value-index lookups and (with an embedder) the vector index,
// idempotently. The catalog calls it
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
	}{{cypherConstraint, nil}, {cypherFulltextIdx, nil}, {cypherValueFirstIdx, nil}, {cypherValueKeyIdx, nil}}
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

// textOf is the text field of the full-text index, as in
// kb.MemoryCatalog: the description, then each field's name and
// description. Names, synonyms and location have fields of their own.
func textOf(d domain.Dataset) string {
	var b strings.Builder
	b.WriteString(d.Description)
	for _, f := range d.Fields {
		b.WriteString("\n" + f.Name + " " + f.Description)
	}
	return b.String()
}

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
	datasets = withoutSensitiveValues(datasets)
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
		var synonyms []string
		synonyms = append(synonyms, d.Synonyms...)
		for j, f := range d.Fields {
			fields[j] = map[string]any{"name": f.Name, "type": f.Type, "description": f.Description, "primary_key": f.PrimaryKey, "nullable": f.Nullable, "position": j,
				"synonyms": nonNil(f.Synonyms), "values": nonNil(f.Values), "sensitive": f.Sensitive}
			synonyms = append(synonyms, f.Synonyms...)
		}
		postings := kb.IndexedValues(d, c.opts.MaxValuesPerField)
		values := make([]map[string]any, len(postings))
		for j, p := range postings {
			values[j] = map[string]any{"field": p.Field, "value": p.Value, "key": p.Key, "first": strings.Fields(p.Key)[0], "position": j}
		}
		h := hashOf(y)
		keep := existing[d.Name+"\x00"+h]
		rows[i] = map[string]any{
			"name": d.Name, "source": d.Source, "kind": d.Kind, "description": d.Description, "yaml": y,
			"definition": string(def), "search_name": searchText(d.Name + " " + d.Source),
			"search_text": searchText(textOf(d)), "hash": h, "join_targets": nonNil(targets),
			"fields": fields, "keep_embedding": keep, "embedding": nil, "values": values,
			"database": d.Database, "schema": d.Schema, "synonyms": nonNil(d.Synonyms),
			"search_synonyms": searchText(strings.Join(synonyms, "\n")), "search_location": searchText(d.Database + " " + d.Schema),
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
		if _, err := tx.Run(ctx, cypherReplaceValues, p); err != nil {
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
		"cardinality": r.Cardinality, "inferred": r.Inferred, "confidence": r.Confidence,
	}
}

// withoutSensitiveValues returns datasets with the Values of every
// Sensitive field dropped (copies; the caller's slices are untouched):
// the catalog never stores them, in the definition, the YAML, the
// field nodes or the value index.
func withoutSensitiveValues(datasets []domain.Dataset) []domain.Dataset {
	out := make([]domain.Dataset, len(datasets))
	for i, d := range datasets {
		copied := false
		for j, f := range d.Fields {
			if f.Sensitive && f.Values != nil {
				if !copied {
					d.Fields = slices.Clone(d.Fields)
					copied = true
				}
				d.Fields[j].Values = nil
			}
		}
		out[i] = d
	}
	return out
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
		inferred, _ := r["inferred"].(bool)
		rel := domain.Relationship{From: str(r["from"]), To: str(r["to"]), FromColumns: strs(r["from_columns"]), ToColumns: strs(r["to_columns"]),
			Description: str(r["description"]), Cardinality: str(r["cardinality"]), Inferred: inferred, Confidence: num(r["confidence"])}
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

// SearchWith searches with per-call options, like
// kb.MemoryCatalog.SearchWith: sort requests are dropped from the
// question (kb.QuestionText); the full-text index (name, text, synonyms
// and location, each with its boost, the question's terms expanded with
// their synonyms unless opts.NoExpansion) and the vector index are each
// oversampled (candidates×4, capped) and filtered to the scope; in
// Hybrid mode the datasets holding a value the question names are a
// third ranking (unless opts.NoValues or a negative ValueWeight); the
// rankings are fused by RRF. Every hit reports its MatchedValues, in
// every mode.
func (c *Catalog) SearchWith(ctx context.Context, scope kb.Scope, q string, opts kb.SearchOptions) ([]kb.DatasetHit, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	k := opts.K
	if k <= 0 {
		k = 10
	}
	q = kb.QuestionText(q) // "ordered by" must not find the orders table
	cands := c.opts.Candidates
	if cands <= 0 {
		cands = kb.DefaultCandidates
	}
	cands = max(cands, k)
	over := min(cands*4, c.opts.MaxOversample)
	var text, vec []kb.Ranked
	terms := kb.Terms(q)
	if opts.Mode != kb.VectorOnly && len(terms) > 0 {
		exp, lex := c.exp, c.lex
		if opts.NoExpansion {
			exp, lex = nil, nil
		}
		recs, err := c.readRecords(ctx, cypherFulltextSearch, scoped(scope, "query", c.luceneQuery(terms, exp, lex), "oversample", over, "limit", cands))
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
	valueRank, matches, err := c.values(ctx, scope, q)
	if err != nil {
		return nil, fmt.Errorf("kb/neo4j: search: %w", err)
	}
	if opts.Mode != kb.Hybrid || opts.NoValues || c.opts.ValueWeight < 0 {
		valueRank = nil
	}
	fused := kb.FuseRRF(c.opts.RRFConstant, []float64{1, 1, c.opts.ValueWeight}, text, vec, valueRank)
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
			hits = append(hits, kb.DatasetHit{Dataset: d, YAML: d.YAML(), Score: f.Score, BM25: f.Scores[0], Vector: f.Scores[1],
				MatchedValues: matches[f.Name]})
		}
	}
	return hits, nil
}

// values looks the question's words up in the scope's value index: the
// :Value nodes whose first word the question uses, then, for the values
// the question mentions as a phrase, how many datasets hold each. It
// returns the datasets ranked by the values they hold and each dataset's
// matches.
func (c *Catalog) values(ctx context.Context, scope kb.Scope, q string) ([]kb.Ranked, map[string][]kb.ValueMatch, error) {
	words := kb.FoldValue(q)
	if len(words) == 0 {
		return nil, nil, nil
	}
	out, err := c.read(ctx, func(tx Tx) (any, error) {
		recs, err := tx.Run(ctx, cypherValueCandidates, scoped(scope, "words", slices.Compact(slices.Sorted(slices.Values(words)))))
		if err != nil || len(recs) == 0 {
			return nil, err
		}
		postings := make([]kb.ValuePosting, len(recs))
		for i, r := range recs {
			postings[i] = kb.ValuePosting{Dataset: str(r["dataset"]), Field: str(r["field"]), Value: str(r["value"]), Key: str(r["key"])}
		}
		// The keys the question mentions: their words appear in it,
		// consecutive and in order.
		phrase := " " + strings.Join(words, " ") + " "
		var keys []string
		for _, p := range postings {
			if strings.Contains(phrase, " "+p.Key+" ") {
				keys = append(keys, p.Key)
			}
		}
		if len(keys) == 0 {
			return nil, nil
		}
		keys = slices.Compact(slices.Sorted(slices.Values(keys)))
		counts, err := tx.Run(ctx, cypherValueHolding, scoped(scope, "keys", keys))
		if err != nil {
			return nil, err
		}
		holding := map[string]int{}
		datasets := 0
		for _, r := range counts {
			holding[str(r["key"])] = int(num(r["holding"]))
			datasets = int(num(r["datasets"]))
		}
		rank, matches := kb.NewValueIndex(postings, datasets, func(key string) int { return holding[key] }).Match(q)
		return valueResult{rank, matches}, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("value index: %w", err)
	}
	res, _ := out.(valueResult)
	return res.rank, res.matches, nil
}

type valueResult struct {
	rank    []kb.Ranked
	matches map[string][]kb.ValueMatch
}

// maxClauses bounds the full-text query: Lucene refuses a query of more
// than 1024 clauses. The question's own terms come first, so a very
// long question loses expansion terms before its own.
const maxClauses = 1024

// luceneQuery ORs one clause per term and searched field, each boosted
// like kb.MemoryCatalog's fields (name 3, text 1, synonyms SynonymBoost,
// location LocationBoost; a negative boost leaves the field out), then
// the same for the terms' synonyms (exp) at ExpansionWeight times the
// boost, then their lexicon words (lex) not already there at
// LexiconWeight. Stop words are left out unless the question has nothing
// else. Terms yields letters and digits only, so nothing needs escaping.
func (c *Catalog) luceneQuery(terms []string, exp, lex kb.Expander) string {
	seen := map[string]bool{}
	var own []string
	for _, t := range terms {
		if !seen[t] && !kb.IsStopWord(t) {
			seen[t] = true
			own = append(own, t)
		}
	}
	if len(own) == 0 {
		own = terms[:1]
	}
	fields := []struct {
		name  string
		boost float64
	}{{"search_name", 3}, {"search_text", 1}, {"search_synonyms", c.opts.SynonymBoost}, {"search_location", c.opts.LocationBoost}}
	var clauses []string
	add := func(ts []string, w float64) {
		for _, t := range ts {
			for _, f := range fields {
				if f.boost > 0 && len(clauses) < maxClauses {
					clauses = append(clauses, f.name+":"+t+"^"+strconv.FormatFloat(f.boost*w, 'g', 6, 64))
				}
			}
		}
	}
	add(own, 1)
	have := slices.Clone(own)
	if exp != nil {
		syn := exp.Expand(own)
		add(syn, c.opts.ExpansionWeight)
		have = append(have, syn...)
	}
	if lex != nil {
		var more []string
		for _, t := range lex.Expand(own) {
			if !slices.Contains(have, t) {
				more = append(more, t)
			}
		}
		add(more, c.opts.LexiconWeight)
	}
	return strings.Join(clauses, " OR ")
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
