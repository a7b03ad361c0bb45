package domaintest

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

func (s *suite) sessionTests(t *testing.T) {
	s.run(t, "CreateGetRoundTrip", func(t *testing.T, e *env) {
		want := domain.Session{
			ID:        domain.NewID(),
			TenantID:  tenantA,
			OwnerID:   ownerA,
			Title:     "Revenue by région",
			Model:     "model-large",
			CreatedAt: at(time.Hour),
			UpdatedAt: at(2*time.Hour + 345*time.Millisecond),
		}
		in := want
		must(t, "CreateSession", e.Sessions.CreateSession(e.ctx, &in))
		got, err := e.Sessions.GetSession(e.ctx, tenantA, want.ID)
		must(t, "GetSession", err)
		equal(t, "GetSession", *got, want, canonSession)
	})

	s.group(t, "CreateInvalid", func(t *testing.T) {
		cases := []struct {
			name   string
			modify func(*domain.Session)
		}{
			{"EmptyID", func(s *domain.Session) { s.ID = "" }},
			{"MalformedID", func(s *domain.Session) { s.ID = "not-a-uuid" }},
			{"EmptyTenant", func(s *domain.Session) { s.TenantID = "" }},
			{"EmptyOwner", func(s *domain.Session) { s.OwnerID = "" }},
		}
		for _, c := range cases {
			s.run(t, c.name, func(t *testing.T, e *env) {
				in := domain.Session{ID: domain.NewID(), TenantID: tenantA, OwnerID: ownerA, Title: "T", CreatedAt: at(0), UpdatedAt: at(0)}
				c.modify(&in)
				err := e.Sessions.CreateSession(e.ctx, &in)
				wantErr(t, "CreateSession", err, domain.ErrInvalid)
				_, err = e.Sessions.GetSession(e.ctx, in.TenantID, in.ID)
				wantErr(t, "GetSession after failed create", err, domain.ErrNotFound)
			})
		}
	})

	s.run(t, "CreateDuplicateID", func(t *testing.T, e *env) {
		orig := e.createSession(tenantA, ownerA, "Original", at(0), at(0))
		dup := domain.Session{ID: orig.ID, TenantID: tenantA, OwnerID: ownerB, Title: "Duplicate", CreatedAt: at(time.Hour), UpdatedAt: at(time.Hour)}
		wantErr(t, "CreateSession with a used id", e.Sessions.CreateSession(e.ctx, &dup), domain.ErrConflict)
		got, err := e.Sessions.GetSession(e.ctx, tenantA, orig.ID)
		must(t, "GetSession", err)
		equal(t, "session after duplicate create", *got, orig, canonSession)
	})

	s.run(t, "GetUnknown", func(t *testing.T, e *env) {
		e.createSession(tenantA, ownerA, "Other", at(0), at(0))
		_, err := e.Sessions.GetSession(e.ctx, tenantA, domain.NewID())
		wantErr(t, "GetSession of an unknown id", err, domain.ErrNotFound)
	})

	s.run(t, "Update", func(t *testing.T, e *env) {
		orig := e.createSession(tenantA, ownerA, "Before", at(0), at(time.Minute))
		other := e.createSession(tenantA, ownerA, "Untouched", at(0), at(time.Minute))
		upd := domain.Session{
			ID:       orig.ID,
			TenantID: tenantA,
			// Only Title, Model and UpdatedAt may change.
			OwnerID:   ownerB,
			Title:     "After",
			Model:     "model-small",
			CreatedAt: at(99 * time.Hour),
			UpdatedAt: at(3 * time.Hour),
		}
		must(t, "UpdateSession", e.Sessions.UpdateSession(e.ctx, &upd))
		want := orig
		want.Title, want.Model, want.UpdatedAt = "After", "model-small", at(3*time.Hour)
		got, err := e.Sessions.GetSession(e.ctx, tenantA, orig.ID)
		must(t, "GetSession", err)
		equal(t, "session after update", *got, want, canonSession)
		got, err = e.Sessions.GetSession(e.ctx, tenantA, other.ID)
		must(t, "GetSession", err)
		equal(t, "other session after update", *got, other, canonSession)
	})

	s.run(t, "UpdateUnknown", func(t *testing.T, e *env) {
		upd := domain.Session{ID: domain.NewID(), TenantID: tenantA, OwnerID: ownerA, Title: "Ghost", UpdatedAt: at(0)}
		wantErr(t, "UpdateSession of an unknown id", e.Sessions.UpdateSession(e.ctx, &upd), domain.ErrNotFound)
		_, err := e.Sessions.GetSession(e.ctx, tenantA, upd.ID)
		wantErr(t, "GetSession after failed update", err, domain.ErrNotFound)
	})

	s.run(t, "Delete", func(t *testing.T, e *env) {
		gone := e.createSession(tenantA, ownerA, "Gone", at(0), at(0))
		kept := e.createSession(tenantA, ownerA, "Kept", at(0), at(0))
		must(t, "DeleteSession", e.Sessions.DeleteSession(e.ctx, tenantA, gone.ID))
		_, err := e.Sessions.GetSession(e.ctx, tenantA, gone.ID)
		wantErr(t, "GetSession after delete", err, domain.ErrNotFound)
		wantErr(t, "second DeleteSession", e.Sessions.DeleteSession(e.ctx, tenantA, gone.ID), domain.ErrNotFound)
		got, err := e.Sessions.GetSession(e.ctx, tenantA, kept.ID)
		must(t, "GetSession of the other session", err)
		equal(t, "other session", *got, kept, canonSession)
		page, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{})
		must(t, "ListSessions", err)
		equalIDs(t, "ListSessions after delete", sessionIDs(page.Items), []string{kept.ID})
	})

	s.run(t, "ListFiltersByOwner", func(t *testing.T, e *env) {
		a1 := e.createSession(tenantA, ownerA, "A1", at(0), at(1*time.Minute))
		a2 := e.createSession(tenantA, ownerA, "A2", at(0), at(2*time.Minute))
		b1 := e.createSession(tenantA, ownerB, "B1", at(0), at(3*time.Minute))
		e.createSession(tenantB, ownerA, "Other tenant, same owner id", at(0), at(4*time.Minute))
		for _, c := range []struct {
			owner string
			want  []domain.Session
		}{
			{ownerA, []domain.Session{a2, a1}},
			{ownerB, []domain.Session{b1}},
			{"nobody", nil},
		} {
			page, err := e.Sessions.ListSessions(e.ctx, tenantA, c.owner, domain.ListOptions{})
			must(t, "ListSessions", err)
			what := fmt.Sprintf("ListSessions(%s, %s)", tenantA, c.owner)
			equalSlices(t, what, page.Items, c.want, canonSession)
			if page.Total != len(c.want) {
				t.Errorf("%s: Total = %d, want %d", what, page.Total, len(c.want))
			}
		}
	})

	s.run(t, "ListSearch", func(t *testing.T, e *env) {
		q := e.createSession(tenantA, ownerA, "Quarterly Revenue", at(0), at(1*time.Minute))
		r := e.createSession(tenantA, ownerA, "revenue by region", at(0), at(2*time.Minute))
		h := e.createSession(tenantA, ownerA, "Headcount plan", at(0), at(3*time.Minute))
		e.createSession(tenantA, ownerB, "Revenue forecast", at(0), at(4*time.Minute))
		for _, c := range []struct {
			search string
			want   []string
		}{
			{"REVENUE", []string{q.ID, r.ID}},
			{"revenue", []string{q.ID, r.ID}},
			{"  Revenue  ", []string{q.ID, r.ID}},
			{"Y R", []string{q.ID, r.ID}},
			{"COUNT", []string{h.ID}},
			{"zzz", nil},
			{"", []string{q.ID, r.ID, h.ID}},
		} {
			page, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Search: c.search})
			must(t, "ListSessions", err)
			what := fmt.Sprintf("ListSessions(Search: %q)", c.search)
			sameSet(t, what, sessionIDs(page.Items), c.want)
			if page.Total != len(c.want) {
				t.Errorf("%s: Total = %d, want %d", what, page.Total, len(c.want))
			}
		}
	})

	s.run(t, "ListSort", func(t *testing.T, e *env) {
		// Created order 1..4, updated order 3,1,4,2, title order 2,4,1,3.
		s1 := e.createSession(tenantA, ownerA, "Charlie", at(1*time.Hour), at(12*time.Hour))
		s2 := e.createSession(tenantA, ownerA, "Alpha", at(2*time.Hour), at(14*time.Hour))
		s3 := e.createSession(tenantA, ownerA, "Delta", at(3*time.Hour), at(11*time.Hour))
		s4 := e.createSession(tenantA, ownerA, "Bravo", at(4*time.Hour), at(13*time.Hour))
		for _, c := range []struct {
			sort  domain.SortField
			order domain.SortOrder
			want  []domain.Session
		}{
			{"", "", []domain.Session{s2, s4, s1, s3}}, // default: updated desc
			{domain.SortUpdated, domain.Desc, []domain.Session{s2, s4, s1, s3}},
			{domain.SortUpdated, domain.Asc, []domain.Session{s3, s1, s4, s2}},
			{domain.SortCreated, domain.Desc, []domain.Session{s4, s3, s2, s1}},
			{domain.SortCreated, domain.Asc, []domain.Session{s1, s2, s3, s4}},
			{domain.SortTitle, domain.Desc, []domain.Session{s3, s1, s4, s2}},
			{domain.SortTitle, domain.Asc, []domain.Session{s2, s4, s1, s3}},
			{domain.SortTitle, "", []domain.Session{s3, s1, s4, s2}}, // order defaults to desc
		} {
			page, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Sort: c.sort, Order: c.order})
			must(t, "ListSessions", err)
			equalIDs(t, fmt.Sprintf("ListSessions(Sort: %q, Order: %q)", c.sort, c.order),
				sessionIDs(page.Items), sessionIDs(c.want))
		}
	})

	s.run(t, "ListTiesPageStably", func(t *testing.T, e *env) {
		// Equal timestamps and titles: the order must still be total, so
		// that paging neither repeats nor skips a session.
		var all []string
		for range 5 {
			all = append(all, e.createSession(tenantA, ownerA, "Same", at(0), at(0)).ID)
		}
		for _, sort := range []domain.SortField{domain.SortUpdated, domain.SortCreated, domain.SortTitle} {
			for _, order := range []domain.SortOrder{domain.Asc, domain.Desc} {
				var seen []string
				for page := 1; page <= 3; page++ {
					p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA,
						domain.ListOptions{Page: page, PageSize: 2, Sort: sort, Order: order})
					must(t, "ListSessions", err)
					seen = append(seen, sessionIDs(p.Items)...)
				}
				sameSet(t, fmt.Sprintf("sessions over 3 pages of 2 (Sort: %s, Order: %s)", sort, order), seen, all)
			}
		}
	})

	s.group(t, "Pagination", s.paginationTests)
}

