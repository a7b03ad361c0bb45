package sqldb

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/bichat-go/bichat/domain"
)

// Defaults of InferOptions.
const (
	DefaultMinConfidence = 0.9
	DefaultInferSample   = 1000
	DefaultMaxCandidates = 200
	DefaultInferTimeout  = 5 * time.Second
)

// Name scores of join candidates (see InferJoins). The confidence of an
// inferred join is the score times the share of sampled child values
// found in the parent key.
const (
	// ScoreEntityKey: the column is the parent table's entity name plus
	// its key, or plus the key word its key ends with (id, code, key,
	// no): orders.customer_id -> customers.id, orders.CustomerId ->
	// customers.CustomerId, sales.region_code -> regions.code,
	// sales.region_id -> regions.region_id.
	ScoreEntityKey = 1.0
	// ScoreSameKey: the column has the name of the parent's key (not a
	// bare id, code, key or no): shipments.sku -> products.sku (a primary
	// key), orders.customer_code -> clients.customer_code
	// (the primary key of clients).
	ScoreSameKey = 0.95
	// ScoreRoleEntityKey: a role word before the entity and key:
	// matches.home_team_id -> teams.id.
	ScoreRoleEntityKey = 0.92
)

// InferOptions bound and tune InferJoins. The zero value uses the
// defaults.
type InferOptions struct {
	// MinConfidence is the lowest confidence kept (default 0.9).
	MinConfidence float64
	// SampleSize is how many non-null child values one probe reads, and
	// how many parent rows a uniqueness check reads (default 1,000).
	SampleSize int
	// MaxCandidates bounds the candidates probed (default 200), the
	// best-named first; each costs one query, and a parent key that is not
	// a declared primary key one more, once.
	MaxCandidates int
	// Limits are those of every probe: Timeout defaults to 5 s (a probe
	// that times out rejects its candidate); set Attributes or TenantID
	// when the adapter scopes data by them.
	Limits Limits
}

func (o InferOptions) withDefaults() InferOptions {
	if o.MinConfidence <= 0 {
		o.MinConfidence = DefaultMinConfidence
	}
	if o.SampleSize <= 0 {
		o.SampleSize = DefaultInferSample
	}
	if o.MaxCandidates <= 0 {
		o.MaxCandidates = DefaultMaxCandidates
	}
	if o.Limits.Timeout <= 0 {
		o.Limits.Timeout = DefaultInferTimeout
	}
	o.Limits.MaxRows = 1
	return o
}

// ForeignKeyCardinality is the cardinality of a foreign key of d over
// columns: CardinalityOneToOne when the columns are exactly d's primary
// key (each referencing row is unique), CardinalityManyToOne otherwise.
func ForeignKeyCardinality(d domain.Dataset, columns []string) string {
	var pk []string
	for _, f := range d.Fields {
		if f.PrimaryKey {
			pk = append(pk, f.Name)
		}
	}
	if len(pk) > 0 && len(pk) == len(columns) {
		cs := slices.Clone(columns)
		slices.Sort(cs)
		slices.Sort(pk)
		if slices.Equal(cs, pk) {
			return domain.CardinalityOneToOne
		}
	}
	return domain.CardinalityManyToOne
}

// joinCandidate is a child column that may reference a parent key.
type joinCandidate struct {
	child, parent *domain.Dataset
	column, key   string
	keyIsPK       bool
	score         float64
}

