package domaintest

import (
	"fmt"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

func (s *suite) runEventTests(t *testing.T) {
	s.run(t, "AppendAndList", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		all := newRunEvents(m, run, 1, 2, 3, 4, 5, 9)
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, all[:3]...))
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, all[3:5]...))
		must(t, "AppendRunEvents after a gap", e.RunEvents.AppendRunEvents(e.ctx, all[5]))
		got, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, run, 0, 0)
		must(t, "ListRunEvents", err)
		equalSlices(t, "ListRunEvents(after 0, limit 0)", got, all, canonRunEvent)
	})

	s.run(t, "ListAfterSeqAndLimit", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run := domain.NewID()
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, 1, 2, 3, 5, 8)...))
		for _, c := range []struct {
			after int64
			limit int
			want  []int64
		}{
			{0, 0, []int64{1, 2, 3, 5, 8}},
			{-1, 0, []int64{1, 2, 3, 5, 8}},
			{2, 0, []int64{3, 5, 8}},
			{3, 0, []int64{5, 8}},
			{4, 0, []int64{5, 8}},
			{8, 0, []int64{}},
			{100, 0, []int64{}},
			{0, 1, []int64{1}},
			{2, 2, []int64{3, 5}},
			{5, 10, []int64{8}},
		} {
			got, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, run, c.after, c.limit)
			must(t, "ListRunEvents", err)
			equalIDs(t, fmt.Sprintf("ListRunEvents(after %d, limit %d)", c.after, c.limit), eventSeqs(got), c.want)
		}
		_, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, run, 0, -1)
		wantErr(t, "ListRunEvents with a negative limit", err, domain.ErrInvalid)
	})

	s.run(t, "UnknownRun", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, domain.NewID(), 1)...))
		got, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, domain.NewID(), 0, 0)
		must(t, "ListRunEvents of an unknown run", err)
		equalIDs(t, "ListRunEvents of an unknown run", eventSeqs(got), []int64{})
	})

	s.run(t, "IsolatedByRun", func(t *testing.T, e *env) {
		_, m := e.seedMessage(tenantA)
		run1, run2 := domain.NewID(), domain.NewID()
		ev1 := newRunEvents(m, run1, 1, 2, 3)
		ev2 := newRunEvents(m, run2, 1, 2)
		// Interleaved appends; each run has its own sequence.
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, ev1[0]))
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, ev2[0]))
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, ev1[1:]...))
		must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, ev2[1:]...))
		for _, c := range []struct {
			run  string
			want []domain.RunEvent
		}{{run1, ev1}, {run2, ev2}} {
			got, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, c.run, 0, 0)
			must(t, "ListRunEvents", err)
			equalSlices(t, "ListRunEvents of run "+c.run, got, c.want, canonRunEvent)
		}
	})

	s.group(t, "Conflict", func(t *testing.T) {
		// The run already holds seqs 1, 2 and 3.
		for _, c := range []struct {
			name string
			seqs []int64
		}{
			{"StoredSeq", []int64{3}},
			{"BelowStored", []int64{2}},
			{"FirstStored", []int64{1, 4}},
			{"LaterInBatchStored", []int64{4, 2}},
			{"DuplicateInBatch", []int64{4, 4}},
			{"DecreasingInBatch", []int64{5, 4}},
			{"DuplicateAtEnd", []int64{4, 5, 5}},
		} {
			s.run(t, c.name, func(t *testing.T, e *env) {
				_, m := e.seedMessage(tenantA)
				run := domain.NewID()
				stored := newRunEvents(m, run, 1, 2, 3)
				must(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, stored...))
				err := e.RunEvents.AppendRunEvents(e.ctx, newRunEvents(m, run, c.seqs...)...)
				wantErr(t, fmt.Sprintf("AppendRunEvents(seqs %v)", c.seqs), err, domain.ErrConflict)
				got, err := e.RunEvents.ListRunEvents(e.ctx, tenantA, run, 0, 0)
				must(t, "ListRunEvents", err)
				equalSlices(t, "events after the rejected batch", got, stored, canonRunEvent)
			})
		}
	})

	s.group(t, "Invalid", func(t *testing.T) {
		for _, c := range []struct {
			name   string
			modify func(evs []domain.RunEvent)
		}{
			{"ZeroSeq", func(evs []domain.RunEvent) { evs[0].Seq = 0 }},
			{"NegativeSeq", func(evs []domain.RunEvent) { evs[0].Seq = -4 }},
			{"EmptyRunID", func(evs []domain.RunEvent) {
				for i := range evs {
					evs[i].RunID = ""
				}
			}},
			{"EmptyTenant", func(evs []domain.RunEvent) {
				for i := range evs {
					evs[i].TenantID = ""
				}
			}},
			{"MixedRuns", func(evs []domain.RunEvent) { evs[1].RunID = domain.NewID() }},
			{"MixedTenants", func(evs []domain.RunEvent) { evs[1].TenantID = tenantB }},
		} {
			s.run(t, c.name, func(t *testing.T, e *env) {
				_, m := e.seedMessage(tenantA)
				run := domain.NewID()
				evs := newRunEvents(m, run, 1, 2)
				c.modify(evs)
				wantErr(t, "AppendRunEvents", e.RunEvents.AppendRunEvents(e.ctx, evs...), domain.ErrInvalid)
				for _, ev := range evs {
					got, err := e.RunEvents.ListRunEvents(e.ctx, ev.TenantID, ev.RunID, -1, 0)
					must(t, "ListRunEvents", err)
					equalIDs(t, "events after the rejected batch", eventSeqs(got), []int64{})
				}
			})
		}
	})
}
