package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/hooks/audit"
)

// jsonlChain records 50 entries into a fresh JSONL log and returns its
// path, the records and the log's lines.
func jsonlChain(t *testing.T) (string, []record, [][]byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := audit.New(sink, audit.Options{Now: clock()})
	if err != nil {
		t.Fatal(err)
	}
	rs := buildChain(t, rec, 50)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(b, []byte("\n"))
	if len(lines[len(lines)-1]) == 0 {
		lines = lines[:len(lines)-1]
	}
	if len(lines) != len(rs) {
		t.Fatalf("%d lines for %d entries", len(lines), len(rs))
	}
	return path, rs, lines
}

// verifyFile writes content to a copy of the log (with the original head
// file) in a directory of its own, opens it and verifies tenant.
func verifyFile(t *testing.T, orig string, content []byte, tenant string) error {
	t.Helper()
	return verifyIn(t, t.TempDir(), orig, content, tenant)
}

// verifyIn is verifyFile in dir, overwriting the files of a previous
// call in place (truncating files is slow on some disks).
func verifyIn(t *testing.T, dir, orig string, content []byte, tenant string) error {
	t.Helper()
	path := filepath.Join(dir, "audit.jsonl")
	head, err := os.ReadFile(orig + ".head")
	if err != nil {
		t.Fatal(err)
	}
	overwrite(t, path+".head", head)
	overwrite(t, path, content)
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{NoSync: true})
	if err != nil {
		t.Fatalf("OpenJSONL of a tampered log: %v", err)
	}
	defer sink.Close()
	return audit.VerifyTenant(context.Background(), sink, tenant)
}

func TestJSONLIntact(t *testing.T) {
	t.Parallel()
	path, rs, lines := jsonlChain(t)
	for i, line := range lines {
		var e audit.Entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.TenantID != rs[i].tenant || e.Seq != rs[i].seq || e.Hash != rs[i].entry.Hash {
			t.Fatalf("line %d holds %s/%d, want %s/%d", i+1, e.TenantID, e.Seq, rs[i].tenant, rs[i].seq)
		}
	}
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	ctx := context.Background()
	got, err := sink.Tenants(ctx)
	if err != nil || !slices.Equal(got, tenants) {
		t.Fatalf("Tenants = %v, %v", got, err)
	}
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatalf("VerifyAll of the untouched log: %v", err)
	}
	chains := perTenant(rs)
	for _, tenant := range tenants {
		head, err := sink.Head(ctx, tenant)
		if err != nil {
			t.Fatal(err)
		}
		if want := anchorOf(chains[tenant]); head != want {
			t.Fatalf("head of %s = %+v, want %+v", tenant, head, want)
		}
		var read []audit.Entry
		for e, err := range sink.Entries(ctx, tenant) {
			if err != nil {
				t.Fatal(err)
			}
			read = append(read, e)
		}
		if len(read) != len(chains[tenant]) {
			t.Fatalf("%s: read %d entries, want %d", tenant, len(read), len(chains[tenant]))
		}
		for i := range read {
			w := chains[tenant][i]
			if read[i].Hash != w.Hash || !read[i].Time.Equal(w.Time) || !bytes.Equal(read[i].Data, w.Data) || read[i].RunID != w.RunID {
				t.Fatalf("%s entry %d read back as %+v, want %+v", tenant, i, read[i], w)
			}
		}
	}
}

