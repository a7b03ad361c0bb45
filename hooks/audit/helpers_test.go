package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/hooks/audit"
)

var tenants = []string{"acme", "globex", "initech"}

// clock returns a Now that advances one second (and a few microseconds)
// per call.
func clock() func() time.Time {
	var n atomic.Int64
	base := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	return func() time.Time {
		i := n.Add(1)
		return base.Add(time.Duration(i)*time.Second + time.Duration(i)*1234*time.Nanosecond)
	}
}

// record is one recorded entry, where it went.
type record struct {
	tenant string
	seq    uint64
	entry  audit.Entry
}

// buildChain records n entries over the three tenants (uneven: acme gets
// the most), with every field set and varied data, and returns them in
// recording order.
func buildChain(t testing.TB, rec *audit.Recorder, n int) []record {
	t.Helper()
	ctx := context.Background()
	var out []record
	for i := range n {
		tenant := tenants[(i*i+i/3)%len(tenants)]
		var data any
		switch i % 4 {
		case 0:
			data = map[string]any{"text": fmt.Sprintf("What was revenue in month %d?", i)}
		case 1:
			data = map[string]any{"sql": fmt.Sprintf("SELECT sum(total) FROM sales.orders WHERE region = 'r%d'", i), "rows": i, "truncated": i%3 == 0}
		case 2:
			data = map[string]any{"tool": "sql_query", "arguments": map[string]any{"limit": i, "query": "SELECT 1"}}
		default:
			data = map[string]any{"artifact_id": fmt.Sprintf("a%d", i), "sha256": "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "size": 1 << 40, "cost_usd": 0.0125}
		}
		b, err := json.Marshal(data)
		if err != nil {
			t.Fatal(err)
		}
		e, err := rec.Record(ctx, tenant, audit.Entry{
			Type:   []string{audit.TypeQuestion, audit.TypeSQL, audit.TypeToolCall, audit.TypeArtifact}[i%4],
			UserID: "u" + tenant, SessionID: fmt.Sprintf("s%d", i/5), MessageID: fmt.Sprintf("m%d", i/2), RunID: fmt.Sprintf("r%d", i/2),
			Data: b,
		})
		if err != nil {
			t.Fatalf("Record %d: %v", i, err)
		}
		out = append(out, record{tenant, e.Seq, e})
	}
	return out
}

// perTenant groups records by tenant, in seq order.
func perTenant(rs []record) map[string][]audit.Entry {
	m := map[string][]audit.Entry{}
	for _, r := range rs {
		m[r.tenant] = append(m[r.tenant], r.entry)
	}
	return m
}

// wantBreak checks that err is a *BreakError of tenant at seq.
func wantBreak(t *testing.T, err error, tenant string, seq uint64) {
	t.Helper()
	var be *audit.BreakError
	if !errors.As(err, &be) {
		t.Fatalf("want a break of %s at seq %d, got %v", tenant, seq, err)
	}
	if be.TenantID != tenant || be.Seq != seq {
		t.Fatalf("want a break of %s at seq %d, got %v", tenant, seq, be)
	}
}
