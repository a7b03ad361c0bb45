package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/domain"
)

// CreateSession stores a copy of sess. sess.ID must be a well-formed id
// (domain.ValidID) and TenantID and OwnerID must be non-empty, otherwise
// the error matches domain.ErrInvalid. An id already in use, in any
// tenant, yields domain.ErrConflict. A zero CreatedAt is set to the
// current time and a zero UpdatedAt to CreatedAt, in sess as well as in
// the stored copy.
func (s *Store) CreateSession(ctx context.Context, sess *domain.Session) error {
	const op = "create session"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if err := domain.CheckCreateSession(sess); err != nil {
		return fmt.Errorf("memory: %s: %w", op, err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.sessions[sess.ID]; ok {
		return fmt.Errorf("memory: %s %s: %w", op, sess.ID, domain.ErrConflict)
	}
	if sess.CreatedAt.IsZero() {
		sess.CreatedAt = now()
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = sess.CreatedAt
	}
	c := *sess
	s.sessions[c.ID] = &c
	return nil
}

// GetSession returns a copy of the session with id in tenantID, or an
// error matching domain.ErrNotFound.
func (s *Store) GetSession(ctx context.Context, tenantID, id string) (*domain.Session, error) {
	if err := checkCtx(ctx, "get session"); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	sess, ok := s.session(tenantID, id)
	if !ok {
		return nil, fmt.Errorf("memory: get session %s: %w", id, domain.ErrNotFound)
	}
	c := *sess
	return &c, nil
}

// session returns the stored session with id in tenantID. The caller holds
// s.mu.
func (s *Store) session(tenantID, id string) (*domain.Session, bool) {
	sess, ok := s.sessions[id]
	if !ok || sess.TenantID != tenantID {
		return nil, false
	}
	return sess, true
}

// ListSessions returns one page of ownerID's sessions in tenantID. opts is
// normalized first; invalid options yield an error matching
// domain.ErrInvalid. Search keeps sessions whose title contains it,
// ignoring case. Sessions are sorted by opts.Sort in opts.Order, with the
// session id as tie-breaker (in the same order) so that paging is stable;
// SortTitle compares titles case-insensitively. The page's Items is never
// nil.
func (s *Store) ListSessions(ctx context.Context, tenantID, ownerID string, opts domain.ListOptions) (domain.Page[domain.Session], error) {
	const op = "list sessions"
	if err := checkCtx(ctx, op); err != nil {
		return domain.Page[domain.Session]{}, err
	}
	opts, err := opts.Normalize()
	if err != nil {
		return domain.Page[domain.Session]{}, fmt.Errorf("memory: %s: %w", op, err)
	}
	search := strings.ToLower(opts.Search)

	s.mu.RLock()
	var all []domain.Session
	for _, sess := range s.sessions {
		if sess.TenantID != tenantID || sess.OwnerID != ownerID {
			continue
		}
		if search != "" && !strings.Contains(strings.ToLower(sess.Title), search) {
			continue
		}
		all = append(all, *sess)
	}
	s.mu.RUnlock()

	slices.SortFunc(all, func(a, b domain.Session) int {
		var c int
		switch opts.Sort {
		case domain.SortCreated:
			c = a.CreatedAt.Compare(b.CreatedAt)
		case domain.SortTitle:
			c = cmp.Or(
				strings.Compare(strings.ToLower(a.Title), strings.ToLower(b.Title)),
				strings.Compare(a.Title, b.Title),
			)
		default: // domain.SortUpdated
			c = a.UpdatedAt.Compare(b.UpdatedAt)
		}
		c = cmp.Or(c, strings.Compare(a.ID, b.ID))
		if opts.Order == domain.Desc {
			c = -c
		}
		return c
	})
	return domain.NewPage(all, opts), nil
}

// UpdateSession sets the Title, Model and UpdatedAt of the session
// identified by sess.TenantID and sess.ID; other fields of sess are
// ignored. A zero UpdatedAt is set to the current time, in sess as well. An
// unknown session yields domain.ErrNotFound.
func (s *Store) UpdateSession(ctx context.Context, sess *domain.Session) error {
	const op = "update session"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	if sess == nil {
		return fmt.Errorf("memory: %s: %w", op, domain.Invalid("session", "is required"))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	stored, ok := s.session(sess.TenantID, sess.ID)
	if !ok {
		return fmt.Errorf("memory: %s %s: %w", op, sess.ID, domain.ErrNotFound)
	}
	if sess.UpdatedAt.IsZero() {
		sess.UpdatedAt = now()
	}
	stored.Title = sess.Title
	stored.Model = sess.Model
	stored.UpdatedAt = sess.UpdatedAt
	return nil
}

// DeleteSession removes the session with id in tenantID together with its
// messages, the checkpoints and artifacts of the session or of its
// messages, the run events of the session and its named results, all in
// one step. Subscribers of the runs whose events were removed are
// signalled, so a watcher reads the log again and finds it gone; the
// notifier keeps no other per-run state. An unknown session yields
// domain.ErrNotFound and removes nothing.
func (s *Store) DeleteSession(ctx context.Context, tenantID, id string) error {
	const op = "delete session"
	if err := checkCtx(ctx, op); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.session(tenantID, id); !ok {
		return fmt.Errorf("memory: %s %s: %w", op, id, domain.ErrNotFound)
	}

	msgIDs := make(map[string]bool, len(s.sessionMessages[id]))
	for _, mid := range s.sessionMessages[id] {
		msgIDs[mid] = true
		delete(s.messages, mid)
	}
	delete(s.sessionMessages, id)

	for k, cp := range s.checkpoints {
		if cp.TenantID == tenantID && (cp.SessionID == id || msgIDs[cp.MessageID]) {
			delete(s.checkpoints, k)
		}
	}
	for aid, a := range s.artifacts {
		if a.art.TenantID == tenantID && (a.art.SessionID == id || msgIDs[a.art.MessageID]) {
			s.removeArtifact(aid)
		}
	}
	s.deleteSessionEvents(tenantID, id)
	delete(s.results, id)
	delete(s.sessions, id)
	return nil
}
