package kb

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"unicode"

	"github.com/bichat-go/bichat/domain"
)

// Describer writes descriptions for a dataset whose names say little
// ("t_ord_h", "cst_cd"). The implementation in package tools/catalog
// (ModelDescriber) asks the configured model once per dataset. Describing
// is optional: nothing in bichat requires it, and its output is a proposal
// the host reviews (see Propose and Apply).
type Describer interface {
	// Describe returns proposed descriptions for d: Text for the table
	// and Fields keyed by column name. It may leave either empty.
	Describe(ctx context.Context, d domain.Dataset) (Description, error)
}

// Description is a proposed description of one dataset and its columns.
type Description struct {
	// Dataset is the name of the dataset described.
	Dataset string `json:"dataset"`
	// Text describes the table; empty when none is proposed.
	Text string `json:"text,omitempty"`
	// Fields maps column names to proposed column descriptions.
	Fields map[string]string `json:"fields,omitempty"`
}

// Cryptic reports whether d's name (table) and which of its columns
// (fields, in d's order) look cryptic and have no description yet: the
// candidates worth describing. A name is cryptic when one of its words
// (split at "_", "-", ".", spaces and camelCase) is a single letter
// ("t_ord_h", "x_flg"), has no vowel ("cst_cd", "flg"; "y" counts as a
// vowel, so "qty" and "by" pass), or is a code of at most three letters
// with digits ("amt1", "c7"), or when every word has at most three letters
// and one of them is not a common short word ("ord_typ"; "is_new" and "id"
// pass). For the table, only the part after the last "." of the name is
// judged. Ordinary names such as customer_id, order_date or revenue are
// not cryptic, and neither is anything that already has a description.
func Cryptic(d domain.Dataset) (table bool, fields []string) {
	name := d.Name
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	table = strings.TrimSpace(d.Description) == "" && crypticName(name)
	for _, f := range d.Fields {
		if strings.TrimSpace(f.Description) == "" && crypticName(f.Name) {
			fields = append(fields, f.Name)
		}
	}
	return table, fields
}

// commonShortWords are words of at most three letters that read plainly
// in a column name, so a name made only of short words is not cryptic
// when all of them are here.
var commonShortWords = map[string]bool{
	"id": true, "at": true, "by": true, "is": true, "no": true, "to": true, "of": true,
	"on": true, "in": true, "or": true, "and": true, "the": true, "for": true, "per": true,
	"day": true, "age": true, "tax": true, "fee": true, "sex": true, "zip": true,
	"url": true, "uri": true, "sku": true, "key": true, "new": true, "old": true,
	"max": true, "min": true, "avg": true, "sum": true, "top": true, "end": true,
	"due": true, "net": true, "raw": true, "ip": true, "api": true, "iso": true,
	"vat": true, "eur": true, "usd": true, "web": true, "app": true, "row": true,
	"log": true, "tag": true, "set": true, "own": true, "use": true, "via": true,
	"hit": true, "win": true, "cap": true, "pay": true, "job": true, "map": true,
	"bio": true, "ad": true, "ads": true, "lat": true, "lon": true, "lng": true,
	"qty": true, "mix": true,
}

// crypticName applies the Cryptic heuristic to one identifier.
func crypticName(name string) bool {
	words := nameWords(name)
	if len(words) == 0 {
		return false
	}
	allShort, unknownShort := true, false
	for _, w := range words {
		letters := strings.Map(func(r rune) rune {
			if unicode.IsDigit(r) {
				return -1
			}
			return r
		}, w)
		n := len([]rune(letters))
		switch {
		case n == 0: // a number such as the 2024 of sales_2024
			continue
		case letters != w && n <= 3: // a code with digits: amt1, c7
			return true
		case n == 1:
			return true
		case !strings.ContainsAny(letters, "aeiouy") && isASCIILetters(letters) && !commonShortWords[letters]:
			return true
		}
		if n > 3 {
			allShort = false
		} else if !commonShortWords[letters] {
			unknownShort = true
		}
	}
	return allShort && unknownShort
}

// isASCIILetters reports whether s is only a-z, so the vowel test is not
// applied to scripts without those vowels.
func isASCIILetters(s string) bool {
	for _, r := range s {
		if r < 'a' || r > 'z' {
			return false
		}
	}
	return true
}

