package kb

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/bichat-go/bichat/domain"
)

// DefaultWordNetDir is where Debian's wordnet-base package installs the
// WordNet 3.0 database (apt-get install wordnet-base).
const DefaultWordNetDir = "/usr/share/wordnet"

// wordNetRelations are the pointers whose target synset joins a synset's
// group: hypernym (@), instance hypernym (@i), similar to (&), attribute
// (=: light ~ weight) and derivationally related form (+: produce ~
// production).
var wordNetRelations = map[string]bool{"@": true, "@i": true, "&": true, "=": true, "+": true}

// Lexicon maps a word (lower case) to words a question may use for the
// same thing or a broader one, one direction only: "automobile" leads to
// "car" and "motor vehicle", not the reverse to every kind of car. It is
// CatalogOptions.Lexicon; LoadWordNet builds one from WordNet.
type Lexicon map[string][]string

// WordNetOptions tune LoadWordNet. The zero value is ready to use.
type WordNetOptions struct {
	// Senses, when above zero, keeps only a word's Senses most frequent
	// meanings (WordNet orders them by how often they were seen in its
	// tagged corpus); zero keeps them all. On the pooled Spider benchmark
	// all senses did best: 2 lost 0.008 at recall@5 and @10, 10 or more
	// matched all.
	Senses int
}

// LoadWordNet reads the WordNet database in dir (DefaultWordNetDir when
// empty: Debian's wordnet-base) and returns a Lexicon: for each one-word
// noun, verb and adjective, over its meanings (WordNetOptions.Senses),
// the other one-word lemmas of the meaning and
// those of the meanings it points to as a broader term (hypernym,
// instance hypernym), a similar adjective, an attribute or a
// derivationally related form. "automobile" thus meets "car", "lighter"
// meets "weight", "produced" meets "production". Multi-word lemmas
// (motor_vehicle) are left out: their words alone mislead more than they
// help.
//
// The database is read from disk, never bundled: WordNet 3.0 is
// Princeton University's, under its own permissive licence, packaged by
// Debian as wordnet-base (about 30 MB on disk). A missing directory or
// file, or a line that is not WordNet's format, is an error naming it.
func LoadWordNet(dir string, opts WordNetOptions) (Lexicon, error) {
	if dir == "" {
		dir = DefaultWordNetDir
	}
	if opts.Senses < 0 {
		return nil, domain.Invalid("wordnet.senses", fmt.Sprintf("must not be negative (got %d)", opts.Senses))
	}
	if opts.Senses == 0 {
		opts.Senses = math.MaxInt
	}
	db := &wordNet{synsets: map[string]*wordNetSynset{}}
	senses := map[string][]string{} // lemma -> synset keys, most frequent first
	var lemmas []string
	addSense := func(lemma, key string) {
		if senses[lemma] == nil {
			lemmas = append(lemmas, lemma)
		}
		senses[lemma] = append(senses[lemma], key)
	}
	readIndex := func(path string) error { return readWordNetIndex(path, opts.Senses, addSense) }
	for _, pos := range []string{"noun", "verb", "adj"} {
		for _, file := range []struct {
			path string
			read func(string) error
		}{{filepath.Join(dir, "data."+pos), db.read}, {filepath.Join(dir, "index."+pos), readIndex}} {
			err := file.read(file.path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("kb: WordNet: %s is missing (on Debian: apt-get install wordnet-base): %w", file.path, err)
			}
			if err != nil {
				return nil, fmt.Errorf("kb: WordNet: %w", err)
			}
		}
	}
	lex := Lexicon{}
	for _, lemma := range lemmas {
		var related []string
		add := func(words []string) {
			for _, w := range words {
				if w != lemma && !slices.Contains(related, w) {
					related = append(related, w)
				}
			}
		}
		for _, key := range senses[lemma] {
			s := db.synsets[key]
			if s == nil {
				return nil, fmt.Errorf("kb: WordNet: the index names synset %s, which no data file holds", key)
			}
			add(s.words)
			for _, to := range s.ptrs {
				if t := db.synsets[to]; t != nil {
					add(t.words)
				}
			}
		}
		if len(related) > 0 {
			lex[lemma] = related
		}
	}
	return lex, nil
}

