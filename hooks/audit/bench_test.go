package audit_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/hooks/audit"
)

// BenchmarkRecord measures one Record of a typical entry (a SQL
// statement, ~150 bytes of data) into each sink.
func BenchmarkRecord(b *testing.B) {
	data := json.RawMessage(`{"call_id":"c1","dialect":"postgres","rows":42,"sql":"SELECT region, sum(total) FROM sales.orders WHERE created_at >= '2025-01-01' GROUP BY 1","tool":"sql_query","truncated":false}`)
	e := audit.Entry{Type: audit.TypeSQL, UserID: "ann", SessionID: "s1", MessageID: "m1", RunID: "r1", Data: data}
	run := func(b *testing.B, sink audit.Sink, opts audit.Options) {
		rec, err := audit.New(sink, opts)
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := rec.Record(ctx, "acme", e); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("memory", func(b *testing.B) { run(b, audit.NewMemory(), audit.Options{}) })
	b.Run("memory-redact", func(b *testing.B) {
		run(b, audit.NewMemory(), audit.Options{Redact: func(s string) string { return strings.ReplaceAll(s, "secret", "***") }})
	})
	for _, c := range []struct {
		name string
		opts audit.JSONLOptions
	}{{"jsonl-nosync", audit.JSONLOptions{NoSync: true}}, {"jsonl-fsync", audit.JSONLOptions{}}} {
		b.Run(c.name, func(b *testing.B) {
			sink, err := audit.OpenJSONL(filepath.Join(b.TempDir(), "audit.jsonl"), c.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer sink.Close()
			run(b, sink, audit.Options{})
		})
	}
}
