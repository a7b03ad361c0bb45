package neo4j

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode"
)

// fakeDB simulates, in Go, exactly the Cypher statements this package
// sends (it rejects any other text), so the conformance suite can run
// without a server. It records every statement with its parameters and
// transaction mode, and it rejects writes inside read transactions, as
// Neo4j does. The vector and full-text "indexes" span all scopes and
// honour $oversample before the scope filter, like the real procedures.
type fakeDB struct {
	mu      sync.Mutex
	calls   []fakeCall
	nodes   map[fakeKey]*fakeNode
	joins   []fakeJoin
	schema  map[string]map[string]any
	failRun error // returned by every Run when set
}

type fakeCall struct {
	Cypher string
	Params map[string]any
	Write  bool
}

type fakeKey struct{ tenant, ontology, name string }

type fakeNode struct {
	props     map[string]any
	embedding []float64
	fields    []map[string]any
	values    []map[string]any
}

type fakeJoin struct {
	tenant, ontology, from, to, key string
	fromCols, toCols                []string
	desc, cardinality               string
	inferred                        bool
	confidence                      float64
}

func newFakeDB() *fakeDB {
	return &fakeDB{nodes: map[fakeKey]*fakeNode{}, schema: map[string]map[string]any{}}
}

func (f *fakeDB) NewSession(ctx context.Context) Session { return &fakeSession{db: f} }

func (f *fakeDB) recorded() []fakeCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fakeCall(nil), f.calls...)
}

type fakeSession struct {
	db     *fakeDB
	closed bool
}

func (s *fakeSession) ExecuteRead(ctx context.Context, work func(Tx) (any, error)) (any, error) {
	return work(&fakeTx{db: s.db, write: false})
}

func (s *fakeSession) ExecuteWrite(ctx context.Context, work func(Tx) (any, error)) (any, error) {
	return work(&fakeTx{db: s.db, write: true})
}

func (s *fakeSession) Close(ctx context.Context) error { s.closed = true; return nil }

type fakeTx struct {
	db    *fakeDB
	write bool
}

var writeStatements = map[string]bool{
	cypherConstraint: true, cypherVectorIdx: true, cypherFulltextIdx: true, cypherValueFirstIdx: true, cypherValueKeyIdx: true,
	cypherUpsert: true, cypherReplaceFields: true, cypherReplaceValues: true, cypherUnlink: true, cypherLink: true, cypherDelete: true, cypherSetEmbeddings: true,
}

