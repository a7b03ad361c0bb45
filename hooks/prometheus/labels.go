package prometheus

import (
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// otherLabel is the value every label folds into when the event's value
// is not in the configured or allowed set.
const otherLabel = "other"

// noneLabel is the tenant label of events without a tenant.
const noneLabel = "none"

// labeler maps an event's raw value to a bounded label value: values of
// the known set map to themselves, up to max further distinct values are
// accepted first come, first served, and everything else is "other". The
// returned strings are owned by the labeler (never the event's), so they
// can key long-lived caches.
//
// Lookups take no lock and one map look-up: all values (known and
// accepted) sit in an immutable map replaced on insert (copy-on-write),
// and inserts stop at max.
type labeler struct {
	known int // the number of known values (the first entries of all)
	max   int
	mu    sync.Mutex
	all   atomic.Pointer[map[string]string]
}

// newLabeler returns a labeler over known values (plus "other" itself),
// accepting max extra distinct values.
func newLabeler(max int, known ...string) *labeler {
	return newLabelerMap(max, nil, known...)
}

// newLabelerMap is newLabeler with extra known mappings (raw value to
// label), e.g. the empty tenant to "none".
func newLabelerMap(max int, mapped map[string]string, known ...string) *labeler {
	all := make(map[string]string, len(known)+len(mapped)+1)
	for _, k := range known {
		k = strings.Clone(k)
		all[k] = k
	}
	for k, v := range mapped {
		all[k] = v
	}
	all[otherLabel] = otherLabel
	l := &labeler{known: len(all), max: max}
	l.all.Store(&all)
	return l
}

// label returns the label value for v.
func (l *labeler) label(v string) string {
	m := *l.all.Load()
	if s, ok := m[v]; ok {
		return s
	}
	if len(m)-l.known >= l.max {
		return otherLabel
	}
	return l.add(v)
}

// add inserts v into the dynamic set if there is room; it is the slow
// path, taken at most max times.
func (l *labeler) add(v string) string {
	// Prometheus panics on label values that are not valid UTF-8.
	if v == "" || !utf8.ValidString(v) {
		return otherLabel
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := *l.all.Load()
	if s, ok := old[v]; ok {
		return s
	}
	if len(old)-l.known >= l.max {
		return otherLabel
	}
	nm := make(map[string]string, len(old)+1)
	for k, s := range old {
		nm[k] = s
	}
	s := strings.Clone(v)
	nm[s] = s
	l.all.Store(&nm)
	return s
}

// lazy caches the metric children of one label combination, built on
// first use by build. Keys are made of labeler outputs, so the cache is
// as bounded as the labels. Reads take no lock (copy-on-write map).
type lazy[K comparable, V any] struct {
	build func(K) V
	mu    sync.Mutex
	m     atomic.Pointer[map[K]V]
}

// get returns the children of k, building them the first time.
func (c *lazy[K, V]) get(k K) V {
	if p := c.m.Load(); p != nil {
		if v, ok := (*p)[k]; ok {
			return v
		}
	}
	return c.slow(k)
}

func (c *lazy[K, V]) slow(k K) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	var old map[K]V
	if p := c.m.Load(); p != nil {
		old = *p
		if v, ok := old[k]; ok {
			return v
		}
	}
	nm := make(map[K]V, len(old)+1)
	for key, v := range old {
		nm[key] = v
	}
	v := c.build(k)
	nm[k] = v
	c.m.Store(&nm)
	return v
}
