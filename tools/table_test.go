package tools_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

func TestTableCSV(t *testing.T) {
	t.Parallel()
	tb := tools.Table{
		Columns: []tools.Column{{Name: "region"}, {Name: "n"}, {Name: "avg"}, {Name: "at"}, {Name: "ok"}, {Name: "note"}},
		Rows: [][]any{
			{"EU, north", int64(3), 0.1, time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC), true, nil},
			{`say "hi"`, int64(-1), 1e21, time.Time{}, false, []byte{0xff}},
		},
	}
	got, err := tb.CSV()
	if err != nil {
		t.Fatal(err)
	}
	want := "region,n,avg,at,ok,note\n" +
		"\"EU, north\",3,0.1,2025-01-02T03:04:05Z,true,\n" +
		"\"say \"\"hi\"\"\",-1,1000000000000000000000,0001-01-01T00:00:00Z,false,/w==\n"
	if string(got) != want {
		t.Fatalf("CSV:\n%s\nwant:\n%s", got, want)
	}
	tb.Rows = append(tb.Rows, []any{"short"})
	if _, err := tb.CSV(); err == nil || !strings.Contains(err.Error(), "row 2 has 1 cells for 6 columns") {
		t.Fatalf("ragged row: %v", err)
	}
}

func TestMemoryResultsPerSessionAndEviction(t *testing.T) {
	t.Parallel()
	r := tools.NewMemoryResults(2)
	a := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t1", SessionID: "s1"})
	b := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t2", SessionID: "s1"})
	for i := range 3 {
		name, err := r.Put(a, tools.Table{Columns: []tools.Column{{Name: "i"}}, Rows: [][]any{{int64(i)}}})
		if err != nil || name != fmt.Sprintf("result_%d", i+1) {
			t.Fatalf("put %d: %q %v", i, name, err)
		}
	}
	names, _ := r.List(a)
	if strings.Join(names, ",") != "result_2,result_3" {
		t.Fatalf("names after eviction: %v", names)
	}
	if _, err := r.Get(a, "result_1"); !errors.Is(err, domain.ErrNotFound) || !strings.Contains(err.Error(), "result_2") {
		t.Fatalf("evicted get: %v", err)
	}
	if _, err := r.Get(b, "result_3"); !errors.Is(err, domain.ErrNotFound) {
		t.Fatalf("other tenant saw the table: %v", err)
	}
	got, err := r.Get(a, "result_3")
	if err != nil || got.Rows[0][0] != int64(2) {
		t.Fatalf("get: %+v %v", got, err)
	}
	// An explicit name replaces the table of that name and moves it last.
	if _, err := r.Put(a, tools.Table{Name: "result_2"}); err != nil {
		t.Fatal(err)
	}
	names, _ = r.List(a)
	if strings.Join(names, ",") != "result_3,result_2" {
		t.Fatalf("names after replace: %v", names)
	}
	if _, err := r.Put(a, tools.Table{Name: "bad name"}); !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("bad name: %v", err)
	}
}

func TestMemoryResultsConcurrent(t *testing.T) {
	t.Parallel()
	r := tools.NewMemoryResults(1000)
	ctx := agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t", SessionID: "s"})
	var wg sync.WaitGroup
	seen := sync.Map{}
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, err := r.Put(ctx, tools.Table{})
			if err != nil {
				t.Error(err)
			}
			if _, dup := seen.LoadOrStore(name, true); dup {
				t.Errorf("name %s given twice", name)
			}
		}()
	}
	wg.Wait()
	names, _ := r.List(ctx)
	if len(names) != 50 {
		t.Fatalf("%d names", len(names))
	}
}

func TestFormatSize(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]string{0: "0 bytes", 1023: "1023 bytes", 1024: "1 KB", 1535: "1 KB", 1536: "2 KB", 3 << 20: "3.0 MB", 1<<20 + 1<<19: "1.5 MB"} {
		if got := tools.FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", n, got, want)
		}
	}
}