func (t *fakeTx) Run(ctx context.Context, cypher string, params map[string]any) ([]Record, error) {
	f := t.db
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fakeCall{Cypher: cypher, Params: params, Write: t.write})
	if f.failRun != nil {
		return nil, f.failRun
	}
	if writeStatements[cypher] && !t.write {
		return nil, errors.New("fake neo4j: write statement in a read transaction")
	}
	tenant, _ := params["tenant"].(string)
	ontology, _ := params["ontology"].(string)
	key := func(name string) fakeKey { return fakeKey{tenant, ontology, name} }
	names, _ := params["names"].([]string)
	switch cypher {
	case cypherConstraint, cypherFulltextIdx, cypherValueFirstIdx, cypherValueKeyIdx:
		f.schema[cypher] = params
		return nil, nil
	case cypherVectorIdx:
		if _, ok := f.schema[cypher]; !ok { // IF NOT EXISTS
			f.schema[cypher] = params
		}
		return nil, nil
	case cypherHashes:
		var out []Record
		for _, n := range names {
			if nd := f.nodes[key(n)]; nd != nil {
				out = append(out, Record{"name": n, "hash": nd.props["hash"], "embedded": nd.embedding != nil})
			}
		}
		return out, nil
	case cypherUpsert:
		for _, row := range params["rows"].([]map[string]any) {
			k := key(row["name"].(string))
			nd := f.nodes[k]
			if nd == nil {
				nd = &fakeNode{props: map[string]any{}}
				f.nodes[k] = nd
			}
			for _, p := range []string{"source", "kind", "description", "yaml", "definition", "search_name", "search_text", "hash", "join_targets",
				"database", "schema", "synonyms", "search_synonyms", "search_location"} {
				nd.props[p] = row[p]
			}
			if !row["keep_embedding"].(bool) {
				e, _ := row["embedding"].([]float64)
				nd.embedding = e
			}
		}
		return nil, nil
	case cypherReplaceFields:
		for _, row := range params["rows"].([]map[string]any) {
			if nd := f.nodes[key(row["name"].(string))]; nd != nil {
				nd.fields = row["fields"].([]map[string]any)
			}
		}
		return nil, nil
	case cypherReplaceValues:
		for _, row := range params["rows"].([]map[string]any) {
			if nd := f.nodes[key(row["name"].(string))]; nd != nil {
				nd.values = row["values"].([]map[string]any)
			}
		}
		return nil, nil
	case cypherValueCandidates:
		words, _ := params["words"].([]string)
		var out []Record
		for _, k := range f.sortedKeys(tenant, ontology) {
			for _, v := range f.nodes[k].values {
				if slices.Contains(words, v["first"].(string)) {
					out = append(out, Record{"dataset": k.name, "field": v["field"], "value": v["value"], "key": v["key"], "position": int64(v["position"].(int))})
				}
			}
		}
		return out, nil
	case cypherValueHolding:
		keys, _ := params["keys"].([]string)
		all := f.sortedKeys(tenant, ontology)
		var out []Record
		for _, vk := range keys {
			n := 0
			for _, k := range all {
				if slices.ContainsFunc(f.nodes[k].values, func(v map[string]any) bool { return v["key"] == vk }) {
					n++
				}
			}
			out = append(out, Record{"datasets": int64(len(all)), "key": vk, "holding": int64(n)})
		}
		return out, nil
	case cypherUnlink:
		f.joins = slices.DeleteFunc(f.joins, func(j fakeJoin) bool {
			return j.tenant == tenant && j.ontology == ontology && slices.Contains(names, j.from)
		})
		return nil, nil
	case cypherIncoming:
		var out []Record
		for _, k := range f.sortedKeys(tenant, ontology) {
			for _, t := range f.nodes[k].props["join_targets"].([]string) {
				if slices.Contains(names, t) {
					out = append(out, Record{"definition": f.nodes[k].props["definition"]})
					break
				}
			}
		}
		return out, nil
	case cypherLink:
		for _, l := range params["links"].([]map[string]any) {
			from, to, lk := l["from"].(string), l["to"].(string), l["key"].(string)
			if f.nodes[key(from)] == nil || f.nodes[key(to)] == nil {
				continue
			}
			j := fakeJoin{tenant: tenant, ontology: ontology, from: from, to: to, key: lk,
				fromCols: l["from_columns"].([]string), toCols: l["to_columns"].([]string), desc: l["description"].(string),
				cardinality: l["cardinality"].(string), inferred: l["inferred"].(bool), confidence: l["confidence"].(float64)}
			i := slices.IndexFunc(f.joins, func(x fakeJoin) bool {
				return x.tenant == tenant && x.ontology == ontology && x.from == from && x.to == to && x.key == lk
			})
			if i >= 0 {
				f.joins[i] = j
			} else {
				f.joins = append(f.joins, j)
			}
		}
		return nil, nil
	case cypherDelete:
		for _, n := range names {
			delete(f.nodes, key(n))
		}
		f.joins = slices.DeleteFunc(f.joins, func(j fakeJoin) bool {
			return j.tenant == tenant && j.ontology == ontology && (slices.Contains(names, j.from) || slices.Contains(names, j.to))
		})
		return nil, nil
	case cypherDatasets:
		var out []Record
		for _, n := range names {
			if nd := f.nodes[key(n)]; nd != nil {
				out = append(out, Record{"name": n, "definition": nd.props["definition"]})
			}
		}
		return out, nil
	case cypherList:
		var out []Record
		for _, k := range f.sortedKeys(tenant, ontology) {
			if len(out) == params["limit"].(int) {
				break
			}
			out = append(out, Record{"name": k.name, "definition": f.nodes[k].props["definition"]})
		}
		return out, nil
	case cypherRelationships:
		var out []Record
		for _, j := range f.joins {
			if j.tenant == tenant && j.ontology == ontology && (slices.Contains(names, j.from) || slices.Contains(names, j.to)) {
				out = append(out, Record{"from": j.from, "to": j.to, "from_columns": toAny(j.fromCols), "to_columns": toAny(j.toCols), "description": j.desc,
					"cardinality": j.cardinality, "inferred": j.inferred, "confidence": j.confidence})
			}
		}
		return out, nil
	case cypherVectorSearch:
		q := params["embedding"].([]float64)
		var all []Record
		for k, nd := range f.nodes {
			if nd.embedding == nil || len(nd.embedding) != len(q) {
				continue
			}
			all = append(all, Record{"name": k.name, "tenant": k.tenant, "ontology": k.ontology, "score": (1 + cosine(q, nd.embedding)) / 2})
		}
		return f.topScoped(all, params, tenant, ontology), nil
	case cypherFulltextSearch:
		clauses, err := parseClauses(params["query"].(string))
		if err != nil {
			return nil, err
		}
		var all []Record
		for k, nd := range f.nodes {
			text := strings.Fields(nd.props["search_text"].(string))
			score := 0.0
			for _, cl := range clauses {
				c := count(strings.Fields(nd.props[cl.field].(string)), cl.term)
				if c > 0 {
					score += cl.boost * float64(c) / math.Sqrt(float64(len(text)+1)) * f.idf(cl.term)
				}
			}
			if score > 0 {
				all = append(all, Record{"name": k.name, "tenant": k.tenant, "ontology": k.ontology, "score": score})
			}
		}
		return f.topScoped(all, params, tenant, ontology), nil
	case cypherMissingEmbeddings:
		var out []Record
		dims := params["dimensions"].(int)
		for _, k := range f.sortedKeys(tenant, ontology) {
			if nd := f.nodes[k]; len(nd.embedding) != dims {
				out = append(out, Record{"name": k.name, "definition": nd.props["definition"]})
			}
		}
		return out, nil
	case cypherSetEmbeddings:
		for _, row := range params["rows"].([]map[string]any) {
			if nd := f.nodes[key(row["name"].(string))]; nd != nil && nd.props["hash"] == row["hash"] {
				nd.embedding = row["embedding"].([]float64)
			}
		}
		return nil, nil
	}
	return nil, fmt.Errorf("fake neo4j: unexpected Cypher %q", cypher)
}

