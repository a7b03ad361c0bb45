package domaintest

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// resultData returns a result's JSON: compact, keys out of order and a \u
// escape, so a store that re-encodes JSON changes it.
func resultData(tag string) []byte {
	return []byte(`{"rows":[[1,"caf\u00e9",null]],"columns":[{"name":"n","type":"int8"}],"name":"` + tag + `"}`)
}

// newResult returns an unsaved result of sess with every field set but
// Name.
func newResult(sess domain.Session, tag string, created time.Time) domain.StoredResult {
	return domain.StoredResult{
		TenantID:  sess.TenantID,
		SessionID: sess.ID,
		Data:      resultData(tag),
		CreatedAt: created,
	}
}

// putResult stores r and returns it with the name the store gave it.
func (e *env) putResult(r domain.StoredResult) domain.StoredResult {
	e.t.Helper()
	in := r
	name, err := e.Results.PutResult(e.ctx, &in)
	must(e.t, "PutResult", err)
	if r.Name != "" && name != r.Name {
		e.t.Errorf("PutResult of %q returned the name %q", r.Name, name)
	}
	r.Name = name
	return r
}

// checkResults fails the test unless the session's results are want, in
// that order, each reading back unchanged.
func (e *env) checkResults(what string, sess domain.Session, want ...domain.StoredResult) {
	e.t.Helper()
	names, err := e.Results.ListResults(e.ctx, sess.TenantID, sess.ID)
	must(e.t, "ListResults", err)
	wantNames := make([]string, len(want))
	for i, w := range want {
		wantNames[i] = w.Name
		got, err := e.Results.GetResult(e.ctx, sess.TenantID, sess.ID, w.Name)
		if err != nil {
			e.t.Errorf("%s: GetResult %q: %v", what, w.Name, err)
			continue
		}
		equal(e.t, what+": GetResult "+w.Name, *got, w, canonResult)
	}
	equalIDs(e.t, what+": ListResults (oldest first)", names, wantNames)
}

// checkGone fails the test unless none of names is a result of sess.
func (e *env) checkGone(what string, sess domain.Session, names ...string) {
	e.t.Helper()
	for _, n := range names {
		_, err := e.Results.GetResult(e.ctx, sess.TenantID, sess.ID, n)
		wantErr(e.t, what+": GetResult "+n, err, domain.ErrNotFound)
	}
}

