package redact

import (
	"fmt"
	"math/bits"
	"regexp"
	"slices"
	"strings"
	"unsafe"
)

// DefaultReplacement replaces every secret unless Options.Replacement says
// otherwise.
const DefaultReplacement = "[REDACTED]"

// MinSecretLen is the length, in bytes, below which Options.Secrets
// entries are ignored: scrubbing every occurrence of a very short value
// would mangle ordinary text.
const MinSecretLen = 6

// maxPasses bounds the rescans String makes when replacing secrets joins
// text into a new match (rare: a host pattern or literal spanning the
// replacement's edge).
const maxPasses = 8

// Options configure a Redactor made by New.
type Options struct {
	// Patterns are the host's own patterns. The whole match is replaced,
	// or, when the pattern has groups named "secret", only the secret
	// group that took part in the match (so `token=(?P<secret>\w+)` keeps
	// "token="). A pattern must not be nil and must not match the empty
	// string.
	Patterns []*regexp.Regexp
	// Secrets are literal values to scrub wherever they appear, e.g. the
	// host's own API keys and database passwords. Values shorter than
	// MinSecretLen (6) bytes are ignored; empty and duplicate values too.
	// A value occurring in the Replacement is an error.
	Secrets []string
	// Replacement replaces each secret; empty means DefaultReplacement
	// ("[REDACTED]").
	Replacement string
	// NoBuiltins drops the built-in patterns (see the package
	// documentation), leaving only Patterns and Secrets.
	NoBuiltins bool
}

// Redactor scrubs secrets from text, errors, JSON and log records. It is
// immutable after New and safe for concurrent use. A nil *Redactor is
// valid and changes nothing.
type Redactor struct {
	rules   []rule
	secrets []string
	repl    string
	// anchors are the prefilter strings of the built-in rules; first maps
	// a byte to the anchors that can start with it.
	anchors []anchor
	first   [256]uint64
	second  [256]uint64 // the same for the anchors' second byte
	// byAnchor lists, for each anchor, the indexes of its rules.
	byAnchor [][]int
	nBuiltin int
	// keys matches JSON object keys whose string values are secrets.
	keys *regexp.Regexp
}

// rule is one pattern with its prefilter and secret groups.
type rule struct {
	name string
	// re is a host pattern, searched for in the whole text.
	re *regexp.Regexp
	// anchored is a built-in pattern anchored at its start, tried only
	// where one of its anchors occurs; word requires that the match not
	// follow a letter or digit, and start, when set, derives the match
	// start from the anchor's position (-1: no candidate).
	anchored *regexp.Regexp
	word     bool
	start    func(s string, p int) int
	pre      func(s string, x int) bool
	// prefix is a host pattern's literal prefix, which must occur in the
	// text for the pattern to be tried.
	prefix string
	// secret holds the indexes of the groups named "secret".
	secret []int
	// sep is the index of the group named "sep", or -1.
	sep int
	// valid, when set, rejects matches that are not secrets after all.
	valid func(secret, sep string, quoted bool) bool
}

// anchor is a string a built-in rule needs in the text to match.
type anchor struct {
	s    string // lower case when fold
	fold bool   // ASCII case-insensitive
}

// span is a byte range [start, end) of a secret.
type span struct{ start, end int }

var defaultRedactor = mustNew(Options{})

func mustNew(opts Options) *Redactor {
	r, err := New(opts)
	if err != nil {
		panic(err)
	}
	return r
}

// Default returns the redactor with the built-in patterns only. It is
// shared: callers may use it concurrently.
func Default() *Redactor { return defaultRedactor }

// New returns a redactor with the built-in patterns (unless
// opts.NoBuiltins), opts.Patterns and opts.Secrets. It fails when a
// pattern is nil or matches the empty string, or when a secret occurs in
// the replacement.
func New(opts Options) (*Redactor, error) {
	r := &Redactor{repl: opts.Replacement}
	if r.repl == "" {
		r.repl = DefaultReplacement
	}
	if !opts.NoBuiltins {
		for i, b := range builtins {
			ru := newRule(b.name, compiled[i], b.valid)
			ru.anchored, ru.re = ru.re, nil
			ru.word, ru.start, ru.pre = b.word, b.start, b.pre
			r.rules = append(r.rules, ru)
			for _, a := range b.anchors {
				j := r.addAnchor(a)
				r.byAnchor[j] = append(r.byAnchor[j], i)
			}
		}
		r.nBuiltin = len(builtins)
		r.keys = secretKeys
	}
	for i, p := range opts.Patterns {
		if p == nil {
			return nil, fmt.Errorf("redact: Patterns[%d] is nil", i)
		}
		if p.MatchString("") {
			return nil, fmt.Errorf("redact: Patterns[%d] %q matches the empty string: it would match everywhere", i, p.String())
		}
		ru := newRule(fmt.Sprintf("Patterns[%d]", i), p, nil)
		if prefix, _ := p.LiteralPrefix(); len(prefix) >= 2 {
			ru.prefix = prefix
		}
		r.rules = append(r.rules, ru)
	}
	for i, s := range opts.Secrets {
		if len(s) < MinSecretLen || slices.Contains(r.secrets, s) {
			continue
		}
		if strings.Contains(r.repl, s) {
			return nil, fmt.Errorf("redact: Secrets[%d] occurs in the replacement %q: scrubbed text would still contain it", i, r.repl)
		}
		r.secrets = append(r.secrets, s)
	}
	return r, nil
}