// topScoped mimics the index procedures: the best $oversample of all
// scopes, then the WHERE on the scope, then LIMIT.
func (f *fakeDB) topScoped(all []Record, params map[string]any, tenant, ontology string) []Record {
	sort.Slice(all, func(i, j int) bool {
		if all[i]["score"].(float64) != all[j]["score"].(float64) {
			return all[i]["score"].(float64) > all[j]["score"].(float64)
		}
		return all[i]["name"].(string) < all[j]["name"].(string)
	})
	if over := params["oversample"].(int); len(all) > over {
		all = all[:over]
	}
	var out []Record
	for _, r := range all {
		if r["tenant"] == tenant && r["ontology"] == ontology && len(out) < params["limit"].(int) {
			out = append(out, Record{"name": r["name"], "score": r["score"]})
		}
	}
	return out
}

// fulltextFields are the properties of the full-text index.
var fulltextFields = []string{"search_name", "search_text", "search_synonyms", "search_location"}

type clause struct {
	field, term string
	boost       float64
}

// parseClauses reads the Lucene queries this package writes:
// field:term^boost clauses joined by " OR ". Anything else (an unknown
// field, a term with syntax characters, a missing boost) is an error, as
// a query Lucene would misread must fail the test.
func parseClauses(q string) ([]clause, error) {
	var out []clause
	for _, c := range strings.Split(q, " OR ") {
		field, rest, ok1 := strings.Cut(c, ":")
		term, boost, ok2 := strings.Cut(rest, "^")
		b, err := strconv.ParseFloat(boost, 64)
		if !ok1 || !ok2 || err != nil || b <= 0 || !slices.Contains(fulltextFields, field) || strings.ContainsFunc(term, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			return nil, fmt.Errorf("fake neo4j: unexpected full-text clause %q in %q", c, q)
		}
		out = append(out, clause{field, term, b})
	}
	return out, nil
}

func (f *fakeDB) idf(term string) float64 {
	df := 0
	for _, nd := range f.nodes {
		if slices.ContainsFunc(fulltextFields, func(p string) bool { return count(strings.Fields(nd.props[p].(string)), term) > 0 }) {
			df++
		}
	}
	return math.Log(1 + float64(len(f.nodes)+1)/float64(df+1))
}

func (f *fakeDB) sortedKeys(tenant, ontology string) []fakeKey {
	var out []fakeKey
	for k := range f.nodes {
		if k.tenant == tenant && k.ontology == ontology {
			out = append(out, k)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func count(words []string, t string) int {
	n := 0
	for _, w := range words {
		if w == t {
			n++
		}
	}
	return n
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

func cosine(a, b []float64) float64 {
	var d, na, nb float64
	for i := range a {
		d += a[i] * b[i]
		na += a[i] * a[i]
		nb += b[i] * b[i]
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return d / math.Sqrt(na*nb)
}