// TestJSONLTampering edits the log file in every way the audit must catch
// and checks the first broken link VerifyTenant names.
func TestJSONLTampering(t *testing.T) {
	t.Parallel()
	path, rs, lines := jsonlChain(t)
	join := func(ls [][]byte) []byte { return bytes.Join(ls, nil) }
	at := func(i int) (string, uint64) { return rs[i].tenant, rs[i].seq }

	t.Run("flip one byte", func(t *testing.T) {
		t.Parallel()
		// Every byte of a middle line; in every fifth line, the first and
		// last byte and, for every member, the last letter of its name
		// and the first two bytes of its value.
		dir := t.TempDir()
		for li, line := range lines {
			var positions []int
			switch {
			case li == len(lines)/2:
				for i := range line {
					positions = append(positions, i)
				}
			case li%5 == 0 || li == len(lines)-1:
				positions = append(positions, 0, len(line)-1, len(line)-2)
				for _, k := range []string{"data", "hash", "message_id", "prev", "run_id", "seq", "session_id", "tenant_id", "time", "type", "user_id"} {
					i := bytes.Index(line, []byte(`"`+k+`":`))
					if i < 0 {
						t.Fatalf("line %d has no %s: %s", li, k, line)
					}
					v := i + len(k) + 3
					positions = append(positions, v-3, v, v+1)
				}
			}
			tenant, seq := at(li)
			for _, bi := range positions {
				ls := slices.Clone(lines)
				l := slices.Clone(line)
				l[bi] ^= 1
				ls[li] = l
				err := verifyIn(t, dir, path, join(ls), tenant)
				if t.Failed() {
					return
				}
				var be *audit.BreakError
				if !asBreak(err, &be) || be.TenantID != tenant || be.Seq != seq {
					t.Fatalf("byte %d (%q) of line %d (%s seq %d) flipped: got %v", bi, line[bi], li+1, tenant, seq, err)
				}
			}
		}
	})

	// lineOf returns the index of tenant's entry seq.
	lineOf := func(tenant string, seq uint64) int {
		for i, r := range rs {
			if r.tenant == tenant && r.seq == seq {
				return i
			}
		}
		t.Fatalf("no %s seq %d", tenant, seq)
		return -1
	}
	forged := func(tenant string, seq uint64) []byte {
		e := rs[lineOf(tenant, seq)].entry
		e.Data = json.RawMessage(`{"text":"forged"}`)
		h, err := e.ComputeHash()
		if err != nil {
			t.Fatal(err)
		}
		e.Hash = h
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return append(b, '\n')
	}
	lastSeq := map[string]uint64{}
	for _, r := range rs {
		lastSeq[r.tenant] = r.seq
	}
	cases := []struct {
		name    string
		edit    func(ls [][]byte) [][]byte
		tenant  string
		wantSeq uint64
	}{
		{"swap acme 2 and 5", func(ls [][]byte) [][]byte {
			i, j := lineOf("acme", 2), lineOf("acme", 5)
			ls[i], ls[j] = ls[j], ls[i]
			return ls
		}, "acme", 2},
		{"delete globex 3", func(ls [][]byte) [][]byte { return slices.Delete(ls, lineOf("globex", 3), lineOf("globex", 3)+1) }, "globex", 3},
		{"forged acme 4 inserted before the real one", func(ls [][]byte) [][]byte {
			return slices.Insert(ls, lineOf("acme", 4), forged("acme", 4))
		}, "acme", 4},
		{"forged initech 2 inserted after the real one", func(ls [][]byte) [][]byte {
			return slices.Insert(ls, lineOf("initech", 2)+1, forged("initech", 2))
		}, "initech", 2},
		{"truncate the end (acme)", func(ls [][]byte) [][]byte { return ls[:lineOf("acme", lastSeq["acme"]-1)] }, "acme", lastSeq["acme"] - 1},
		{"truncate the last line", func(ls [][]byte) [][]byte { return ls[:len(ls)-1] }, rs[len(rs)-1].tenant, rs[len(rs)-1].seq},
		{"truncate half a line", func(ls [][]byte) [][]byte {
			last := ls[len(ls)-1]
			ls[len(ls)-1] = last[:len(last)/2]
			return ls
		}, rs[len(rs)-1].tenant, rs[len(rs)-1].seq},
		{"truncate the start (globex)", func(ls [][]byte) [][]byte { return ls[lineOf("globex", 2):] }, "globex", 1},
		{"empty log", func(ls [][]byte) [][]byte { return nil }, "initech", 1},
		{"blank line inserted (harmless)", func(ls [][]byte) [][]byte { return slices.Insert(ls, 3, []byte("\n")) }, "acme", 0},
		{"lines of other tenants reordered (harmless)", func(ls [][]byte) [][]byte {
			i, j := lineOf("globex", 1), lineOf("initech", 1)
			ls[i], ls[j] = ls[j], ls[i]
			return ls
		}, "acme", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			err := verifyFile(t, path, join(c.edit(slices.Clone(lines))), c.tenant)
			if c.wantSeq == 0 {
				if err != nil {
					t.Fatalf("want no break, got %v", err)
				}
				return
			}
			wantBreak(t, err, c.tenant, c.wantSeq)
		})
	}
	// The original log is untouched and verifies.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, tenant := range tenants {
		if err := verifyFile(t, path, b, tenant); err != nil {
			t.Fatalf("untouched log, %s: %v", tenant, err)
		}
	}
}

