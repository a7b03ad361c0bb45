package bichat

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// reapBatch bounds how many messages one repository call of the reaper
// changes; a sweep repeats it until less come back.
const reapBatch = 100

// ReapResult counts what one sweep of the reaper changed.
type ReapResult struct {
	// Expired is the number of runs failed because their lease ran out
	// (code "lease_expired").
	Expired int
	// Interrupts is the number of messages failed because their question
	// or confirmation request expired (code "expired").
	Interrupts int
	// Stale is the number of messages without a lease failed by age, as
	// RecoverStale does (code "interrupted").
	Stale int
}

// RunReaper sweeps, every Limits.ReapInterval, for the work of dead or
// forgotten runs (see Reap) until ctx ends or the service is closed; it
// then returns nil. Errors of a sweep are logged and the next sweep tries
// again. Start it once per process (any number of processes may run one
// against the same store: each expired run is failed by exactly one):
//
//	go svc.RunReaper(ctx)
func (s *Service) RunReaper(ctx context.Context) error {
	t := time.NewTicker(s.cfg.Limits.ReapInterval)
	defer t.Stop()
	for {
		if _, err := s.Reap(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.ErrorContext(ctx, "bichat: reaper sweep", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-s.life.Done():
			return nil
		case <-t.C:
		}
	}
}

// Reap makes one sweep of the reaper:
//
//   - runs whose lease expired (their process died or stopped renewing)
//     are failed with code "lease_expired", a RunFailed saying so ends
//     their run log (so their watchers stop), and their sessions take new
//     questions again;
//   - questions and confirmation requests nobody answered within
//     Limits.InterruptTTL are dropped and their messages failed with code
//     "expired";
//   - messages claimed without a lease (a store without Runs) are failed
//     by age, as RecoverStale does.
//
// RunReaper calls it periodically; a host with its own scheduler may call
// it instead.
func (s *Service) Reap(ctx context.Context) (ReapResult, error) {
	var res ReapResult
	var errs []error
	now := s.cfg.Now().UTC()
	if s.repos.Runs != nil {
		n, err := s.reapExpired(ctx, now)
		res.Expired = n
		errs = append(errs, err)
	}
	n, err := s.reapInterrupts(ctx, now)
	res.Interrupts = n
	errs = append(errs, err)
	n, err = s.RecoverStale(ctx)
	res.Stale = n
	errs = append(errs, err)
	return res, errors.Join(errs...)
}

// reapExpired fails the runs whose lease ended before now and ends their
// logs; it returns how many it failed.
func (s *Service) reapExpired(ctx context.Context, now time.Time) (int, error) {
	total := 0
	e := domain.MessageError{Code: "lease_expired", Message: leaseExpiredMessage, Time: now}
	for {
		msgs, err := s.repos.Runs.FailExpired(ctx, now, e, reapBatch)
		if err != nil {
			return total, fmt.Errorf("bichat: fail runs with expired leases: %w", err)
		}
		total += len(msgs)
		for i := range msgs {
			s.reaped(ctx, &msgs[i])
		}
		if len(msgs) < reapBatch {
			return total, nil
		}
	}
}

// reaped ends the log of a run the reaper failed and stops it if it is
// (still, hung) in this process.
func (s *Service) reaped(ctx context.Context, m *domain.Message) {
	if r := s.liveByMessage(m.ID); r != nil && r.id == m.RunID {
		r.cancel(stopLeaseLost)
	}
	code, msg := "lease_expired", leaseExpiredMessage
	if m.Metadata.Error != nil {
		code, msg = m.Metadata.Error.Code, m.Metadata.Error.Message
	}
	if m.RunID != "" {
		if err := s.appendTerminal(ctx, m, m.RunID, func(h agents.EventHeader) agents.Event {
			return &agents.RunFailed{EventHeader: h, Code: code, Message: msg}
		}); err != nil {
			s.cfg.Logger.ErrorContext(ctx, "bichat: end the log of an expired run", "run_id", m.RunID, "error", err)
		}
	}
	s.publishSave(ctx, s.ownerOf(ctx, m), m)
}

// ownerOf is the principal a hook event about m names (its session's
// owner, when the session can be read).
func (s *Service) ownerOf(ctx context.Context, m *domain.Message) domain.Principal {
	p := domain.Principal{TenantID: m.TenantID}
	if sess, err := s.repos.Sessions.GetSession(ctx, m.TenantID, m.SessionID); err == nil {
		p.UserID = sess.OwnerID
	}
	return p
}

// reapInterrupts fails the messages whose interrupt expired.
func (s *Service) reapInterrupts(ctx context.Context, now time.Time) (int, error) {
	total := 0
	for {
		cps, err := s.repos.Checkpoints.TakeExpiredCheckpoints(ctx, now, reapBatch)
		if err != nil {
			return total, fmt.Errorf("bichat: take expired checkpoints: %w", err)
		}
		for i := range cps {
			cp := &cps[i]
			m, err := s.repos.Messages.GetMessage(ctx, cp.TenantID, cp.MessageID)
			if err != nil || m.Status != domain.StatusAwaitingInput {
				continue
			}
			s.expire(ctx, domain.Principal{TenantID: cp.TenantID, UserID: cp.OwnerID}, m, cp.Kind, false)
			total++
		}
		if len(cps) < reapBatch {
			return total, nil
		}
	}
}
