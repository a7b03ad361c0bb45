package audit_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/hooks/audit"
)

func memoryChain(t *testing.T) (*audit.Memory, map[string][]audit.Entry) {
	t.Helper()
	m := audit.NewMemory()
	rec, err := audit.New(m, audit.Options{Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	return m, perTenant(buildChain(t, rec, 50))
}

func seqOf(es []audit.Entry) iter.Seq2[audit.Entry, error] {
	return func(yield func(audit.Entry, error) bool) {
		for _, e := range es {
			if !yield(e, nil) {
				return
			}
		}
	}
}

func anchorOf(es []audit.Entry) audit.Anchor {
	last := es[len(es)-1]
	return audit.Anchor{TenantID: last.TenantID, Seq: last.Seq, Hash: last.Hash}
}

func TestVerifyIntactChain(t *testing.T) {
	t.Parallel()
	m, chains := memoryChain(t)
	if len(chains) != 3 {
		t.Fatalf("want 3 tenants, got %d", len(chains))
	}
	total := 0
	for tenant, es := range chains {
		total += len(es)
		for i, e := range es {
			if e.Seq != uint64(i+1) || e.TenantID != tenant {
				t.Fatalf("%s entry %d: seq %d tenant %q", tenant, i, e.Seq, e.TenantID)
			}
		}
		if err := audit.Verify(tenant, seqOf(es), anchorOf(es)); err != nil {
			t.Fatalf("intact chain of %s: %v", tenant, err)
		}
	}
	if total != 50 {
		t.Fatalf("recorded %d entries, want 50", total)
	}
	if err := audit.VerifyAll(context.Background(), m); err != nil {
		t.Fatalf("VerifyAll: %v", err)
	}
}

// TestVerifyTampering changes a copy of acme's chain in every way the
// audit must catch and checks the first broken link Verify names.
func TestVerifyTampering(t *testing.T) {
	t.Parallel()
	_, chains := memoryChain(t)
	orig := chains["acme"]
	n := len(orig)
	if n < 10 {
		t.Fatalf("acme has %d entries, want at least 10", n)
	}
	anchor := anchorOf(orig)
	flip := func(s string, i int) string { b := []byte(s); b[i%len(b)] ^= 1; return string(b) }
	forged := func(seq uint64, prev string) audit.Entry {
		f := orig[seq-1]
		f.Data = json.RawMessage(`{"text":"forged"}`)
		f.Prev = prev
		h, err := f.ComputeHash()
		if err != nil {
			t.Fatal(err)
		}
		f.Hash = h
		return f
	}
	type tc struct {
		name    string
		mutate  func(es []audit.Entry) []audit.Entry
		wantSeq uint64
		reason  string
	}
	var cases []tc
	// One field changed (a single byte where the field is text), at the
	// first, a middle and the last entry.
	for _, at := range []int{0, n / 2, n - 1} {
		seq := uint64(at + 1)
		fields := map[string]func(e *audit.Entry){
			"tenant":  func(e *audit.Entry) { e.TenantID = flip(e.TenantID, 1) },
			"seq":     func(e *audit.Entry) { e.Seq ^= 1 << 10 },
			"time":    func(e *audit.Entry) { e.Time = e.Time.Add(time.Microsecond) },
			"type":    func(e *audit.Entry) { e.Type = flip(e.Type, 0) },
			"user":    func(e *audit.Entry) { e.UserID = flip(e.UserID, 2) },
			"session": func(e *audit.Entry) { e.SessionID = flip(e.SessionID, 1) },
			"message": func(e *audit.Entry) { e.MessageID = flip(e.MessageID, 1) },
			"run":     func(e *audit.Entry) { e.RunID = flip(e.RunID, 1) },
			"prev":    func(e *audit.Entry) { e.Prev = flip(e.Prev, 63) },
			"hash":    func(e *audit.Entry) { e.Hash = flip(e.Hash, 7) },
		}
		for name, f := range fields {
			cases = append(cases, tc{fmt.Sprintf("%s of seq %d", name, seq), func(es []audit.Entry) []audit.Entry { f(&es[at]); return es }, seq, ""})
		}
		// Every byte of Data.
		for i := range len(orig[at].Data) {
			cases = append(cases, tc{fmt.Sprintf("data byte %d of seq %d", i, seq), func(es []audit.Entry) []audit.Entry {
				d := slices.Clone(es[at].Data)
				d[i] ^= 1
				es[at].Data = d
				return es
			}, seq, ""})
		}
	}
	cases = append(cases,
		tc{"swap 3 and 7", func(es []audit.Entry) []audit.Entry { es[2], es[6] = es[6], es[2]; return es }, 3, "found seq 7"},
		tc{"swap last two", func(es []audit.Entry) []audit.Entry { es[n-2], es[n-1] = es[n-1], es[n-2]; return es }, uint64(n - 1), "found seq"},
		tc{"delete 5", func(es []audit.Entry) []audit.Entry { return slices.Delete(es, 4, 5) }, 5, "gap"},
		tc{"delete 1", func(es []audit.Entry) []audit.Entry { return es[1:] }, 1, "gap"},
		tc{"forged 6 before the real 6", func(es []audit.Entry) []audit.Entry {
			return slices.Insert(es, 5, forged(6, es[4].Hash))
		}, 6, "duplicate"},
		tc{"forged 6 replacing the real 6", func(es []audit.Entry) []audit.Entry {
			es[5] = forged(6, es[4].Hash)
			return es
		}, 7, "prev does not match"},
		tc{"forged entry appended with a wrong seq", func(es []audit.Entry) []audit.Entry {
			return append(es, forged(uint64(n), es[n-1].Hash))
		}, uint64(n), "duplicate"},
		tc{"truncate the end by 1", func(es []audit.Entry) []audit.Entry { return es[:n-1] }, uint64(n), "removed from the end"},
		tc{"truncate the end by 4", func(es []audit.Entry) []audit.Entry { return es[:n-4] }, uint64(n - 3), "removed from the end"},
		tc{"everything deleted", func(es []audit.Entry) []audit.Entry { return nil }, 1, "removed from the end"},
		tc{"truncate the start", func(es []audit.Entry) []audit.Entry { return es[3:] }, 1, "found seq 4"},
		tc{"entry of another tenant", func(es []audit.Entry) []audit.Entry { es[2] = chains["globex"][2]; return es }, 3, "belongs to tenant"},
		tc{"rehashed chain diverging from the anchor", func(es []audit.Entry) []audit.Entry {
			// Rewrite the last entry and reseal it: only the anchor shows it.
			es[n-1] = forged(uint64(n), es[n-2].Hash)
			return es
		}, uint64(n), "head anchor"},
		tc{"first prev not zero", func(es []audit.Entry) []audit.Entry { es[0] = forged(1, strings.Repeat("1", 64)); return es }, 1, "zero hash"},
	)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := c.mutate(slices.Clone(orig))
			err := audit.Verify("acme", seqOf(es), anchor)
			wantBreak(t, err, "acme", c.wantSeq)
			if c.reason != "" && !strings.Contains(err.Error(), c.reason) {
				t.Errorf("reason %q does not mention %q", err, c.reason)
			}
		})
	}
	// The untouched chain still verifies: the cases changed copies.
	if err := audit.Verify("acme", seqOf(orig), anchor); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyReadErrors(t *testing.T) {
	t.Parallel()
	_, chains := memoryChain(t)
	es := chains["globex"]
	withErr := func(at int, err error) iter.Seq2[audit.Entry, error] {
		return func(yield func(audit.Entry, error) bool) {
			for i, e := range es {
				if i == at {
					if !yield(audit.Entry{}, err) {
						return
					}
					continue
				}
				if !yield(e, nil) {
					return
				}
			}
		}
	}
	// A corrupt record breaks the chain where it stands.
	err := audit.Verify("globex", withErr(3, errors.Join(audit.ErrCorrupt, errors.New("bad line"))))
	wantBreak(t, err, "globex", 4)
	// Any other error is a failure to read, not a break.
	io := errors.New("disk on fire")
	err = audit.Verify("globex", withErr(3, io))
	var be *audit.BreakError
	if !errors.Is(err, io) || errors.As(err, &be) {
		t.Fatalf("want the read error, got %v", err)
	}
}

