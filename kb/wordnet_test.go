package kb_test

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// writeWordNet writes a small database in WordNet's format: data and
// index files with a licence header; a noun with a multi-word lemma, a
// hypernym and three senses; an adjective with an attribute pointing into
// the nouns; a verb with a derivation and the verb frames WordNet appends
// after the pointers. noun replaces the noun data file's synsets.
func writeWordNet(t *testing.T, noun string) string {
	t.Helper()
	dir := t.TempDir()
	header := "  1 This software and database is being provided to you, the LICENSEE, by  \n  2 Princeton University under the following license.  \n"
	if noun == "" {
		noun = "00000100 06 n 03 car 0 auto 0 motor_vehicle 0 001 @ 00000200 n 0000 | a motor vehicle  \n" +
			"00000200 06 n 01 vehicle 0 000 | a conveyance  \n" +
			"00000300 07 n 01 weight 0 000 | heaviness  \n" +
			"00000400 04 n 01 production 0 000 | the act of producing  \n" +
			"00000800 06 n 02 car 1 railcar 0 000 | a wheeled vehicle on rails  \n" +
			"00000900 06 n 02 car 2 gondola 0 000 | the compartment of an airship  \n"
	}
	files := map[string]string{
		"data.noun": header + noun,
		"data.adj":  header + "00000500 00 a 02 light(a) 0 weightless 0 002 = 00000300 n 0000 ! 00000600 a 0101 | of little weight  \n",
		"data.verb": header + "00000700 36 v 01 produce 0 001 + 00000400 n 0101 01 + 08 00 | bring forth  \n",
		"index.noun": header + "auto n 1 1 @ 1 0 00000100  \n" +
			"car n 3 1 @ 3 1 00000100 00000800 00000900  \n" +
			"gondola n 1 0 1 0 00000900  \n" +
			"motor_vehicle n 1 0 1 0 00000100  \n" +
			"production n 1 0 1 0 00000400  \n" +
			"railcar n 1 0 1 0 00000800  \n" +
			"vehicle n 1 0 1 0 00000200  \n" +
			"weight n 1 0 1 0 00000300  \n",
		"index.adj":  header + "light a 1 2 = ! 1 0 00000500  \nweightless a 1 0 1 0 00000500  \n",
		"index.verb": header + "produce v 1 1 + 1 0 00000700  \n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestLoadWordNetFormat(t *testing.T) {
	t.Parallel()
	dir := writeWordNet(t, "")
	lex, err := kb.LoadWordNet(dir, kb.WordNetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Synonyms and the hypernym's lemma (motor_vehicle left out), only
	// the two most frequent senses of car (not gondola), one direction
	// (vehicle gains nothing from car); the adjective with the noun its
	// attribute names (the antonym pointer ignored); the verb with its
	// derived noun. Words with nothing related are absent.
	want := kb.Lexicon{
		"auto": {"car", "vehicle"}, "car": {"auto", "vehicle", "railcar", "gondola"}, "railcar": {"car"}, "gondola": {"car"},
		"light": {"weightless", "weight"}, "weightless": {"light", "weight"}, "produce": {"production"},
	}
	if !maps.EqualFunc(lex, want, slices.Equal) {
		t.Errorf("lexicon = %q, want %q", lex, want)
	}
	lex, err = kb.LoadWordNet(dir, kb.WordNetOptions{Senses: 2})
	if err != nil || !slices.Equal(lex["car"], []string{"auto", "vehicle", "railcar"}) {
		t.Errorf("two senses: car -> %q, %v", lex["car"], err)
	}
	if _, err := kb.LoadWordNet(dir, kb.WordNetOptions{Senses: -1}); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("negative senses: %v, want ErrInvalid", err)
	}
}

func TestLoadWordNetErrors(t *testing.T) {
	t.Parallel()
	_, err := kb.LoadWordNet(filepath.Join(t.TempDir(), "nowhere"), kb.WordNetOptions{})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "apt-get install wordnet-base") {
		t.Errorf("missing directory: %v", err)
	}
	for _, tc := range []struct{ noun, want string }{
		{"00000100 06 n zz car 0 001 @ 00000200 n 0000 | bad count\n", `data.noun:3: word count "zz"`},
		{"00000100 06 n 02\n", "data.noun:3: too few fields"},
		{"00000100 06 n 03 car 0 auto 0\n", "data.noun:3: 3 words announced"},
		{"00000100 06 n 02 car 0 auto 0 x | bad pointer count\n", `data.noun:3: pointer count "x"`},
		{"00000100 06 n 02 car 0 auto 0 002 @ 00000200 n 0000 | fewer pointers\n", "data.noun:3: 2 pointers announced"},
		{"00000100 06 n 02 car 0 auto 0 000 | car, but no vehicle or railcar\n", "which no data file holds"},
	} {
		if _, err := kb.LoadWordNet(writeWordNet(t, tc.noun), kb.WordNetOptions{}); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("noun file %q: %v, want an error containing %q", tc.noun, err, tc.want)
		}
	}
	dir := writeWordNet(t, "")
	if err := os.WriteFile(filepath.Join(dir, "index.verb"), []byte("produce v 2 1 + 1 0 00000700\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := kb.LoadWordNet(dir, kb.WordNetOptions{}); err == nil || !strings.Contains(err.Error(), "index.verb:1: synset and pointer counts") {
		t.Errorf("bad index line: %v", err)
	}
}

// wordNet loads the system's WordNet (Debian's wordnet-base, installed by
// make setup), skipping or, under BICHAT_REQUIRE_INTEGRATION=1, failing
// when it is absent.
func wordNet(tb testing.TB) kb.Lexicon {
	tb.Helper()
	lex, err := kb.LoadWordNet("", kb.WordNetOptions{})
	if errors.Is(err, fs.ErrNotExist) && os.Getenv("BICHAT_REQUIRE_INTEGRATION") != "1" {
		tb.Skipf("WordNet not installed: %v", err)
	}
	if err != nil {
		tb.Fatal(err)
	}
	return lex
}

// The lexicon finds tables for questions that paraphrase them with words
// neither the schema nor the business thesaurus has; without it the
// search ranks a distractor first.
func TestLexiconFindsParaphrases(t *testing.T) {
	t.Parallel()
	lexicon := wordNet(t)
	if len(lexicon) < 50_000 {
		t.Fatalf("WordNet gave %d words; the full database has about 80,000 with related words", len(lexicon))
	}
	datasets := []domain.Dataset{
		{Name: "legal.lawyers", Description: "The firm's counsel", Fields: []domain.Field{{Name: "name", Type: "text"},
			{Name: "bar_number", Type: "text"}}},
		{Name: "legal.matters", Description: "Open matters", Fields: []domain.Field{{Name: "title", Type: "text"},
			{Name: "opened_on", Type: "date"}}},
		{Name: "logistics.shipments", Description: "Goods sent to customers", Fields: []domain.Field{{Name: "tracking_no", Type: "text"},
			{Name: "weight_kg", Type: "numeric"}}},
		{Name: "logistics.depots", Description: "Warehouses", Fields: []domain.Field{{Name: "code", Type: "text"},
			{Name: "city", Type: "text"}}},
		{Name: "hr.staff", Description: "Employees", Fields: []domain.Field{{Name: "name", Type: "text"}, {Name: "hired_on", Type: "date"}}},
	}
	for i := range datasets {
		datasets[i].Source = datasets[i].Name
	}
	ctx := context.Background()
	scope := kb.Scope{TenantID: "acme"}
	top := func(opts kb.CatalogOptions, q string) string {
		cat, err := kb.Bootstrap(ctx, scope, datasets, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer cat.Close()
		hits, err := cat.SearchWith(ctx, scope, q, kb.SearchOptions{K: 1, Mode: kb.BM25Only})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 0 || hits[0].Fallback {
			return ""
		}
		return hits[0].Dataset.Name
	}
	for _, tc := range []struct{ q, want string }{
		{"Which attorneys joined this year?", "legal.lawyers"},
		{"How much freight left in May?", "logistics.shipments"},
	} {
		if got := top(kb.CatalogOptions{}, tc.q); got == tc.want {
			t.Errorf("%q finds %s without the lexicon: the case does not test it", tc.q, got)
		}
		if got := top(kb.CatalogOptions{Lexicon: lexicon}, tc.q); got != tc.want {
			t.Errorf("%q with the lexicon: top hit %q, want %s", tc.q, got, tc.want)
		}
		if got := top(kb.CatalogOptions{Lexicon: lexicon, LexiconWeight: -1}, tc.q); got == tc.want {
			t.Errorf("%q: a negative LexiconWeight still expands", tc.q)
		}
	}
}