// readWordNetIndex reads an index file (lemma pos synset_cnt p_cnt
// [ptr_symbol...] sense_cnt tagsense_cnt synset_offset...) and calls add
// for the first senses synsets of each one-word lemma.
func readWordNetIndex(path string, senses int, add func(lemma, key string)) error {
	return scanWordNet(path, func(fields []string, bad func(string) error) error {
		if len(fields) < 6 {
			return bad("too few fields for an index entry")
		}
		n, err1 := strconv.Atoi(fields[2])
		pc, err2 := strconv.Atoi(fields[3])
		if err1 != nil || err2 != nil || n < 1 || pc < 0 || len(fields) != 4+pc+2+n {
			return bad("synset and pointer counts do not match the fields")
		}
		lemma := strings.ToLower(fields[0])
		if strings.ContainsAny(lemma, "_-") {
			return nil
		}
		for _, off := range fields[len(fields)-n:][:min(n, senses)] {
			add(lemma, wordNetKey(fields[1], off))
		}
		return nil
	})
}

// scanWordNet calls each with the fields of every entry of a WordNet
// data or index file: the licence header (lines starting with two
// spaces) and blank lines skipped, a data line's gloss (after "|") cut
// off. bad makes an error naming the file and line.
func scanWordNet(path string, each func(fields []string, bad func(string) error) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if strings.HasPrefix(text, "  ") || strings.TrimSpace(text) == "" {
			continue
		}
		text, _, _ = strings.Cut(text, "|")
		bad := func(what string) error { return fmt.Errorf("%s:%d: %s", path, line, what) }
		if err := each(strings.Fields(text), bad); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// wordNet holds the synsets read so far, keyed by part of speech and
// offset ("n:02084071"; satellite adjectives count as adjectives).
type wordNet struct {
	synsets map[string]*wordNetSynset
}

type wordNetSynset struct {
	words []string // one-word lemmas, lower case
	ptrs  []string // keys of related synsets
}

// wordNetKey is a synset's key: its part of speech (s as a) and offset.
func wordNetKey(pos, offset string) string {
	if pos == "s" {
		pos = "a"
	}
	return pos + ":" + offset
}

// read parses one WordNet data file (the format of wndb(5)).
func (db *wordNet) read(path string) error {
	return scanWordNet(path, func(fields []string, bad func(string) error) error {
		if len(fields) < 6 {
			return bad("too few fields for a synset")
		}
		n, err := strconv.ParseUint(fields[3], 16, 8)
		if err != nil || n == 0 {
			return bad(fmt.Sprintf("word count %q is not a hexadecimal count", fields[3]))
		}
		p := 4 + 2*int(n)
		if len(fields) <= p {
			return bad(fmt.Sprintf("%d words announced, fewer present", n))
		}
		s := &wordNetSynset{}
		for i := range int(n) {
			w := strings.ToLower(fields[4+2*i])
			if j := strings.IndexByte(w, '('); j > 0 {
				w = w[:j] // adjective position marker: tall(a)
			}
			if !strings.ContainsAny(w, "_-") && !slices.Contains(s.words, w) {
				s.words = append(s.words, w)
			}
		}
		pc, err := strconv.Atoi(fields[p])
		if err != nil || pc < 0 {
			return bad(fmt.Sprintf("pointer count %q is not a number", fields[p]))
		}
		if len(fields) < p+1+4*pc {
			return bad(fmt.Sprintf("%d pointers announced, fewer present", pc))
		}
		for j := range pc {
			if wordNetRelations[fields[p+1+4*j]] {
				s.ptrs = append(s.ptrs, wordNetKey(fields[p+3+4*j], fields[p+2+4*j]))
			}
		}
		db.synsets[wordNetKey(fields[2], fields[0])] = s
		return nil
	})
}

// Expander turns the lexicon into an Expander over stemmed terms (what
// catalogs look question terms up with): each one-term word expands to
// the terms of its related words (stop words left out), in order, each
// once; words that stem alike merge.
func (l Lexicon) Expander() Expander {
	words := make([]string, 0, len(l))
	for w := range l {
		words = append(words, w)
	}
	slices.Sort(words) // words stemming alike merge in a fixed order
	x := Expander{}
	for _, w := range words {
		ws := Words(w)
		if len(ws) != 1 || stopWords[ws[0]] {
			continue
		}
		src := Stem(ws[0])
		for _, r := range l[w] {
			for _, rw := range Words(r) {
				if t := Stem(rw); !stopWords[rw] && t != src && !slices.Contains(x[src], t) {
					x[src] = append(x[src], t)
				}
			}
		}
	}
	return x
}