// nameWords splits an identifier into lower-case words at non-alphanumeric
// characters and camelCase boundaries ("custOrderID" gives cust, order, id).
func nameWords(name string) []string {
	var words []string
	var cur []rune
	flush := func() {
		if len(cur) > 0 {
			words = append(words, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(name)
	for i, r := range rs {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			flush()
			continue
		}
		if unicode.IsUpper(r) && len(cur) > 0 {
			prev := rs[i-1]
			nextLower := i+1 < len(rs) && unicode.IsLower(rs[i+1])
			if unicode.IsLower(prev) || unicode.IsDigit(prev) || (unicode.IsUpper(prev) && nextLower) {
				flush()
			}
		}
		cur = append(cur, r)
	}
	flush()
	return words
}

// DescriptionCache keeps descriptions in memory keyed by the schema
// fingerprint of their dataset (DescriptionFingerprint), so a dataset is
// described once and described again only when its name, columns, types
// or relationships change. The zero value is ready to use; it is safe for
// concurrent use.
type DescriptionCache struct {
	mu sync.Mutex
	m  map[string]Description
}

// Get returns the description cached under fingerprint.
func (c *DescriptionCache) Get(fingerprint string) (Description, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.m[fingerprint]
	return cloneDescription(d), ok
}

// Put caches desc under fingerprint, replacing any earlier entry.
func (c *DescriptionCache) Put(fingerprint string, desc Description) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]Description)
	}
	c.m[fingerprint] = cloneDescription(desc)
}

// Len returns the number of cached descriptions.
func (c *DescriptionCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

func cloneDescription(d Description) Description {
	d.Fields = maps.Clone(d.Fields)
	return d
}

// DescriptionFingerprint returns the key DescriptionCache uses for d: the
// schema fingerprint of the single dataset (SchemaFingerprint: name,
// source, columns with their types, relationships; order-free,
// descriptions excluded), which is also its kb/recipes.Fingerprint.
func DescriptionFingerprint(d domain.Dataset) string { return SchemaFingerprint([]domain.Dataset{d}) }

// Propose asks d to describe the cryptic datasets (see Cryptic) among
// datasets and returns the proposals, in the order of datasets, for the
// host to review before Apply. Datasets that are not cryptic are skipped;
// a dataset whose fingerprint is in cache is answered from the cache
// without asking d; each remaining fingerprint is asked once, even when
// several datasets share it, and its answer is cached (cache may be nil
// for no caching). A proposal keeps only what is missing: Text when the
// dataset has no description, and Fields for columns of the dataset that
// have none; a dataset left with nothing to propose is omitted. An error
// from d names the dataset and stops Propose; answers received before it
// are already cached, so a retry does not ask for them again.
func Propose(ctx context.Context, datasets []domain.Dataset, d Describer, cache *DescriptionCache) ([]Description, error) {
	if d == nil {
		return nil, errors.New("kb: propose descriptions: nil Describer")
	}
	if cache == nil {
		cache = &DescriptionCache{}
	}
	var out []Description
	for _, ds := range datasets {
		table, fields := Cryptic(ds)
		if !table && len(fields) == 0 {
			continue
		}
		fp := DescriptionFingerprint(ds)
		desc, ok := cache.Get(fp)
		if !ok {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("kb: propose descriptions: %w", err)
			}
			var err error
			desc, err = d.Describe(ctx, ds)
			if err != nil {
				return nil, fmt.Errorf("kb: describe dataset %q: %w", ds.Name, err)
			}
			cache.Put(fp, desc)
		}
		if p, ok := missingOnly(ds, desc); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// missingOnly restricts desc to what ds lacks, and reports whether
// anything is left.
func missingOnly(ds domain.Dataset, desc Description) (Description, bool) {
	p := Description{Dataset: ds.Name}
	if strings.TrimSpace(ds.Description) == "" {
		p.Text = strings.TrimSpace(desc.Text)
	}
	for _, f := range ds.Fields {
		if strings.TrimSpace(f.Description) != "" {
			continue
		}
		if t := strings.TrimSpace(desc.Fields[f.Name]); t != "" {
			if p.Fields == nil {
				p.Fields = make(map[string]string)
			}
			p.Fields[f.Name] = t
		}
	}
	return p, p.Text != "" || len(p.Fields) > 0
}

// Apply returns a copy of datasets with the accepted descriptions filled
// in, matched by dataset name and column name. It fills empty
// descriptions only: a description the host wrote is never overwritten,
// and accepted entries naming an unknown dataset or column are ignored.
// The input slice and its datasets are not modified.
func Apply(datasets []domain.Dataset, accepted []Description) []domain.Dataset {
	byName := make(map[string][]Description, len(accepted))
	for _, a := range accepted {
		byName[a.Dataset] = append(byName[a.Dataset], a)
	}
	out := make([]domain.Dataset, len(datasets))
	for i, ds := range datasets {
		descs := byName[ds.Name]
		if len(descs) == 0 {
			out[i] = ds
			continue
		}
		ds.Fields = slices.Clone(ds.Fields)
		for _, a := range descs {
			if strings.TrimSpace(ds.Description) == "" {
				if t := strings.TrimSpace(a.Text); t != "" {
					ds.Description = t
				}
			}
			for j := range ds.Fields {
				f := &ds.Fields[j]
				if strings.TrimSpace(f.Description) != "" {
					continue
				}
				if t := strings.TrimSpace(a.Fields[f.Name]); t != "" {
					f.Description = t
				}
			}
		}
		out[i] = ds
	}
	return out
}