// compiled holds the built-in patterns, anchored at their start.
var compiled = func() []*regexp.Regexp {
	if len(builtins) > maxBuiltins {
		panic("redact: too many built-in patterns")
	}
	out := make([]*regexp.Regexp, len(builtins))
	for i, b := range builtins {
		out[i] = regexp.MustCompile(`^(?:` + b.expr + `)`)
	}
	return out
}()

// maxBuiltins bounds the built-in patterns (find tracks them in an
// array).
const maxBuiltins = 16

func newRule(name string, re *regexp.Regexp, valid func(string, string, bool) bool) rule {
	ru := rule{name: name, re: re, sep: -1, valid: valid}
	for i, n := range re.SubexpNames() {
		switch n {
		case "secret":
			ru.secret = append(ru.secret, i)
		case "sep":
			ru.sep = i
		}
	}
	return ru
}

// addAnchor registers a (deduplicated, at least 2 bytes) and returns its
// index.
func (r *Redactor) addAnchor(a anchor) int {
	if i := slices.Index(r.anchors, a); i >= 0 {
		return i
	}
	i := len(r.anchors)
	if i >= 64 {
		panic("redact: more than 64 anchors")
	}
	r.anchors = append(r.anchors, a)
	r.byAnchor = append(r.byAnchor, nil)
	for k, tab := range []*[256]uint64{&r.first, &r.second} {
		c := a.s[k]
		tab[c] |= 1 << i
		if a.fold && 'a' <= c && c <= 'z' {
			tab[c-'a'+'A'] |= 1 << i
		}
	}
	return i
}

// hasAnchorAt reports whether a occurs in s at i.
func hasAnchorAt(s string, i int, a anchor) bool {
	if len(s)-i < len(a.s) {
		return false
	}
	if !a.fold {
		return s[i:i+len(a.s)] == a.s
	}
	for j := 0; j < len(a.s); j++ {
		c, want := s[i+j], a.s[j]
		if c != want && !('a' <= want && want <= 'z' && c|0x20 == want) {
			return false
		}
	}
	return true
}

// find returns the merged, sorted spans of the secrets in s, or nil; with
// first set it stops at the first secret found. It allocates only when
// it finds something.
func (r *Redactor) find(s string, first bool) []span {
	var spans []span
	// done[i] is where built-in rule i's last match ended: a rule is not
	// tried again inside its own match.
	var done [maxBuiltins]int
	for i := 0; i+1 < len(s) && len(r.anchors) > 0; i++ {
		for m := r.first[s[i]] & r.second[s[i+1]]; m != 0; m &= m - 1 {
			j := bits.TrailingZeros64(m)
			if !hasAnchorAt(s, i, r.anchors[j]) {
				continue
			}
			for _, k := range r.byAnchor[j] {
				ru := &r.rules[k]
				x := i
				if ru.start != nil {
					if x = ru.start(s, i); x < 0 {
						continue
					}
				}
				if x < done[k] || ru.word && x > 0 && isAlnum(s[x-1]) || ru.pre != nil && !ru.pre(s, x) {
					continue
				}
				sp, end, ok := ru.matchAt(s, x)
				if !ok {
					continue
				}
				done[k] = end
				if sp.start == sp.end || r.inReplacement(s, sp) {
					continue
				}
				spans = append(spans, sp)
				if first {
					return spans
				}
			}
		}
	}
	for i := r.nBuiltin; i < len(r.rules); i++ {
		ru := &r.rules[i]
		if ru.prefix != "" && !strings.Contains(s, ru.prefix) {
			continue
		}
		if !ru.re.MatchString(s) {
			continue
		}
		for _, m := range ru.re.FindAllStringSubmatchIndex(s, -1) {
			sp, ok := ru.span(s, m)
			if !ok || sp.start == sp.end || r.inReplacement(s, sp) {
				continue
			}
			spans = append(spans, sp)
			if first {
				return spans
			}
		}
	}
	for _, lit := range r.secrets {
		for off := 0; ; {
			j := strings.Index(s[off:], lit)
			if j < 0 {
				break
			}
			sp := span{off + j, off + j + len(lit)}
			spans = append(spans, sp)
			if first {
				return spans
			}
			off = sp.end
		}
	}
	return merge(spans)
}

// window is the text an anchored built-in pattern first sees (the cost of
// Go's backtracking matcher grows with its input); a failed match, or one
// reaching the window's end, is retried on the rest of the text.
const window = 128

