package kb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bleveindex "github.com/blevesearch/bleve_index_api"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/internal/bleverank"
)

// The schema-retrieval quality benchmark on Spider's development set:
// every database's tables pooled into one scope, each question must find
// all the tables its gold SQL uses.

const spiderDir = "/work/shared/datasets/spider-dev"

type spiderDB struct {
	DBID               string   `json:"db_id"`
	TableNames         []string `json:"table_names"`
	TableNamesOriginal []string `json:"table_names_original"`
	ColumnNames        [][2]any `json:"column_names"`
	ColumnNamesOrig    [][2]any `json:"column_names_original"`
	ColumnTypes        []string `json:"column_types"`
	PrimaryKeys        []any    `json:"primary_keys"`
	ForeignKeys        [][2]int `json:"foreign_keys"`
}

type spiderQuestion struct {
	Question string
	Gold     []string
}

type spiderSet struct {
	datasets []domain.Dataset
	// natural holds, per dataset, Spider's natural-language table and
	// column names ("singer in concert", "singer id"): the baseline's text.
	natural   []string
	questions []spiderQuestion
	// devDBs are the databases dev.json asks about (20 of the 166).
	devDBs map[string]bool
}

// devOnly returns the set restricted to the tables of the databases the
// questions are about.
func (s *spiderSet) devOnly() *spiderSet {
	out := &spiderSet{questions: s.questions, devDBs: s.devDBs}
	for i, d := range s.datasets {
		if s.devDBs[strings.SplitN(d.Name, ".", 2)[0]] {
			out.datasets = append(out.datasets, d)
			out.natural = append(out.natural, s.natural[i])
		}
	}
	return out
}

var (
	spiderOnce sync.Once
	spiderData *spiderSet
	spiderErr  error
)

func loadSpider(tb testing.TB) *spiderSet {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(spiderDir, "tables.json")); err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			tb.Fatalf("spider-dev dataset missing at %s (BICHAT_REQUIRE_INTEGRATION=1)", spiderDir)
		}
		tb.Skipf("spider-dev dataset not found at %s; skipping the schema-retrieval benchmark", spiderDir)
	}
	spiderOnce.Do(func() { spiderData, spiderErr = readSpider() })
	if spiderErr != nil {
		tb.Fatal(spiderErr)
	}
	return spiderData
}

func readSpider() (*spiderSet, error) {
	raw, err := os.ReadFile(filepath.Join(spiderDir, "tables.json"))
	if err != nil {
		return nil, err
	}
	var dbs []spiderDB
	if err := json.Unmarshal(raw, &dbs); err != nil {
		return nil, fmt.Errorf("tables.json: %w", err)
	}
	set := &spiderSet{}
	tableNames := map[string][]string{}
	for _, db := range dbs {
		names := make([]string, len(db.TableNamesOriginal))
		for i, t := range db.TableNamesOriginal {
			names[i] = db.DBID + "." + t
		}
		tableNames[db.DBID] = names
		pk := map[int]bool{}
		for _, p := range db.PrimaryKeys {
			if f, ok := p.(float64); ok {
				pk[int(f)] = true
			}
		}
		natural := make([]string, len(names))
		copy(natural, db.TableNames)
		for _, c := range db.ColumnNames {
			if ti := int(c[0].(float64)); ti >= 0 {
				natural[ti] += " " + c[1].(string)
			}
		}
		set.natural = append(set.natural, natural...)
		ds := make([]domain.Dataset, len(names))
		for i := range names {
			ds[i] = domain.Dataset{Name: names[i], Source: names[i], Kind: "table"}
			if natural := db.TableNames[i]; !slices.Equal(kb.Words(natural), kb.Words(db.TableNamesOriginal[i])) {
				ds[i].Description = natural
			}
		}
		colTable := map[int]int{}
		for ci, c := range db.ColumnNamesOrig {
			ti := int(c[0].(float64))
			if ti < 0 {
				continue
			}
			colTable[ci] = ti
			f := domain.Field{Name: c[1].(string), Type: db.ColumnTypes[ci], PrimaryKey: pk[ci]}
			if natural := db.ColumnNames[ci][1].(string); !slices.Equal(kb.Words(natural), kb.Words(f.Name)) {
				f.Description = natural
			}
			if _, dup := ds[ti].Field(f.Name); !dup {
				ds[ti].Fields = append(ds[ti].Fields, f)
			}
		}
		for _, fk := range db.ForeignKeys {
			from, to := colTable[fk[0]], colTable[fk[1]]
			ds[from].Relationships = append(ds[from].Relationships, domain.Relationship{
				From: names[from], FromColumns: []string{db.ColumnNamesOrig[fk[0]][1].(string)},
				To: names[to], ToColumns: []string{db.ColumnNamesOrig[fk[1]][1].(string)},
			})
		}
		set.datasets = append(set.datasets, ds...)
	}
	raw, err = os.ReadFile(filepath.Join(spiderDir, "dev.json"))
	if err != nil {
		return nil, err
	}
	var dev []struct {
		DBID     string         `json:"db_id"`
		Question string         `json:"question"`
		SQL      map[string]any `json:"sql"`
	}
	if err := json.Unmarshal(raw, &dev); err != nil {
		return nil, fmt.Errorf("dev.json: %w", err)
	}
	set.devDBs = map[string]bool{}
	for _, q := range dev {
		set.devDBs[q.DBID] = true
		idx := map[int]bool{}
		collectTables(q.SQL, idx)
		var gold []string
		for i := range idx {
			gold = append(gold, tableNames[q.DBID][i])
		}
		slices.Sort(gold)
		if len(gold) == 0 {
			return nil, fmt.Errorf("question %q: no tables in its gold SQL", q.Question)
		}
		set.questions = append(set.questions, spiderQuestion{Question: q.Question, Gold: gold})
	}
	return set, nil
}