// InferJoins finds the joins of schemas without declared foreign keys. It
// proposes candidates from names and types: a column named after another
// table (singular or plural) plus its key or a key word (id, code, key,
// no), a column named like another table's key-like column, or a role
// word plus those (home_team_id); the two types must be compatible
// (integers with integers or numerics, text with text, ...). Only
// single-column keys are considered: a parent's single-column primary
// key, or, in a table without one, a key-like column (id, code, key, no,
// or the entity name plus one of them: customer_id in customers) whose
// sampled values are unique. Self-references and
// columns already in a declared relationship are left out.
//
// Each candidate is confirmed on the database through db.Query (the
// read-only path, within opts.Limits): the share of up to SampleSize
// sampled non-null child values that exist in the parent key. Its
// Confidence is that share times the name score (ScoreEntityKey,
// ScoreSameKey, ScoreRoleEntityKey); those of at least MinConfidence are
// kept, the best one per child column. The probes read counts only,
// never values. The cost is bounded: at most MaxCandidates probes plus a
// uniqueness check per parent key without a declared primary key, each
// within Limits.Timeout.
//
// The result is sorted by From, column and To; each Relationship has
// Inferred set, its Confidence, and Cardinality many_to_one, or
// one_to_one when the child column is its table's primary key. Hosts add
// them to the datasets (Dataset.Relationships) before building the
// catalog.
func InferJoins(ctx context.Context, db DB, datasets []domain.Dataset, opts InferOptions) ([]domain.Relationship, error) {
	if db == nil {
		return nil, errors.New("infer joins: nil DB")
	}
	opts = opts.withDefaults()
	if opts.MinConfidence > 1 {
		return nil, fmt.Errorf("infer joins: MinConfidence %g is above 1", opts.MinConfidence)
	}
	cands := joinCandidates(datasets)
	if len(cands) > opts.MaxCandidates {
		cands = cands[:opts.MaxCandidates]
	}
	unique := map[string]bool{}
	best := map[string]domain.Relationship{}
	var order []string
	for _, c := range cands {
		if !c.keyIsPK {
			id := c.parent.Name + "\x00" + c.key
			u, ok := unique[id]
			if !ok {
				var err error
				if u, err = isUnique(ctx, db, c.parent, c.key, opts); err != nil {
					return nil, err
				}
				unique[id] = u
			}
			if !u {
				continue
			}
		}
		share, err := overlap(ctx, db, c, opts)
		if err != nil {
			return nil, err
		}
		conf := share * c.score
		if conf < opts.MinConfidence {
			continue
		}
		id := c.child.Name + "\x00" + c.column
		if prev, ok := best[id]; ok && prev.Confidence >= conf {
			continue
		} else if !ok {
			order = append(order, id)
		}
		best[id] = domain.Relationship{
			From: c.child.Name, FromColumns: []string{c.column}, To: c.parent.Name, ToColumns: []string{c.key},
			Cardinality: ForeignKeyCardinality(*c.child, []string{c.column}),
			Inferred:    true, Confidence: conf,
		}
	}
	out := make([]domain.Relationship, 0, len(order))
	for _, id := range order {
		out = append(out, best[id])
	}
	sortInferred(out)
	return out, nil
}

// JoinCandidates is InferJoins' first stage alone: the joins that names
// and types suggest, the best-named one per child column, without asking
// the database. Each Relationship has Inferred set and Confidence equal to
// the name score (ScoreEntityKey, ScoreSameKey, ScoreRoleEntityKey), which
// is what InferJoins' confidence would be if every sampled value were
// found; candidates whose parent key is not a declared primary key are
// included unchecked. Use it to show a reviewer what InferJoins will
// probe, or to measure on schemas that come without their rows; hand
// discovery only joins InferJoins confirmed (or the host reviewed).
// Sorted like InferJoins' result.
func JoinCandidates(datasets []domain.Dataset) []domain.Relationship {
	seen := map[string]bool{}
	var out []domain.Relationship
	for _, c := range joinCandidates(datasets) {
		id := c.child.Name + "\x00" + c.column
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, domain.Relationship{
			From: c.child.Name, FromColumns: []string{c.column}, To: c.parent.Name, ToColumns: []string{c.key},
			Cardinality: ForeignKeyCardinality(*c.child, []string{c.column}),
			Inferred:    true, Confidence: c.score,
		})
	}
	sortInferred(out)
	return out
}

// sortInferred sorts inferred joins by From, child column and To.
func sortInferred(rs []domain.Relationship) {
	slices.SortFunc(rs, func(a, b domain.Relationship) int {
		return cmp.Or(cmp.Compare(a.From, b.From), cmp.Compare(a.FromColumns[0], b.FromColumns[0]), cmp.Compare(a.To, b.To))
	})
}

// probe runs one counting statement and returns its two counts; ok is
// false when it timed out or the database refused the comparison.
func probe(ctx context.Context, db DB, sql string, lim Limits) (a, b int64, ok bool, err error) {
	res, err := db.Query(ctx, sql, lim)
	if err != nil {
		if ctx.Err() != nil {
			return 0, 0, false, fmt.Errorf("infer joins: %w", ctx.Err())
		}
		switch KindOf(err) {
		case KindTimeout, KindTypeMismatch:
			return 0, 0, false, nil
		}
		return 0, 0, false, fmt.Errorf("infer joins: %w", err)
	}
	if len(res.Rows) != 1 || len(res.Rows[0]) != 2 {
		return 0, 0, false, fmt.Errorf("infer joins: a probe returned %d rows, want 1 of 2 counts", len(res.Rows))
	}
	a, okA := asInt(res.Rows[0][0])
	b, okB := asInt(res.Rows[0][1])
	if !okA || !okB {
		return 0, 0, false, fmt.Errorf("infer joins: a probe returned %T and %T, want counts", res.Rows[0][0], res.Rows[0][1])
	}
	return a, b, true, nil
}