func (s *suite) paginationTests(t *testing.T) {
	checkPage := func(t *testing.T, what string, p domain.Page[domain.Session], page, pageSize, total, totalPages, items int) {
		t.Helper()
		if p.Items == nil {
			t.Errorf("%s: Items is nil, want a non-nil slice", what)
		}
		if p.Page != page || p.PageSize != pageSize || p.Total != total || p.TotalPages != totalPages || len(p.Items) != items {
			t.Errorf("%s: got Page=%d PageSize=%d Total=%d TotalPages=%d len(Items)=%d, want %d %d %d %d %d",
				what, p.Page, p.PageSize, p.Total, p.TotalPages, len(p.Items), page, pageSize, total, totalPages, items)
		}
	}
	// create stores n sessions of ownerA, updated one minute apart, and
	// returns them most recently updated first.
	create := func(e *env, n int) []domain.Session {
		out := make([]domain.Session, n)
		for i := range n {
			out[n-1-i] = e.createSession(tenantA, ownerA, fmt.Sprintf("Session %d", i), at(0), at(time.Duration(i)*time.Minute))
		}
		return out
	}

	s.run(t, "EmptyStore", func(t *testing.T, e *env) {
		p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{})
		must(t, "ListSessions", err)
		checkPage(t, "empty store, zero options", p, 1, domain.DefaultPageSize, 0, 0, 0)
	})

	s.run(t, "ExactlyOnePage", func(t *testing.T, e *env) {
		all := create(e, 3)
		p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{PageSize: 3})
		must(t, "ListSessions", err)
		checkPage(t, "page 1 of 3 items, size 3", p, 1, 3, 3, 1, 3)
		equalSlices(t, "page 1", p.Items, all, canonSession)
		p, err = e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Page: 2, PageSize: 3})
		must(t, "ListSessions", err)
		checkPage(t, "page 2 of 3 items, size 3", p, 2, 3, 3, 1, 0)
	})

	s.run(t, "OneMoreThanAPage", func(t *testing.T, e *env) {
		all := create(e, 4)
		p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Page: 1, PageSize: 3})
		must(t, "ListSessions", err)
		checkPage(t, "page 1 of 4 items, size 3", p, 1, 3, 4, 2, 3)
		equalSlices(t, "page 1", p.Items, all[:3], canonSession)
		p, err = e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Page: 2, PageSize: 3})
		must(t, "ListSessions", err)
		checkPage(t, "page 2 of 4 items, size 3", p, 2, 3, 4, 2, 1)
		equalSlices(t, "page 2", p.Items, all[3:], canonSession)
	})

	s.run(t, "BeyondTheEnd", func(t *testing.T, e *env) {
		create(e, 4)
		p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Page: 5, PageSize: 3})
		must(t, "ListSessions", err)
		checkPage(t, "page 5 of 4 items, size 3", p, 5, 3, 4, 2, 0)
	})

	s.run(t, "HugePage", func(t *testing.T, e *env) {
		// The offset (page-1)*page_size overflows for these pages; with 20
		// per page the second one wraps around to offset 4.
		create(e, 6)
		for _, page := range []int{math.MaxInt, (1<<64+4)/20 + 1} {
			p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{Page: page})
			must(t, "ListSessions", err)
			checkPage(t, fmt.Sprintf("page %d of 6 items, size 20", page), p, page, domain.DefaultPageSize, 6, 1, 0)
		}
	})

	s.run(t, "MaxPageSize", func(t *testing.T, e *env) {
		create(e, 2)
		p, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, domain.ListOptions{PageSize: domain.MaxPageSize})
		must(t, "ListSessions", err)
		checkPage(t, "page size 100", p, 1, domain.MaxPageSize, 2, 1, 2)
	})

	s.run(t, "InvalidOptions", func(t *testing.T, e *env) {
		create(e, 2)
		for _, opts := range []domain.ListOptions{
			{PageSize: domain.MaxPageSize + 1},
			{PageSize: -1},
			{Page: -1},
			{Sort: "size"},
			{Order: "up"},
		} {
			_, err := e.Sessions.ListSessions(e.ctx, tenantA, ownerA, opts)
			wantErr(t, fmt.Sprintf("ListSessions(%+v)", opts), err, domain.ErrInvalid)
		}
	})
}