func (s *suite) resultTests(t *testing.T) {
	keep := s.opts.ResultsKeep

	s.run(t, "AutoNames", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		var want []domain.StoredResult
		for i := range min(keep, 3) {
			r := e.putResult(newResult(sess, strconv.Itoa(i), at(time.Duration(i)*time.Second)))
			if wantName := "result_" + strconv.Itoa(i+1); r.Name != wantName {
				t.Errorf("PutResult %d without a name returned %q, want %q", i+1, r.Name, wantName)
			}
			want = append(want, r)
		}
		e.checkResults("after automatic names", sess, want...)
	})

	s.run(t, "PerSession", func(t *testing.T, e *env) {
		one := e.createSession(tenantA, ownerA, "One", at(0), at(0))
		two := e.createSession(tenantA, ownerA, "Two", at(0), at(0))
		r1 := e.putResult(newResult(one, "one", at(time.Second)))
		r2 := e.putResult(newResult(two, "two", at(2*time.Second)))
		if r1.Name != "result_1" || r2.Name != "result_1" {
			t.Errorf("first results of two sessions are named %q and %q, want result_1 each", r1.Name, r2.Name)
		}
		e.checkResults("first session", one, r1)
		e.checkResults("second session", two, r2)
	})

	s.run(t, "ExplicitNameReplacesAndCountsAsNewest", func(t *testing.T, e *env) {
		if keep < 2 {
			t.Skipf("needs a store that keeps 2 results per session or more, this one keeps %d", keep)
		}
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		named := newResult(sess, "first", at(time.Second))
		named.Name = "q3_sales"
		e.putResult(named)
		auto := e.putResult(newResult(sess, "auto", at(2*time.Second)))
		replaced := newResult(sess, "second", at(3*time.Second))
		replaced.Name = "q3_sales"
		replaced = e.putResult(replaced)
		e.checkResults("after the replacement", sess, auto, replaced)
		// Fill the session: the automatic result, now the oldest, goes
		// first; the replaced one stays.
		want := []domain.StoredResult{replaced}
		for i := range keep - 1 {
			want = append(want, e.putResult(newResult(sess, "fill"+strconv.Itoa(i), at(time.Duration(10+i)*time.Second))))
		}
		e.checkResults("after filling the session", sess, want...)
		e.checkGone("after filling the session", sess, auto.Name)
	})

	s.run(t, "AutoNameSkipsTakenNames", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		named := newResult(sess, "chosen", at(time.Second))
		named.Name = "result_1"
		named = e.putResult(named)
		auto := e.putResult(newResult(sess, "auto", at(2*time.Second)))
		if auto.Name == "result_1" || !strings.HasPrefix(auto.Name, "result_") {
			t.Errorf("PutResult without a name returned %q, want a result_N other than the chosen result_1", auto.Name)
		}
		if keep >= 2 {
			e.checkResults("after an automatic name", sess, named, auto)
		}
	})

	s.run(t, "EvictsOldestAndNeverReusesNames", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		var all []domain.StoredResult
		for i := range keep + 3 {
			all = append(all, e.putResult(newResult(sess, strconv.Itoa(i), at(time.Duration(i)*time.Second))))
		}
		for i, r := range all {
			if want := "result_" + strconv.Itoa(i+1); r.Name != want {
				t.Errorf("PutResult %d returned %q, want %q", i+1, r.Name, want)
			}
		}
		e.checkResults(fmt.Sprintf("after %d results with a cap of %d", keep+3, keep), sess, all[3:]...)
		e.checkGone("evicted", sess, all[0].Name, all[1].Name, all[2].Name)
		next := e.putResult(newResult(sess, "next", at(time.Hour)))
		if want := "result_" + strconv.Itoa(keep+4); next.Name != want {
			t.Errorf("PutResult after evictions returned %q, want %q (names are never reused)", next.Name, want)
		}
	})

	s.run(t, "TooLarge", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		limit := s.opts.ResultBytes
		// JSON strings of exactly limit+1 and limit bytes.
		big := newResult(sess, "", at(time.Second))
		big.Data = []byte(`"` + strings.Repeat("x", int(limit-1)) + `"`)
		in := big
		_, err := e.Results.PutResult(e.ctx, &in)
		wantErr(t, fmt.Sprintf("PutResult of %d bytes with a cap of %d", len(big.Data), limit), err, domain.ErrTooLarge)
		named := big
		named.Name = "big"
		in = named
		_, err = e.Results.PutResult(e.ctx, &in)
		wantErr(t, "PutResult of a named result over the cap", err, domain.ErrTooLarge)
		e.checkResults("after the rejected results", sess)
		e.checkGone("after the rejected results", sess, "result_1", "big")

		fits := big
		fits.Data = fits.Data[1:]
		fits = e.putResult(fits)
		if fits.Name != "result_1" {
			t.Errorf("PutResult after rejected ones returned %q, want result_1 (a rejected result stores nothing)", fits.Name)
		}
		e.checkResults(fmt.Sprintf("after a result of exactly %d bytes", limit), sess, fits)
	})

	s.run(t, "UnknownSession", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		e.putResult(newResult(sess, "kept", at(time.Second)))
		unknown := domain.Session{ID: domain.NewID(), TenantID: tenantA}
		in := newResult(unknown, "x", at(time.Second))
		_, err := e.Results.PutResult(e.ctx, &in)
		wantErr(t, "PutResult in an unknown session", err, domain.ErrNotFound)
		_, err = e.Results.GetResult(e.ctx, tenantA, unknown.ID, "result_1")
		wantErr(t, "GetResult in an unknown session", err, domain.ErrNotFound)
		_, err = e.Results.ListResults(e.ctx, tenantA, unknown.ID)
		wantErr(t, "ListResults of an unknown session", err, domain.ErrNotFound)
	})

	s.run(t, "GetUnknownName", func(t *testing.T, e *env) {
		sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
		_, err := e.Results.GetResult(e.ctx, tenantA, sess.ID, "result_1")
		wantErr(t, "GetResult in an empty session", err, domain.ErrNotFound)
		e.checkResults("empty session", sess)
		r := e.putResult(newResult(sess, "x", at(time.Second)))
		_, err = e.Results.GetResult(e.ctx, tenantA, sess.ID, "result_2")
		wantErr(t, "GetResult of an unknown name", err, domain.ErrNotFound)
		e.checkResults("after the lookups", sess, r)
	})

	s.group(t, "InvalidName", func(t *testing.T) {
		for _, c := range []struct{ name, value string }{
			{"Space", "q3 sales"},
			{"Tab", "q3\tsales"},
			{"NonASCII", "caf\u00e9"},
			{"TooLong", strings.Repeat("r", 129)},
		} {
			s.run(t, c.name, func(t *testing.T, e *env) {
				sess := e.createSession(tenantA, ownerA, "Chat", at(0), at(0))
				r := newResult(sess, "x", at(time.Second))
				r.Name = c.value
				_, err := e.Results.PutResult(e.ctx, &r)
				wantErr(t, fmt.Sprintf("PutResult named %q", c.value), err, domain.ErrInvalid)
				e.checkResults("after the rejected result", sess)
			})
		}
	})
}