func asBreak(err error, be **audit.BreakError) bool {
	if err == nil {
		return false
	}
	return errors.As(err, be)
}

// TestJSONLRestart reopens a log: the chains continue from where they
// ended; after the log lost its end, new entries continue after the head
// and the gap stays visible.
func TestJSONLRestart(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	appendN := func(n int) {
		sink, err := audit.OpenJSONL(path, audit.JSONLOptions{})
		if err != nil {
			t.Fatal(err)
		}
		defer sink.Close()
		rec, err := audit.New(sink, audit.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for range n {
			if _, err := rec.Record(ctx, "acme", audit.Entry{Type: "note"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendN(5)
	appendN(5)
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if head, _ := sink.Head(ctx, "acme"); head.Seq != 10 {
		t.Fatalf("head after two runs: %+v, want seq 10", head)
	}
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatal(err)
	}
	sink.Close()

	// Cut the last three entries, as an attacker would.
	b, _ := os.ReadFile(path)
	ls := bytes.SplitAfter(b, []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(ls[:7], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	appendN(1)
	sink, err = audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	if head, _ := sink.Head(ctx, "acme"); head.Seq != 11 {
		t.Fatalf("head after truncation and one more: %+v, want seq 11", head)
	}
	wantBreak(t, audit.VerifyAll(ctx, sink), "acme", 8)
}

// TestJSONLCrashRecovery: a log whose head file lags (a crash between
// the line and the head file) verifies and continues; a torn last line
// is terminated so later entries stay readable.
func TestJSONLCrashRecovery(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "audit.jsonl")
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, _ := audit.New(sink, audit.Options{})
	for range 3 {
		if _, err := rec.Record(ctx, "acme", audit.Entry{Type: "note"}); err != nil {
			t.Fatal(err)
		}
	}
	oldHead, _ := os.ReadFile(path + ".head")
	if _, err := rec.Record(ctx, "acme", audit.Entry{Type: "note"}); err != nil {
		t.Fatal(err)
	}
	sink.Close()
	if err := os.WriteFile(path+".head", oldHead, 0o600); err != nil { // the head file lags by one
		t.Fatal(err)
	}
	sink, err = audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatalf("lagging head file: %v", err)
	}
	if head, _ := sink.Head(ctx, "acme"); head.Seq != 4 {
		t.Fatalf("head recovered as %+v, want seq 4", head)
	}
	sink.Close()

	// A torn write: half a line of globex at the end.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"data":{},"hash":"12`)
	f.Close()
	sink, err = audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	rec, _ = audit.New(sink, audit.Options{})
	if e, err := rec.Record(ctx, "acme", audit.Entry{Type: "note"}); err != nil || e.Seq != 5 {
		t.Fatalf("record after a torn line: %+v, %v", e, err)
	}
	// The torn line names no tenant: it breaks every chain it might
	// belong to, where it stands; acme's chain is intact before it.
	wantBreak(t, audit.VerifyTenant(ctx, sink, "acme"), "acme", 5)
	b, _ := os.ReadFile(path)
	if ls := strings.SplitAfter(string(b), "\n"); len(ls) != 7 || ls[4] != `{"data":{},"hash":"12`+"\n" || ls[6] != "" {
		t.Fatalf("log after a torn line:\n%s", b)
	}
}

func TestJSONLConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	// Two Recorders on one sink: the sink, not a Recorder, orders appends.
	recs := make([]*audit.Recorder, 2)
	for i := range recs {
		recs[i], _ = audit.New(sink, audit.Options{})
	}
	const workers, each = 8, 30
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				tenant := tenants[(w+i)%len(tenants)]
				if _, err := recs[w%2].Record(ctx, tenant, audit.Entry{Type: "note", Data: json.RawMessage(fmt.Sprintf(`{"w":%d,"i":%d}`, w, i))}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	// Verify while appending: a reader sees a consistent prefix.
	for range 5 {
		if err := audit.VerifyAll(ctx, sink); err != nil {
			t.Errorf("VerifyAll during appends: %v", err)
		}
	}
	wg.Wait()
	if err := audit.VerifyAll(ctx, sink); err != nil {
		t.Fatal(err)
	}
	var total uint64
	for _, tenant := range tenants {
		h, _ := sink.Head(ctx, tenant)
		total += h.Seq
	}
	if total != workers*each {
		t.Fatalf("heads sum to %d entries, want %d", total, workers*each)
	}
}

func TestOpenJSONLErrors(t *testing.T) {
	t.Parallel()
	if _, err := audit.OpenJSONL("", audit.JSONLOptions{}); err == nil {
		t.Error("empty path accepted")
	}
	if _, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "missing", "audit.jsonl"), audit.JSONLOptions{}); err == nil {
		t.Error("path in a missing directory accepted")
	}
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	os.WriteFile(path+".head", []byte("not json"), 0o600)
	if _, err := audit.OpenJSONL(path, audit.JSONLOptions{}); err == nil || !strings.Contains(err.Error(), "head file") {
		t.Errorf("corrupt head file: %v", err)
	}
	sink, err := audit.OpenJSONL(filepath.Join(t.TempDir(), "a.jsonl"), audit.JSONLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sink.Close()
	rec, _ := audit.New(sink, audit.Options{})
	if _, err := rec.Record(context.Background(), "acme", audit.Entry{Type: "note"}); err == nil || !strings.Contains(err.Error(), "closed") {
		t.Errorf("append after Close: %v", err)
	}
}

// overwrite makes the file at path hold content.
func overwrite(t *testing.T, path string, content []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(content, 0); err != nil {
		t.Fatal(err)
	}
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != int64(len(content)) {
		if err := f.Truncate(int64(len(content))); err != nil {
			t.Fatal(err)
		}
	}
}

// TestJSONLForgedAppend appends a well-formed, correctly linked entry to
// the file behind an open sink's back.
func TestJSONLForgedAppend(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sink.Close()
	rec, _ := audit.New(sink, audit.Options{})
	var last audit.Entry
	for range 3 {
		if last, err = rec.Record(ctx, "acme", audit.Entry{Type: "note"}); err != nil {
			t.Fatal(err)
		}
	}
	f := audit.Entry{TenantID: "acme", Seq: 4, Time: last.Time, Type: "answer", Data: json.RawMessage(`{"text":"forged"}`), Prev: last.Hash}
	f.Hash, _ = f.ComputeHash()
	line, _ := json.Marshal(f)
	w, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(append(line, '\n'))
	w.Close()
	// The sink reads as far as it wrote: the forged line is not even read.
	if err := audit.VerifyTenant(ctx, sink, "acme"); err != nil {
		t.Fatalf("sink's own view: %v", err)
	}
	// The next append lands after it, as the real seq 4: now the forged
	// line is read, and the real 4 after it is a duplicate.
	if _, err := rec.Record(ctx, "acme", audit.Entry{Type: "note"}); err != nil {
		t.Fatal(err)
	}
	wantBreak(t, audit.VerifyTenant(ctx, sink, "acme"), "acme", 4)
}