func asInt(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case float64:
		return int64(x), true
	}
	return 0, false
}

// isUnique reports whether a sample of the parent key's non-null values
// holds no duplicate (and at least one value).
func isUnique(ctx context.Context, db DB, parent *domain.Dataset, key string, opts InferOptions) (bool, error) {
	k := QuoteIdent(key)
	sql := fmt.Sprintf("SELECT count(*), count(DISTINCT v) FROM (SELECT %s AS v FROM %s WHERE %s IS NOT NULL LIMIT %d) s",
		k, QuoteQualified(parent.Source), k, opts.SampleSize)
	lim := opts.Limits
	lim.Tables = []string{parent.Source}
	n, d, ok, err := probe(ctx, db, sql, lim)
	return ok && n > 0 && n == d, err
}

// overlap is the share of sampled non-null child values found in the
// parent key (0 when there are none).
func overlap(ctx context.Context, db DB, c joinCandidate, opts InferOptions) (float64, error) {
	col := QuoteIdent(c.column)
	sql := fmt.Sprintf("SELECT count(*), count(CASE WHEN EXISTS (SELECT 1 FROM %s p WHERE p.%s = s.v) THEN 1 END) FROM (SELECT %s AS v FROM %s WHERE %s IS NOT NULL LIMIT %d) s",
		QuoteQualified(c.parent.Source), QuoteIdent(c.key), col, QuoteQualified(c.child.Source), col, opts.SampleSize)
	lim := opts.Limits
	lim.Tables = []string{c.child.Source, c.parent.Source}
	n, hit, ok, err := probe(ctx, db, sql, lim)
	if err != nil || !ok || n == 0 {
		return 0, err
	}
	return float64(hit) / float64(n), nil
}

// parentKey is a single-column key a child column may reference.
type parentKey struct {
	ds   *domain.Dataset
	key  domain.Field
	isPK bool
}

// keyWords end a column name that holds a key.
var keyWords = []string{"id", "code", "key", "no"}

// joinCandidates lists the name-and-type candidates, best score first.
func joinCandidates(datasets []domain.Dataset) []joinCandidate {
	var keys []parentKey
	for i := range datasets {
		d := &datasets[i]
		var pk []domain.Field
		for _, f := range d.Fields {
			if f.PrimaryKey {
				pk = append(pk, f)
			}
		}
		switch {
		case len(pk) == 1:
			keys = append(keys, parentKey{d, pk[0], true})
		case len(pk) == 0:
			for _, f := range d.Fields {
				if keyLike(d, f.Name) {
					keys = append(keys, parentKey{d, f, false})
				}
			}
		}
	}
	declared := map[string]bool{}
	for _, d := range datasets {
		for _, r := range d.Relationships {
			from := cmp.Or(r.From, d.Name)
			for _, c := range r.FromColumns {
				declared[from+"\x00"+c] = true
			}
		}
	}
	var out []joinCandidate
	for i := range datasets {
		d := &datasets[i]
		npk := 0
		for _, f := range d.Fields {
			if f.PrimaryKey {
				npk++
			}
		}
		for _, f := range d.Fields {
			// A column named as its own table's key (id, customer_id in
			// customers) is that table's identity, not a reference.
			if declared[d.Name+"\x00"+f.Name] || keyLike(d, f.Name) {
				continue
			}
			identity := f.PrimaryKey && npk == 1
			for _, k := range keys {
				if k.ds == d || !compatible(f.Type, k.key.Type) {
					continue
				}
				s := nameScore(f.Name, k)
				// Two tables whose primary keys share a name: which one
				// refers to the other is not in the names.
				if s == ScoreSameKey && identity {
					continue
				}
				if s > 0 {
					out = append(out, joinCandidate{child: d, parent: k.ds, column: f.Name, key: k.key.Name, keyIsPK: k.isPK, score: s})
				}
			}
		}
	}
	slices.SortStableFunc(out, func(a, b joinCandidate) int {
		return cmp.Or(cmp.Compare(b.score, a.score), cmp.Compare(a.child.Name, b.child.Name),
			cmp.Compare(a.column, b.column), cmp.Compare(a.parent.Name, b.parent.Name), cmp.Compare(a.key, b.key))
	})
	return out
}