// TestHashSpec recomputes an entry's hash from the documented encoding,
// written out by hand, so the documentation is what the code does.
func TestHashSpec(t *testing.T) {
	t.Parallel()
	e := audit.Entry{TenantID: "acme", Seq: 2, Time: time.Date(2026, 3, 1, 9, 30, 0, 123456789, time.UTC),
		Type: "sql", UserID: "ann", SessionID: "s1", MessageID: "", RunID: "r1",
		Data: json.RawMessage(`{ "sql": "SELECT 1", "rows": 1, "a": [1.50, "é"] }`), Prev: audit.ZeroHash}
	doc := `{"data":{"a":[1.5,"é"],"rows":1,"sql":"SELECT 1"},"message_id":"","prev":"` + audit.ZeroHash +
		`","run_id":"r1","seq":2,"session_id":"s1","tenant_id":"acme","time":"2026-03-01T09:30:00.123456Z","type":"sql","user_id":"ann"}`
	sum := sha256.Sum256([]byte(doc))
	got, err := e.ComputeHash()
	if err != nil {
		t.Fatal(err)
	}
	if want := hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("hash %s, want %s over %s", got, want, doc)
	}
	// The JSON form is the same object plus the hash.
	e.Hash = got
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	wantLine := strings.Replace(doc, `"message_id"`, `"hash":"`+got+`","message_id"`, 1)
	if string(b) != wantLine {
		t.Fatalf("JSON form\n%s\nwant\n%s", b, wantLine)
	}
	var back audit.Entry
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if h, _ := back.ComputeHash(); h != got || back.Hash != got || !back.Time.Equal(e.Time.Truncate(time.Microsecond)) {
		t.Fatalf("round trip changed the entry: %+v", back)
	}
}

func TestUnmarshalStrict(t *testing.T) {
	t.Parallel()
	good := `{"data":{},"hash":"h","message_id":"","prev":"p","run_id":"","seq":1,"session_id":"","tenant_id":"t","time":"2026-03-01T09:30:00.000000Z","type":"x","user_id":""}`
	var e audit.Entry
	if err := json.Unmarshal([]byte(good), &e); err != nil {
		t.Fatalf("good line: %v", err)
	}
	for name, line := range map[string]string{
		"unknown member":     strings.Replace(good, `"type"`, `"extra":1,"type"`, 1),
		"missing member":     strings.Replace(good, `,"user_id":""`, ``, 1),
		"missing seq":        strings.Replace(good, `"seq":1,`, ``, 1),
		"time not canonical": strings.Replace(good, `09:30:00.000000Z`, `09:30:00Z`, 1),
		"time with offset":   strings.Replace(good, `09:30:00.000000Z`, `09:30:00.000000+00:00`, 1),
		"negative seq":       strings.Replace(good, `"seq":1`, `"seq":-1`, 1),
	} {
		if err := json.Unmarshal([]byte(line), &e); err == nil {
			t.Errorf("%s: decoded %s", name, line)
		}
	}
}
