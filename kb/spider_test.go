package kb_test

import (
	"context"
	"strings"
	"testing"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/standard"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	bleveindex "github.com/blevesearch/bleve_index_api"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/spidertest"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/internal/bleverank"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// The schema-retrieval quality benchmark on Spider's development set:
// every database's tables pooled into one scope, each question must find
// all the tables its gold SQL uses.

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

func spiderTable(tb testing.TB, set *spidertest.Set) []spiderRow {
	ctx := context.Background()
	scope := kb.Scope{TenantID: "spider"}
	cat, err := kb.Bootstrap(ctx, scope, set.Datasets, kb.CatalogOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer cat.Close()
	base := newPlainBM25(tb, set.Datasets, set.Natural, standard.Name)
	defer base.idx.Close()
	stemmed := newPlainBM25(tb, set.Datasets, set.Natural, en.AnalyzerName)
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
	bare := set.WithoutForeignKeys()
	noFK, err := kb.Bootstrap(ctx, scope, bare, kb.CatalogOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer noFK.Close()
	// The same, with the joins the name-and-type stage of
	// sqldb.InferJoins proposes per database (unconfirmed: the rows that
	// would confirm them are not part of the data set).
	guessed := inferredJoins(set)
	inferred, err := kb.Bootstrap(ctx, scope, guessed, kb.CatalogOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	defer inferred.Close()
	// With the WordNet lexicon (Debian's wordnet-base, installed by make
	// setup) for paraphrases.
	lexical, err := kb.Bootstrap(ctx, scope, set.Datasets, kb.CatalogOptions{Lexicon: wordNet(tb)})
	if err != nil {
		tb.Fatal(err)
	}
	defer lexical.Close()
	rows := []spiderRow{
		{name: "plain BM25 (baseline)", baseline: true},
		{name: "plain BM25, English stemming"},
		{name: "BM25, identifier analyzer"},
		{name: "vectors only (offline embedder)"},
		{name: "hybrid (RRF)"},
		{name: "hybrid + expansion, no foreign keys"},
		{name: "  same, joins from names and types"},
		{name: "hybrid + join-hint expansion"},
		{name: "  same, with the WordNet lexicon"},
	}
	ranks := []func(string, int) []string{base.rank, stemmed.rank, search(kb.BM25Only), search(kb.VectorOnly), search(kb.Hybrid),
		discoverOn(noFK), discoverOn(inferred), discover, discoverOn(lexical)}
	for i := range rows {
		// Discover's pool depends on k; plain searches are prefixes.
		r := spidertest.Recalls(set.Questions, []int{5, 10}, i < len(rows)-4, ranks[i])
		rows[i].r5, rows[i].r10 = r[0], r[1]
	}
	return rows
}

// inferredJoins returns the datasets without their declared foreign keys
// and with the join candidates sqldb.JoinCandidates proposes within each
// database instead.
func inferredJoins(set *spidertest.Set) []domain.Dataset {
	out := set.WithoutForeignKeys()
	byDB := map[string][]int{}
	var dbs []string
	for i, db := range set.DBs {
		if byDB[db] == nil {
			dbs = append(dbs, db)
		}
		byDB[db] = append(byDB[db], i)
	}
	for _, db := range dbs {
		idx := byDB[db]
		ds := make([]domain.Dataset, len(idx))
		at := map[string]int{}
		for j, i := range idx {
			ds[j] = out[i]
			at[out[i].Name] = i
		}
		for _, r := range sqldb.JoinCandidates(ds) {
			i := at[r.From]
			out[i].Relationships = append(out[i].Relationships, r)
		}
	}
	return out
}

func TestSpiderSchemaRetrieval(t *testing.T) {
	if testing.Short() {
		t.Skip("schema-retrieval benchmark skipped in -short mode")
	}
	set := spidertest.Load(t)
	if raceEnabled {
		// The race detector makes the full run take minutes of CPU: every
		// fifth question still checks the ordering against the baseline.
		sub := *set
		sub.Questions = nil
		for i := 0; i < len(set.Questions); i += 5 {
			sub.Questions = append(sub.Questions, set.Questions[i])
		}
		set = &sub
		t.Log("race detector on: every fifth question only (run without -race, or go test -bench SpiderRecall, for the full table)")
	}
	rows := spiderTable(t, set)
	logSpider(t, "all databases pooled", set, rows)
	// The default configuration (declared joins, no lexicon) and the same
	// with the WordNet lexicon.
	base, best, lexical := rows[0], rows[len(rows)-2], rows[len(rows)-1]
	const goal5, goal10 = 0.93, 0.97 // issue 15's goal
	t.Logf("goal: recall@5 >= %.2f, recall@10 >= %.2f (reached by default: %v, with the lexicon: %v)", goal5, goal10,
		best.r5 >= goal5 && best.r10 >= goal10, lexical.r5 >= goal5 && lexical.r10 >= goal10)
	if best.r5 <= base.r5 || best.r10 <= base.r10 {
		t.Errorf("hybrid + expansion (%.3f/%.3f) does not beat the baseline (%.3f/%.3f)", best.r5, best.r10, base.r5, base.r10)
	}
	// The goal is not reached (0.906/0.943 at the last change): the full
	// run holds the best achieved minus a small margin, so a regression
	// fails. The race sample (every fifth question) is too small for it.
	const floor5, floor10 = 0.895, 0.93
	if !raceEnabled && (best.r5 < floor5 || best.r10 < floor10) {
		t.Errorf("hybrid + expansion recall@5/@10 = %.3f/%.3f, below the floor %.3f/%.3f", best.r5, best.r10, floor5, floor10)
	}
	// The lexicon must help at recall@10 and not hurt at recall@5
	// (measured 0.908/0.956 against 0.906/0.943).
	if !raceEnabled && (lexical.r10 <= best.r10 || lexical.r5 < best.r5) {
		t.Errorf("with the WordNet lexicon %.3f/%.3f, without %.3f/%.3f", lexical.r5, lexical.r10, best.r5, best.r10)
	}
	// Without declared foreign keys, the joins names and types suggest
	// must help expansion (measured 0.873/0.924 against 0.844/0.905 with
	// none). The "hybrid (RRF)" row is not the no-join baseline: its
	// related-table coverage ranking reads the declared joins too.
	if noFK, guessed := rows[len(rows)-4], rows[len(rows)-3]; !raceEnabled && (guessed.r5 <= noFK.r5 || guessed.r10 <= noFK.r10) {
		t.Errorf("joins from names and types (%.3f/%.3f) do not beat no joins (%.3f/%.3f)", guessed.r5, guessed.r10, noFK.r5, noFK.r10)
	}
	// The same with only the 20 databases the questions are about.
	dev := set.DevOnly()
	rows = spiderTable(t, dev)
	logSpider(t, "the 20 dev databases pooled", dev, rows)
	if rows[len(rows)-2].r10 <= rows[0].r10 {
		t.Errorf("dev pool: hybrid + expansion (%.3f) does not beat the baseline (%.3f) at recall@10", rows[len(rows)-2].r10, rows[0].r10)
	}
	if best := rows[len(rows)-2]; !raceEnabled && (best.r5 < 0.96 || best.r10 < 0.98) {
		t.Errorf("dev pool: hybrid + expansion recall@5/@10 = %.3f/%.3f, below the floor 0.96/0.98", best.r5, best.r10)
	}
}

func logSpider(t *testing.T, title string, set *spidertest.Set, rows []spiderRow) {
	t.Logf("Spider dev schema retrieval, %s: %d questions, %d tables", title, len(set.Questions), len(set.Datasets))
	t.Logf("%-34s %9s %9s", "configuration", "recall@5", "recall@10")
	for _, r := range rows {
		t.Logf("%-34s %9.3f %9.3f", r.name, r.r5, r.r10)
	}
}

func BenchmarkSpiderRecall(b *testing.B) {
	set := spidertest.Load(b)
	var rows []spiderRow
	for b.Loop() {
		rows = spiderTable(b, set)
	}
	for _, r := range rows {
		key := strings.NewReplacer(" ", "_", "(", "", ")", "", ",", "").Replace(r.name)
		b.ReportMetric(r.r5, "recall@5/"+key)
		b.ReportMetric(r.r10, "recall@10/"+key)
	}
	b.Logf("Spider dev, all databases pooled (%d tables):", len(set.Datasets))
	for _, r := range rows {
		b.Logf("%-34s recall@5 %.3f recall@10 %.3f", r.name, r.r5, r.r10)
	}
}