// keyLike reports whether column of d is named like a key: id, code, key
// or no, or the entity name plus one of them (customer_id in customers).
func keyLike(d *domain.Dataset, column string) bool {
	n := norm(column)
	if slices.Contains(keyWords, n) {
		return true
	}
	for _, s := range stems(d.Name) {
		for _, w := range keyWords {
			if n == s+w {
				return true
			}
		}
	}
	return false
}

// nameScore scores column as a reference to k (0: not a candidate).
func nameScore(column string, k parentKey) float64 {
	n, nk := norm(column), norm(k.key.Name)
	// The key itself, or a key word the key ends with: customer_id and
	// customer_no may refer to customers.id only if it is called ...id.
	suffixes := []string{nk}
	for _, w := range keyWords {
		if strings.HasSuffix(nk, w) && w != nk {
			suffixes = append(suffixes, w)
		}
	}
	for _, s := range stems(k.ds.Name) {
		for _, suf := range suffixes {
			if n == s+suf {
				return ScoreEntityKey
			}
		}
	}
	if n == nk && !slices.Contains(keyWords, nk) && (k.isPK || keyLike(k.ds, k.key.Name)) {
		return ScoreSameKey
	}
	ws := words(column)
	for _, s := range stems(k.ds.Name) {
		for _, suf := range suffixes {
			// The last words spell entity + key, after at least one role word.
			for i := 1; i < len(ws); i++ {
				if strings.Join(ws[i:], "") == s+suf {
					return ScoreRoleEntityKey
				}
			}
		}
	}
	return 0
}

// stems are the normalised singular and plural forms of a dataset's
// relation name (without its schema).
func stems(name string) []string {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	base := norm(name)
	out := []string{base}
	add := func(s string) {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	switch {
	case strings.HasSuffix(base, "ies"):
		add(strings.TrimSuffix(base, "ies") + "y")
	case strings.HasSuffix(base, "sses"), strings.HasSuffix(base, "xes"), strings.HasSuffix(base, "ches"), strings.HasSuffix(base, "shes"):
		add(strings.TrimSuffix(base, "es"))
	case strings.HasSuffix(base, "ss"):
		add(base + "es")
	case strings.HasSuffix(base, "s"):
		add(strings.TrimSuffix(base, "s"))
	case strings.HasSuffix(base, "y"):
		add(strings.TrimSuffix(base, "y") + "ies")
	default:
		add(base + "s")
	}
	return out
}

// norm lowercases s and drops everything but letters and digits.
func norm(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// words splits an identifier into lowercase words at underscores, other
// punctuation and camelCase boundaries: HomeTeam_ID -> home, team, id.
func words(s string) []string {
	var (
		out []string
		cur []rune
	)
	flush := func() {
		if len(cur) > 0 {
			out = append(out, strings.ToLower(string(cur)))
			cur = cur[:0]
		}
	}
	rs := []rune(s)
	for i, r := range rs {
		switch {
		case !unicode.IsLetter(r) && !unicode.IsDigit(r):
			flush()
			continue
		case unicode.IsUpper(r) && i > 0 && unicode.IsLower(rs[i-1]):
			flush()
		}
		cur = append(cur, r)
	}
	flush()
	return out
}

// typeFamily groups database type names whose values compare with each
// other: "int", "num", "text", "uuid", "real", "time", "bool" or "other".
func typeFamily(t string) string {
	t = strings.ToLower(strings.TrimSpace(t))
	switch {
	case t == "":
		return "other"
	case strings.Contains(t, "int") || strings.Contains(t, "serial"):
		return "int"
	case strings.Contains(t, "char") || strings.Contains(t, "text") || strings.Contains(t, "clob") || t == "name" || t == "citext":
		return "text"
	case strings.HasPrefix(t, "numeric") || strings.HasPrefix(t, "decimal") || strings.HasPrefix(t, "number"):
		return "num"
	case t == "uuid":
		return "uuid"
	case strings.Contains(t, "real") || strings.Contains(t, "floa") || strings.Contains(t, "doub"):
		return "real"
	case strings.Contains(t, "date") || strings.Contains(t, "time"):
		return "time"
	case strings.HasPrefix(t, "bool"):
		return "bool"
	}
	return "other"
}

// compatible reports whether columns of types a and b can be joined:
// the same family, or integers with numerics.
func compatible(a, b string) bool {
	fa, fb := typeFamily(a), typeFamily(b)
	switch {
	case fa == "other" || fb == "other" || fa == "time" || fa == "bool" || fa == "real":
		return false
	case fa == fb:
		return true
	}
	return (fa == "int" && fb == "num") || (fa == "num" && fb == "int")
}