// matchAt tries the anchored pattern of ru at s[x:] and returns the
// secret's span and the match's end.
func (ru *rule) matchAt(s string, x int) (sp span, end int, ok bool) {
	hi := min(len(s), x+window)
	for {
		sub := s[x:hi]
		if !ru.anchored.MatchString(sub) {
			if hi < len(s) {
				hi = len(s)
				continue
			}
			return span{}, 0, false
		}
		m := ru.anchored.FindStringSubmatchIndex(sub)
		if m[1] == len(sub) && hi < len(s) {
			hi = len(s)
			continue
		}
		for i := range m {
			if m[i] >= 0 {
				m[i] += x
			}
		}
		sp, ok = ru.span(s, m)
		return sp, m[1], ok
	}
}

// span returns the secret of match m: its secret group, or the whole
// match when the pattern has none.
func (ru *rule) span(s string, m []int) (span, bool) {
	sp := span{m[0], m[1]}
	if len(ru.secret) > 0 {
		found := false
		for _, g := range ru.secret {
			if m[2*g] >= 0 {
				sp, found = span{m[2*g], m[2*g+1]}, true
				break
			}
		}
		if !found {
			return span{}, false
		}
	}
	if ru.valid != nil {
		sep := ""
		if ru.sep >= 0 && m[2*ru.sep] >= 0 {
			sep = s[m[2*ru.sep]:m[2*ru.sep+1]]
		}
		quoted := sp.start > 0 && sp.end < len(s) && (s[sp.start-1] == '"' || s[sp.start-1] == '\'') && s[sp.end] == s[sp.start-1]
		if !ru.valid(s[sp.start:sp.end], sep, quoted) {
			return span{}, false
		}
	}
	return sp, true
}

// inReplacement reports whether sp lies inside an occurrence of the
// replacement: text already scrubbed is left alone.
func (r *Redactor) inReplacement(s string, sp span) bool {
	n := len(r.repl)
	if sp.end-sp.start > n {
		return false
	}
	lo, hi := max(0, sp.end-n), min(len(s), sp.start+n)
	for off := lo; off < hi; {
		j := strings.Index(s[off:hi], r.repl)
		if j < 0 {
			return false
		}
		p := off + j
		if p <= sp.start && sp.end <= p+n {
			return true
		}
		off = p + 1
	}
	return false
}

// merge sorts spans and joins the overlapping ones.
func merge(spans []span) []span {
	if len(spans) < 2 {
		return spans
	}
	slices.SortFunc(spans, func(a, b span) int { return a.start - b.start })
	out := spans[:1]
	for _, sp := range spans[1:] {
		last := &out[len(out)-1]
		if sp.start < last.end {
			last.end = max(last.end, sp.end)
			continue
		}
		out = append(out, sp)
	}
	return out
}

// apply replaces each span of s with the replacement.
func (r *Redactor) apply(s string, spans []span) string {
	var b strings.Builder
	b.Grow(len(s) + len(spans)*len(r.repl))
	prev := 0
	for _, sp := range spans {
		b.WriteString(s[prev:sp.start])
		b.WriteString(r.repl)
		prev = sp.end
	}
	b.WriteString(s[prev:])
	return b.String()
}

// String returns s with every secret replaced. When s holds none it
// returns s itself without allocating.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	for range maxPasses {
		spans := r.find(s, false)
		if len(spans) == 0 {
			return s
		}
		s = r.apply(s, spans)
	}
	return s
}

// Contains reports whether s holds something String would scrub: use it
// in tests and scans ("does this log line leak a secret?").
func (r *Redactor) Contains(s string) bool {
	if r == nil || s == "" {
		return false
	}
	return len(r.find(s, true)) > 0
}

// Func returns r.String as a function, the form agents.Config.Redact,
// hooks.Options.Redact and the audit chain take. On a nil Redactor the
// function returns its argument unchanged.
func (r *Redactor) Func() func(string) string { return r.String }

// Bytes returns b with every secret replaced: b itself when it holds
// none, otherwise a new slice. b is never modified.
func (r *Redactor) Bytes(b []byte) []byte {
	if r == nil || len(b) == 0 {
		return b
	}
	// s aliases b only for the duration of the scan; nothing retains it.
	s := unsafe.String(&b[0], len(b))
	spans := r.find(s, false)
	if len(spans) == 0 {
		return b
	}
	return []byte(r.String(r.apply(s, spans)))
}

// Error returns err with its message scrubbed: nil for nil, err itself
// when the message holds no secret, otherwise an error whose Error is the
// scrubbed message and whose Unwrap returns err, so errors.Is and
// errors.As still see err and everything it wraps. (Unwrap exposes the
// original message: code that prints errors should print the returned
// error, not what it unwraps to.)
func (r *Redactor) Error(err error) error {
	if r == nil || err == nil {
		return err
	}
	msg := err.Error()
	s := r.String(msg)
	if s == msg {
		return err
	}
	return &redactedError{msg: s, err: err}
}

// redactedError carries a scrubbed message and the original error.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }
