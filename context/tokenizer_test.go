package context

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"
)

// corpus is a fixed multilingual sample; its counts were computed once with
// this tokenizer and pinned below.
var corpus = []string{
	"hello world",
	"The quick brown fox jumps over the lazy dog.",
	"Umsatz pro Monat für 2024, gruppiert nach Region und Produktkategorie.",
	"Quel est le chiffre d'affaires mensuel en 2024 ? Réponds en français.",
	"Какова выручка по месяцам за 2024 год?",
	"请按月份统计2024年的收入，并按地区分组。",
	"2024年の月別売上を地域ごとに教えてください。",
	"ما هي الإيرادات الشهرية لعام 2024؟",
	"२०२४ के लिए मासिक राजस्व क्या है?",
	"SELECT date_trunc('month', o.created_at) AS m, sum(o.total) FROM sales.orders o GROUP BY 1 ORDER BY 1;",
	"func main() {\n\tfmt.Println(\"hi\") // 👋🏽\n}\n",
	"  leading and trailing spaces  \n\n\nnumbers 1234567 3.14159 -42 1e10",
	"<|endoftext|> is ordinary text here",
	"😀😃😄 emoji, 한국어 텍스트, ελληνικά, עברית",
}

var pinnedCounts = map[Encoding][]int{
	O200kBase:  {2, 10, 19, 19, 14, 14, 17, 11, 12, 31, 16, 22, 11, 18},
	Cl100kBase: {2, 10, 21, 22, 21, 19, 23, 22, 34, 31, 17, 22, 11, 31},
}

func TestTokenizerPublishedExamples(t *testing.T) {
	t.Parallel()
	// tiktoken's README: cl100k_base encodes "hello world" as [15339, 1917];
	// o200k_base as [24912, 2375].
	want := map[Encoding][]int{Cl100kBase: {15339, 1917}, O200kBase: {24912, 2375}}
	for enc, ids := range want {
		tok, err := NewTokenizer(enc)
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Encode("hello world"); !slices.Equal(got, ids) {
			t.Errorf("%s: Encode(hello world) = %v, want %v", enc, got, ids)
		}
		if n := tok.Count("hello world"); n != 2 {
			t.Errorf("%s: Count(hello world) = %d, want 2", enc, n)
		}
		if n := tok.Count(""); n != 0 {
			t.Errorf("%s: Count(\"\") = %d", enc, n)
		}
	}
}

func TestTokenizerPinnedCorpus(t *testing.T) {
	t.Parallel()
	for enc, want := range pinnedCounts {
		tok, err := NewTokenizer(enc)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]int, len(corpus))
		for i, s := range corpus {
			got[i] = tok.Count(s)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s counts = %#v, want %#v", enc, got, want)
		}
	}
}

// TestTokenizerMatchesTiktokenGo checks our encoders against tiktoken-go's
// own construction: our rank parser against the loader's (cl100k_base, the
// smaller file), and our split patterns and special tokens against
// tiktoken.GetEncoding fed with our ranks (both encodings).
func TestTokenizerMatchesTiktokenGo(t *testing.T) {
	// Not parallel: SetBpeLoader mutates tiktoken-go's global state (our
	// tokenizer never does).
	ref, err := tiktokenloader.NewOfflineLoader().LoadTiktokenBpe("cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	cl, err := NewTokenizer(Cl100kBase)
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(ref, cl.ranks) {
		t.Fatalf("cl100k ranks differ from tiktoken-go-loader's: %d vs %d entries", len(cl.ranks), len(ref))
	}
	for _, enc := range []Encoding{O200kBase, Cl100kBase} {
		tok, err := NewTokenizer(enc)
		if err != nil {
			t.Fatal(err)
		}
		tiktoken.SetBpeLoader(ranksLoader(tok.ranks))
		lib, err := tiktoken.GetEncoding(string(enc))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range append(slices.Clone(corpus), "<|endoftext|><|endofprompt|>") {
			if got, want := tok.Encode(s), lib.EncodeOrdinary(s); !slices.Equal(got, want) {
				t.Errorf("%s %q: %v, tiktoken-go %v", enc, s, got, want)
			}
		}
	}
}

type ranksLoader map[string]int

func (r ranksLoader) LoadTiktokenBpe(string) (map[string]int, error) { return r, nil }

// TestSeparatorKeepsCountsAdditive is what makes per-block counting exact:
// joining trimmed sections with SystemSeparator adds exactly its tokens.
func TestSeparatorKeepsCountsAdditive(t *testing.T) {
	t.Parallel()
	extra := []string{"end with punctuation.", "ends with a colon:", "ends/with/slash/", "> quoted", "'s contraction", "#heading", "x", "1", "。", "\"quote\""}
	texts := append(slices.Clone(corpus), extra...)
	for _, enc := range []Encoding{O200kBase, Cl100kBase} {
		tok, _ := NewTokenizer(enc)
		for _, a := range texts {
			for _, b := range texts[len(corpus)-4:] {
				a, b := strings.TrimSpace(a), strings.TrimSpace(b)
				joined := tok.Count(a + SystemSeparator + b)
				if sum := tok.Count(a) + tok.sep + tok.Count(b); joined != sum {
					t.Errorf("%s: %q + %q: joined %d tokens, parts %d", enc, a, b, joined, sum)
				}
			}
		}
		// Without the leading space, punctuation merges with the newlines.
		if tok.Count("end."+"\n\n"+"next") == tok.Count("end.")+tok.Count("\n\n")+tok.Count("next") {
			t.Logf("%s: plain newlines happen to be additive here", enc)
		}
	}
}

func TestEncodingForModel(t *testing.T) {
	t.Parallel()
	cases := map[string]Encoding{
		"gpt-4o": O200kBase, "gpt-4o-mini-2024-07-18": O200kBase, "gpt-4.1": O200kBase, "gpt-5-mini": O200kBase,
		"o1": O200kBase, "o3-mini": O200kBase, "o4-mini": O200kBase, "openai/gpt-4o": O200kBase,
		"gpt-4": Cl100kBase, "gpt-4-turbo": Cl100kBase, "gpt-3.5-turbo": Cl100kBase, "gpt-35-turbo": Cl100kBase,
		"llama3.1": O200kBase,
	}
	for model, want := range cases {
		if got := EncodingForModel(model); got != want {
			t.Errorf("EncodingForModel(%q) = %s, want %s", model, got, want)
		}
	}
	if _, err := NewTokenizer("p50k_base"); err == nil {
		t.Error("NewTokenizer(p50k_base) succeeded")
	}
}

// trapTransport fails every request: a tokenizer that tried the network
// would be caught.
type trapTransport struct{}

var errTrap = errors.New("network access attempted")

func (trapTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	fmt.Fprintf(os.Stderr, "NETWORK ACCESS: %s %s\n", r.Method, r.URL)
	os.Exit(3)
	return nil, errTrap
}

// TestTokenizerOffline loads both encodings in a fresh process whose proxy
// settings point at a closed port and whose http.DefaultTransport exits the
// process on use, with an empty tiktoken cache directory.
func TestTokenizerOffline(t *testing.T) {
	t.Parallel()
	if os.Getenv("BICHAT_TOKENIZER_OFFLINE_CHILD") == "1" {
		t.Skip("child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestTokenizerOfflineChild$", "-test.v")
	cmd.Env = append(os.Environ(),
		"BICHAT_TOKENIZER_OFFLINE_CHILD=1",
		"HTTP_PROXY=http://127.0.0.1:9", "HTTPS_PROXY=http://127.0.0.1:9", "ALL_PROXY=http://127.0.0.1:9",
		"http_proxy=http://127.0.0.1:9", "https_proxy=http://127.0.0.1:9", "NO_PROXY=", "no_proxy=",
		"TIKTOKEN_CACHE_DIR="+t.TempDir(), "DATA_GYM_CACHE_DIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("offline child failed: %v\n%s", err, out)
	}
	for _, want := range []string{"o200k_base hello world = 2", "cl100k_base hello world = 2", "trap works"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("child output lacks %q:\n%s", want, out)
		}
	}
}

func TestTokenizerOfflineChild(t *testing.T) {
	if os.Getenv("BICHAT_TOKENIZER_OFFLINE_CHILD") != "1" {
		t.Skip("runs only as TestTokenizerOffline's child")
	}
	// Prove the trap is live: a request through the default client must
	// not succeed. (The proxy variables alone would make it fail too.)
	orig := http.DefaultTransport
	http.DefaultTransport = failTransport{}
	if _, err := http.Get("https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"); err == nil {
		t.Fatal("the network trap let a request through")
	}
	fmt.Println("trap works")
	_ = orig
	http.DefaultTransport = trapTransport{}
	for _, enc := range []Encoding{O200kBase, Cl100kBase} {
		tok, err := NewTokenizer(enc)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("%s hello world = %d\n", enc, tok.Count("hello world"))
	}
}

type failTransport struct{}

func (failTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, errTrap }
