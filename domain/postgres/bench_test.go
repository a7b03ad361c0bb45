package postgres_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/postgres"
	"github.com/bichat-go/bichat/internal/pgtest"
)

// BenchmarkAppendRunEvents measures run-log append throughput on one
// connection (a pool of one), in batches of 1 and 64 events of a typical
// text-delta size. Each batch is one statement (insert + pg_notify, one
// round trip). Reported: events/s.
func BenchmarkAppendRunEvents(b *testing.B) {
	for _, batch := range []int{1, 64} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			p := pgtest.NewPool(b, 1)
			s := newStoreOn(b, p, postgres.Options{})
			repo := s.Repositories().RunEvents
			run, sess, msg := domain.NewID(), domain.NewID(), domain.NewID()
			data := []byte(`{"type":"text_delta","text":"Revenue grew twelve percent in the third quarter."}`)
			evs := make([]domain.RunEvent, batch)
			var seq int64
			ctx := b.Context()
			b.ResetTimer()
			start := time.Now()
			for b.Loop() {
				for i := range evs {
					seq++
					evs[i] = domain.RunEvent{TenantID: "acme", RunID: run, SessionID: sess, MessageID: msg, Seq: seq,
						Type: "text_delta", Time: time.Now(), Data: data}
				}
				if err := repo.AppendRunEvents(ctx, evs...); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(seq)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkNotifyLatency measures how long after an append commits
// through one pool a subscriber on another pool (another Store, as in
// another process) is signalled: append a batch of one, wait for the
// signal. Reported: p50 and p99 of append start to signal, in ms.
func BenchmarkNotifyLatency(b *testing.B) {
	pa, pb := pgtest.NewPool(b, 2), pgtest.NewPool(b, 2)
	writer := newStoreOn(b, pa, postgres.Options{})
	watcher, err := postgres.New(pb, postgres.Options{Schema: writer.Schema()})
	if err != nil {
		b.Fatal(err)
	}
	defer watcher.Close()
	run := domain.NewID()
	ch, stop, err := watcher.Repositories().RunEvents.(domain.RunEventNotifier).SubscribeRunEvents(b.Context(), "acme", run)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()
	repo := writer.Repositories().RunEvents
	var lat []time.Duration
	var seq int64
	b.ResetTimer()
	for b.Loop() {
		seq++
		t0 := time.Now()
		if err := repo.AppendRunEvents(b.Context(), domain.RunEvent{TenantID: "acme", RunID: run, Seq: seq, Type: "text_delta", Data: []byte(`{}`)}); err != nil {
			b.Fatal(err)
		}
		select {
		case <-ch:
		case <-time.After(5 * time.Second):
			b.Fatalf("append %d: no signal within 5s", seq)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	pct := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
}
