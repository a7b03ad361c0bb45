package kb

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

func TestCoverageRanksWideTablesAndJoinPairs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	scope := Scope{TenantID: "cov"}
	wide := domain.Dataset{Name: "geo.country", Source: "geo.country", Fields: []domain.Field{{Name: "code", Type: "text"}, {Name: "region", Type: "text"}, {Name: "population", Type: "int"}}}
	for i := range 20 {
		wide.Fields = append(wide.Fields, domain.Field{Name: fmt.Sprintf("extra_%d", i), Type: "int"})
	}
	ds := []domain.Dataset{
		wide,
		{Name: "hr.regions", Source: "hr.regions", Fields: []domain.Field{{Name: "region", Type: "text"}}},
		{Name: "misc.spoken_words", Source: "misc.spoken_words", Fields: []domain.Field{{Name: "spoken", Type: "text"}}},
		{Name: "geo.language", Source: "geo.language", Fields: []domain.Field{{Name: "country_code", Type: "text"}, {Name: "spoken", Type: "text"}},
			Relationships: []domain.Relationship{{From: "geo.language", FromColumns: []string{"country_code"}, To: "geo.country", ToColumns: []string{"code"}}}},
		{Name: "misc.other", Source: "misc.other", Fields: []domain.Field{{Name: "population", Type: "int"}, {Name: "kind", Type: "text"}}},
	}
	c, err := Bootstrap(ctx, scope, ds, CatalogOptions{NoEmbeddings: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, _ := c.state(scope, false)
	var all []Ranked // misc.spoken_words before geo.language: ties keep this order
	for _, d := range ds {
		all = append(all, Ranked{Name: d.Name})
	}
	s.mu.Lock()
	cov := s.buildCoverageLocked()
	s.mu.Unlock()

	// Both terms in one wide table beat one term in a narrow table.
	got := cov.rank("region and population", all)
	if len(got) < 3 || got[0].Name != "geo.country" {
		t.Fatalf("rank(region and population) = %v, want geo.country first", got)
	}
	// A table whose related table holds the other term beats one that
	// holds the same term alone.
	got = cov.rank("where is it spoken, by population", all)
	pos := map[string]int{}
	for i, r := range got {
		pos[r.Name] = i + 1
	}
	if pos["geo.language"] == 0 || pos["misc.spoken_words"] == 0 || pos["geo.language"] > pos["misc.spoken_words"] {
		t.Fatalf("rank(spoken population) = %v, want geo.language (joins geo.country) above misc.spoken_words", got)
	}
	if got := cov.rank("nothing matches", all); got != nil {
		t.Fatalf("rank of unknown terms = %v, want nil", got)
	}

	// The snapshot is rebuilt after a change.
	if _, err := c.SearchWith(ctx, scope, "population", SearchOptions{}); err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	built := s.cov != nil
	s.mu.RUnlock()
	if !built {
		t.Fatal("hybrid search did not build the coverage snapshot")
	}
	if err := c.Put(ctx, scope, domain.Dataset{Name: "geo.city", Source: "geo.city", Fields: []domain.Field{{Name: "mayor", Type: "text"}}}); err != nil {
		t.Fatal(err)
	}
	hits, err := c.SearchWith(ctx, scope, "mayor", SearchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.mu.RLock()
	fresh := s.cov != nil && s.cov.terms["geo.city"] != nil
	s.mu.RUnlock()
	if !fresh || len(hits) == 0 || hits[0].Dataset.Name != "geo.city" {
		t.Fatalf("after Put: snapshot fresh %v, hits %v", fresh, hits)
	}
}

// TestCoverageRankBitIdentical: the IDF weights of the question's terms
// are summed in the question's order, never in map order, so the same
// question scores the same candidates with the same bits on every call,
// and equal scores keep the candidates' order.
func TestCoverageRankBitIdentical(t *testing.T) {
	t.Parallel()
	words := []string{"revenue", "region", "quarter", "customer", "month", "refund", "invoice", "shipment", "warehouse", "inventory", "supplier", "budget"}
	c := &coverage{terms: map[string][]string{}, df: map[string]int{}, n: 40, adj: map[string][]string{}}
	var cands []Ranked
	for i := range 40 {
		name := fmt.Sprintf("d%02d", i)
		var ts []string
		for j, w := range words {
			if (i>>(j%6))&1 == 1 || j%(i%5+2) == 0 {
				ts = append(ts, Stem(w))
			}
		}
		c.terms[name] = ts
		for _, t := range ts {
			c.df[t]++
		}
		cands = append(cands, Ranked{Name: name})
	}
	c.adj["d03"] = []string{"d04", "d17"}
	q := "revenue region quarter customer month refund invoice shipment warehouse inventory supplier budget"
	want := c.rank(q, cands)
	if len(want) < 10 {
		t.Fatalf("rank = %v, want most candidates", want)
	}
	for i := range 300 {
		got := c.rank(q, cands)
		if len(got) != len(want) {
			t.Fatalf("call %d: %d entries, first call %d", i+1, len(got), len(want))
		}
		for j := range got {
			if got[j].Name != want[j].Name || math.Float64bits(got[j].Score) != math.Float64bits(want[j].Score) {
				t.Fatalf("call %d, entry %d: %s %v, first call %s %v", i+1, j, got[j].Name, got[j].Score, want[j].Name, want[j].Score)
			}
		}
	}
}
