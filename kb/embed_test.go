package kb_test

import (
	"context"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/kb"
)

func TestWordsSplitsIdentifiers(t *testing.T) {
	t.Parallel()
	cases := map[string][]string{
		"customer_id":         {"customer", "id"},
		"customerID2":         {"customer", "id", "2"},
		"HTTPServer.port":     {"http", "server", "port"},
		"Home Town":           {"home", "town"},
		"sales.order-items":   {"sales", "order", "items"},
		"  ":                  nil,
		"naïveCafé":           {"naïve", "café"},
		"OrderLines_byMonth1": {"order", "lines", "by", "month", "1"},
	}
	for in, want := range cases {
		if got := kb.Words(in); !reflect.DeepEqual(got, want) {
			t.Errorf("Words(%q) = %q, want %q", in, got, want)
		}
	}
	if got, want := kb.Terms("singers ordering Orders"), []string{"singer", "order", "order"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Terms = %q, want %q", got, want)
	}
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestHashEmbedder(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := kb.NewHashEmbedder(kb.HashEmbedderOptions{})
	if e.Dimensions() != 512 {
		t.Fatalf("Dimensions = %d, want 512", e.Dimensions())
	}
	vs, err := e.Embed(ctx, []string{"singer_in_concert", "How many singers are in each concert?", "car makers", ""})
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range vs[:3] {
		if len(v) != 512 || math.Abs(norm(v)-1) > 1e-5 {
			t.Errorf("vector %d: len %d norm %v, want 512 and 1", i, len(v), norm(v))
		}
	}
	if norm(vs[3]) != 0 {
		t.Errorf("empty text: norm %v, want 0", norm(vs[3]))
	}
	if near, far := kb.Cosine(vs[0], vs[1]), kb.Cosine(vs[2], vs[1]); near <= far || near < 0.2 {
		t.Errorf("cos(table, question) = %.3f, cos(other, question) = %.3f: want the first clearly higher", near, far)
	}
	again, _ := e.Embed(ctx, []string{"singer_in_concert"})
	if !reflect.DeepEqual(again[0], vs[0]) {
		t.Error("Embed is not deterministic")
	}

	// IDF: after fitting on a corpus where "id" is everywhere, a text that
	// shares only "id" with the query scores lower than before fitting.
	corpus := []string{"singer id name", "concert id year", "stadium id capacity", "car id maker"}
	f := e.Fit(corpus)
	if f.Fitted() != 4 || e.Fitted() != 0 {
		t.Fatalf("Fitted = %d (copy), %d (original), want 4 and 0", f.Fitted(), e.Fitted())
	}
	q, doc := "stadium id", "concert id year"
	before := kb.Cosine(e.Vector(q), e.Vector(doc))
	after := kb.Cosine(f.Vector(q), f.Vector(doc))
	if !(after < before) {
		t.Errorf("shared common feature: cosine %.3f after fit, %.3f before: want lower after IDF", after, before)
	}
	if kb.Cosine(f.Vector(q), f.Vector("stadium id capacity")) <= after {
		t.Error("fitted embedder: the matching document should beat the one sharing only id")
	}
	if _, err := e.Embed(canceled(), []string{"x"}); err == nil {
		t.Error("Embed with a cancelled context: want an error")
	}
	var _ kb.CorpusFitter = e
}

func canceled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func TestQuestionText(t *testing.T) {
	t.Parallel()
	for q, want := range map[string]string{
		"List the names of singers ordered by age":    "List the names of singers by age",
		"Show names in descending order of capacity.": "Show names in descending of capacity",
		"Which products were sorted alphabetically?":  "Which products were alphabetically",
		"How many orders did each customer place?":    "How many orders did each customer place?",
		"What is the order date of the latest order?": "What is the order date of the latest order?",
	} {
		if got := kb.QuestionText(q); !strings.EqualFold(got, want) {
			t.Errorf("QuestionText(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestHashEmbedderBitIdentical: features that hash to the same dimension
// are summed in a fixed order, so a text embeds to the same bits on every
// call and with every embedder of the same options (a sum in map order
// differs in its last bits from call to call, and near-tied similarities
// then swap).
func TestHashEmbedderBitIdentical(t *testing.T) {
	t.Parallel()
	text := "total revenue per customer region and quarter, with refunds, invoices, shipments and the warehouse inventory levels"
	corpus := []string{text, "customer orders", "regional shipment refunds", "inventory of each warehouse"}
	for _, dims := range []int{16, 64, 512} {
		mk := func() *kb.HashEmbedder {
			return kb.NewHashEmbedder(kb.HashEmbedderOptions{Dimensions: dims}).Fit(corpus)
		}
		e := mk()
		want := e.Vector(text)
		for i := range 200 {
			if i%50 == 0 {
				e = mk() // and with another embedder fitted alike
			}
			got := e.Vector(text)
			for d := range got {
				if math.Float32bits(got[d]) != math.Float32bits(want[d]) {
					t.Fatalf("dims %d, call %d: dimension %d is %v, first call %v", dims, i+1, d, got[d], want[d])
				}
			}
		}
	}
}