// collectTables walks a parsed Spider SQL tree (subqueries, set
// operations) and records every table unit.
func collectTables(v any, into map[int]bool) {
	switch x := v.(type) {
	case map[string]any:
		if from, ok := x["from"].(map[string]any); ok {
			if units, ok := from["table_units"].([]any); ok {
				for _, u := range units {
					if pair, ok := u.([]any); ok && len(pair) == 2 && pair[0] == "table_unit" {
						into[int(pair[1].(float64))] = true
					}
				}
			}
		}
		for _, c := range x {
			collectTables(c, into)
		}
	case []any:
		for _, c := range x {
			collectTables(c, into)
		}
	}
}

// recalls returns, for each k in ks, the share of questions whose gold
// tables are all among the first k names rank returns. rank is called
// once per question with the largest k when prefix is set (its first k
// results do not depend on k), once per question and k otherwise.
func recalls(qs []spiderQuestion, ks []int, prefix bool, rank func(q string, k int) []string) []float64 {
	ok := make([]int, len(ks))
	for _, q := range qs {
		var top []string
		for i, k := range ks {
			if !prefix || top == nil {
				top = rank(q.Question, map[bool]int{true: slices.Max(ks), false: k}[prefix])
			}
			got := top[:min(k, len(top))]
			all := true
			for _, g := range q.Gold {
				if !slices.Contains(got, g) {
					all = false
					break
				}
			}
			if all {
				ok[i]++
			}
		}
	}
	out := make([]float64, len(ks))
	for i := range ks {
		out[i] = float64(ok[i]) / float64(len(qs))
	}
	return out
}

// plainBM25 is the baseline: Bleve's BM25 over the table and column names
// (ranked deterministically, ties by name, as the catalog ranks)
// (Spider's natural-language names, so identifiers are already split into
// words), nothing else. analyzer is standard.Name (lower-case, stop
// words) or en.AnalyzerName (that plus English possessives and Porter
// stemming, so "singers" meets "singer").
type plainBM25 struct{ idx bleve.Index }

func newPlainBM25(tb testing.TB, ds []domain.Dataset, text []string, analyzer string) *plainBM25 {
	m := bleve.NewIndexMapping()
	m.ScoringModel = bleveindex.BM25Scoring
	m.DefaultAnalyzer = analyzer
	idx, err := bleve.NewUsing("", m, scorch.Name, scorch.Name, nil)
	if err != nil {
		tb.Fatal(err)
	}
	b := idx.NewBatch()
	for i, d := range ds {
		if err := b.Index(d.Name, map[string]any{"text": text[i]}); err != nil {
			tb.Fatal(err)
		}
	}
	if err := idx.Batch(b); err != nil {
		tb.Fatal(err)
	}
	return &plainBM25{idx: idx}
}

func (p *plainBM25) rank(q string, k int) []string {
	mq := bleve.NewMatchQuery(q)
	mq.SetField("text")
	res, err := bleverank.Search(context.Background(), p.idx, bleve.NewSearchRequestOptions(mq, k, 0, false))
	if err != nil {
		panic(err)
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.ID
	}
	return out
}

type spiderRow struct {
	name     string
	r5, r10  float64
	baseline bool
}

