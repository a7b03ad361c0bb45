package memory

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/bichat-go/bichat/domain"
)

// sessionResults is one session's named results.
type sessionResults struct {
	// next is the N of the last "result_N" handed out; it only grows.
	next int
	// list holds the results oldest first; a replaced result moves to the
	// end.
	list []*domain.StoredResult
}

func (r *sessionResults) index(name string) int {
	return slices.IndexFunc(r.list, func(x *domain.StoredResult) bool { return x.Name == name })
}

// PutResult stores a copy of r in session r.SessionID of r.TenantID and
// returns its name. With r.Name set (domain.ValidName: 1 to 128 printable
// ASCII characters without spaces) it replaces any result of that name,
// which then counts as the newest. With r.Name empty the result is named
// "result_N", N being one more than the last N the session handed out
// (starting at 1, never reused even after eviction), skipping names a
// caller already chose, so an automatic name never replaces a result.
// When the session then holds more than Options.ResultsPerSession
// results, the oldest are deleted.
//
// Data longer than Options.MaxResultBytes yields domain.ErrTooLarge; a
// missing tenant or session id or a bad name domain.ErrInvalid; a session
// that does not exist in the tenant domain.ErrNotFound. On error nothing
// is stored and no name is used up. A zero CreatedAt is set to the
// current time in the stored copy. r itself is not modified.
func (s *Store) PutResult(ctx context.Context, r *domain.StoredResult) (string, error) {
	const op = "put result"
	if err := checkCtx(ctx, op); err != nil {
		return "", err
	}
	if err := domain.CheckPutResult(r); err != nil {
		return "", fmt.Errorf("memory: %s: %w", op, err)
	}
	if int64(len(r.Data)) > s.resultBytes {
		return "", fmt.Errorf("memory: %s: %d bytes of data, over the limit of %d bytes per result: %w",
			op, len(r.Data), s.resultBytes, domain.ErrTooLarge)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.session(r.TenantID, r.SessionID); !ok {
		return "", fmt.Errorf("memory: %s: session %s: %w", op, r.SessionID, domain.ErrNotFound)
	}
	sr := s.results[r.SessionID]
	if sr == nil {
		sr = &sessionResults{}
		s.results[r.SessionID] = sr
	}
	c := *r
	c.Data = slices.Clone(r.Data)
	if c.CreatedAt.IsZero() {
		c.CreatedAt = now()
	}
	if c.Name == "" {
		for {
			sr.next++
			c.Name = "result_" + strconv.Itoa(sr.next)
			if sr.index(c.Name) < 0 {
				break
			}
		}
	} else if i := sr.index(c.Name); i >= 0 {
		sr.list = slices.Delete(sr.list, i, i+1)
	}
	sr.list = append(sr.list, &c)
	if over := len(sr.list) - s.resultsKeep; over > 0 {
		clear(sr.list[:over])
		sr.list = sr.list[over:]
	}
	return c.Name, nil
}

// GetResult returns a copy of the result called name in session sessionID
// of tenantID. An unknown name, session or tenant yields
// domain.ErrNotFound.
func (s *Store) GetResult(ctx context.Context, tenantID, sessionID, name string) (*domain.StoredResult, error) {
	const op = "get result"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.session(tenantID, sessionID); !ok {
		return nil, fmt.Errorf("memory: %s %q: session %s: %w", op, name, sessionID, domain.ErrNotFound)
	}
	sr := s.results[sessionID]
	if sr == nil {
		return nil, fmt.Errorf("memory: %s %q: %w", op, name, domain.ErrNotFound)
	}
	i := sr.index(name)
	if i < 0 {
		return nil, fmt.Errorf("memory: %s %q: %w", op, name, domain.ErrNotFound)
	}
	c := *sr.list[i]
	c.Data = slices.Clone(c.Data)
	return &c, nil
}

// ListResults returns the names of the results of session sessionID in
// tenantID, oldest first (a replaced result counts from its replacement).
// The result is never nil. A session that does not exist in tenantID
// yields domain.ErrNotFound.
func (s *Store) ListResults(ctx context.Context, tenantID, sessionID string) ([]string, error) {
	const op = "list results"
	if err := checkCtx(ctx, op); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if _, ok := s.session(tenantID, sessionID); !ok {
		return nil, fmt.Errorf("memory: %s: session %s: %w", op, sessionID, domain.ErrNotFound)
	}
	names := []string{}
	if sr := s.results[sessionID]; sr != nil {
		for _, r := range sr.list {
			names = append(names, r.Name)
		}
	}
	return names, nil
}