func spiderTable(tb testing.TB, set *spiderSet) []spiderRow {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "spider"}
	cat, err := kb.Bootstrap(ctx, scope, set.datasets, kb.CatalogOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer cat.Close()
	base := newPlainBM25(tb, set.datasets, set.natural, standard.Name)
	defer base.idx.Close()
	stemmed := newPlainBM25(tb, set.datasets, set.natural, en.AnalyzerName)
	defer stemmed.idx.Close()
	search := func(mode kb.SearchMode) func(string, int) []string {
		return func(q string, k int) []string {
			hits, err := cat.SearchWith(ctx, scope, q, kb.SearchOptions{K: k, Mode: mode})
			if err != nil {
				panic(err)
			}
			out := make([]string, len(hits))
			for i, h := range hits {
				out[i] = h.Dataset.Name
			}
			return out
		}
	}
	discoverOn := func(cat kb.Catalog) func(string, int) []string {
		return func(q string, k int) []string {
			d, err := kb.Discover(ctx, cat, scope, q, kb.DiscoverOptions{K: k})
			if err != nil {
				panic(err)
			}
			return d.Names()
		}
	}
	discover := discoverOn(cat)
	// The no-foreign-key variant: the same catalog without its declared
	// joins, so expansion has nothing to follow (joins would have to be
	// inferred and confirmed on the databases, which Spider's tables.json
	// does not come with).
	bare := make([]domain.Dataset, len(set.datasets))
	for i, d := range set.datasets {
		d.Relationships = nil
		bare[i] = d
	}
	noFK, err := kb.Bootstrap(ctx, scope, bare, kb.CatalogOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer noFK.Close()
	rows := []spiderRow{
		{name: "plain BM25 (baseline)", baseline: true},
		{name: "plain BM25, English stemming"},
		{name: "BM25, identifier analyzer"},
		{name: "vectors only (offline embedder)"},
		{name: "hybrid (RRF)"},
		{name: "hybrid + expansion, no foreign keys"},
		{name: "hybrid + join-hint expansion"},
	}
	ranks := []func(string, int) []string{base.rank, stemmed.rank, search(kb.BM25Only), search(kb.VectorOnly), search(kb.Hybrid),
		discoverOn(noFK), discover}
	for i := range rows {
		// Discover's pool depends on k; plain searches are prefixes.
		r := recalls(set.questions, []int{5, 10}, i < len(rows)-2, ranks[i])
		rows[i].r5, rows[i].r10 = r[0], r[1]
	}
	return rows
}

func TestSpiderSchemaRetrieval(t *testing.T) {
	if testing.Short() {
		t.Skip("schema-retrieval benchmark skipped in -short mode")
	}
	set := loadSpider(t)
	if raceEnabled {
		// The race detector makes the full run take minutes of CPU: every
		// fifth question still checks the ordering against the baseline.
		sub := *set
		sub.questions = nil
		for i := 0; i < len(set.questions); i += 5 {
			sub.questions = append(sub.questions, set.questions[i])
		}
		set = &sub
		t.Log("race detector on: every fifth question only (run without -race, or go test -bench SpiderRecall, for the full table)")
	}
	rows := spiderTable(t, set)
	logSpider(t, "all databases pooled", set, rows)
	base, best := rows[0], rows[len(rows)-1]
	const goal5, goal10 = 0.90, 0.95
	t.Logf("goal for the best configuration: recall@5 >= %.2f, recall@10 >= %.2f (reached: %v)", goal5, goal10, best.r5 >= goal5 && best.r10 >= goal10)
	if best.r5 <= base.r5 || best.r10 <= base.r10 {
		t.Errorf("hybrid + expansion (%.3f/%.3f) does not beat the baseline (%.3f/%.3f)", best.r5, best.r10, base.r5, base.r10)
	}
	// The goal is reached at recall@5 but not yet at recall@10: the full
	// run holds the best achieved (0.907/0.941 when written) minus a small
	// margin, so a regression fails. The race sample (every fifth
	// question) is too small for it.
	const floor5, floor10 = 0.895, 0.93
	if !raceEnabled && (best.r5 < floor5 || best.r10 < floor10) {
		t.Errorf("hybrid + expansion recall@5/@10 = %.3f/%.3f, below the floor %.3f/%.3f", best.r5, best.r10, floor5, floor10)
	}
	// The same with only the 20 databases the questions are about.
	dev := set.devOnly()
	rows = spiderTable(t, dev)
	logSpider(t, "the 20 dev databases pooled", dev, rows)
	if rows[len(rows)-1].r10 <= rows[0].r10 {
		t.Errorf("dev pool: hybrid + expansion (%.3f) does not beat the baseline (%.3f) at recall@10", rows[len(rows)-1].r10, rows[0].r10)
	}
	if best := rows[len(rows)-1]; !raceEnabled && (best.r5 < 0.96 || best.r10 < 0.98) {
		t.Errorf("dev pool: hybrid + expansion recall@5/@10 = %.3f/%.3f, below the floor 0.96/0.98", best.r5, best.r10)
	}
}

func logSpider(t *testing.T, title string, set *spiderSet, rows []spiderRow) {
	t.Logf("Spider dev schema retrieval, %s: %d questions, %d tables", title, len(set.questions), len(set.datasets))
	t.Logf("%-34s %9s %9s", "configuration", "recall@5", "recall@10")
	for _, r := range rows {
		t.Logf("%-34s %9.3f %9.3f", r.name, r.r5, r.r10)
	}
}

func BenchmarkSpiderRecall(b *testing.B) {
	set := loadSpider(b)
	var rows []spiderRow
	for b.Loop() {
		rows = spiderTable(b, set)
	}
	for _, r := range rows {
		key := strings.NewReplacer(" ", "_", "(", "", ")", "", ",", "").Replace(r.name)
		b.ReportMetric(r.r5, "recall@5/"+key)
		b.ReportMetric(r.r10, "recall@10/"+key)
	}
	b.Logf("Spider dev, all databases pooled (%d tables):", len(set.datasets))
	for _, r := range rows {
		b.Logf("%-34s recall@5 %.3f recall@10 %.3f", r.name, r.r5, r.r10)
	}
}
