package domain

import (
	"fmt"
	"time"
)

// CheckCreateSession validates the input of
// SessionRepository.CreateSession: sess is required, sess.ID must pass
// ValidID, and TenantID and OwnerID must be non-empty.
func CheckCreateSession(sess *Session) error {
	if sess == nil {
		return Invalid("session", "is required")
	}
	var ve ValidationError
	if !ValidID(sess.ID) {
		ve.Add("session.id", "must be a UUID")
	}
	if sess.TenantID == "" {
		ve.Add("session.tenant_id", "is required")
	}
	if sess.OwnerID == "" {
		ve.Add("session.owner_id", "is required")
	}
	return ve.Err()
}

// CheckCreateMessages validates the input of
// MessageRepository.CreateMessages: no message may be nil; each needs an
// id that passes ValidID, a non-empty TenantID and SessionID, a valid
// Role and a valid Status; and all must share the TenantID and SessionID
// of the first. Fields are named by index ("messages[1].role"). An empty
// msgs is valid (CreateMessages then does nothing). Ids repeated within
// msgs are not checked here: they are a conflict (ErrConflict), like an
// id already stored.
func CheckCreateMessages(msgs []*Message) error {
	var ve ValidationError
	var first *Message
	for i, m := range msgs {
		field := func(name string) string { return fmt.Sprintf("messages[%d].%s", i, name) }
		if m == nil {
			ve.Add(fmt.Sprintf("messages[%d]", i), "is required")
			continue
		}
		if !ValidID(m.ID) {
			ve.Add(field("id"), "must be a UUID")
		}
		if m.TenantID == "" {
			ve.Add(field("tenant_id"), "is required")
		}
		if m.SessionID == "" {
			ve.Add(field("session_id"), "is required")
		}
		if !m.Role.Valid() {
			ve.Add(field("role"), "must be user, assistant, system or tool")
		}
		if !m.Status.Valid() {
			ve.Add(field("status"), "must be generating, complete, failed or awaiting_input")
		}
		if first == nil {
			first = m
			continue
		}
		if m.TenantID != first.TenantID {
			ve.Add(field("tenant_id"), "must be the same for every message")
		}
		if m.SessionID != first.SessionID {
			ve.Add(field("session_id"), "must be the same for every message")
		}
	}
	return ve.Err()
}

// CheckUpdateMessage validates the input of
// MessageRepository.UpdateMessage: m is required and m.Status must be
// valid.
func CheckUpdateMessage(m *Message) error {
	if m == nil {
		return Invalid("message", "is required")
	}
	if !m.Status.Valid() {
		return Invalid("message.status", "must be generating, complete, failed or awaiting_input")
	}
	return nil
}

// CheckClaimRun validates the input of RunRepository.ClaimRun: runID
// must be non-empty and leaseUntil set.
func CheckClaimRun(runID string, leaseUntil time.Time) error {
	return checkRunLease(runID, leaseUntil, "lease_until")
}

// CheckRenewLease validates the input of RunRepository.RenewLease: runID
// must be non-empty and until set.
func CheckRenewLease(runID string, until time.Time) error {
	return checkRunLease(runID, until, "until")
}

func checkRunLease(runID string, t time.Time, field string) error {
	var ve ValidationError
	if runID == "" {
		ve.Add("run_id", "is required")
	}
	if t.IsZero() {
		ve.Add(field, "is required")
	}
	return ve.Err()
}

// CheckFinishRun validates the input of RunRepository.FinishRun: m is
// required, runID non-empty, m.Status a valid outcome (complete, failed
// or awaiting_input; generating is not an outcome) and m.RunID equal to
// runID.
func CheckFinishRun(m *Message, runID string) error {
	if m == nil {
		return Invalid("message", "is required")
	}
	var ve ValidationError
	if runID == "" {
		ve.Add("run_id", "is required")
	}
	switch {
	case !m.Status.Valid():
		ve.Add("message.status", "must be complete, failed or awaiting_input")
	case m.Status == StatusGenerating:
		ve.Add("message.status", "must be the run's outcome (complete, failed or awaiting_input), not generating")
	}
	if m.RunID != runID {
		ve.Add("message.run_id", "must be the run that finishes")
	}
	return ve.Err()
}

// CheckAppendRunEvents validates the input of
// RunEventRepository.AppendRunEvents: every event needs a TenantID and a
// RunID, the same as the first event's, and a Seq of at least 1. Fields
// are named by index ("events[2].seq"). An empty events is valid (the
// append then does nothing). That Seq increases, within events and past
// the stored log, is the store's to check (ErrConflict). Valid input
// allocates nothing.
func CheckAppendRunEvents(events []RunEvent) error {
	for i := range events {
		e, first := &events[i], &events[0]
		if e.TenantID == "" || e.TenantID != first.TenantID || e.RunID == "" || e.RunID != first.RunID || e.Seq < 1 {
			return runEventsError(events)
		}
	}
	return nil
}

// runEventsError names every invalid field of events, the slow path of
// CheckAppendRunEvents (apart, so that valid input allocates nothing).
func runEventsError(events []RunEvent) error {
	first := &events[0]
	var ve ValidationError
	for i := range events {
		e := &events[i]
		field := func(name string) string { return fmt.Sprintf("events[%d].%s", i, name) }
		if e.TenantID == "" {
			ve.Add(field("tenant_id"), "is required")
		} else if e.TenantID != first.TenantID {
			ve.Add(field("tenant_id"), "must be the same for every event")
		}
		if e.RunID == "" {
			ve.Add(field("run_id"), "is required")
		} else if e.RunID != first.RunID {
			ve.Add(field("run_id"), "must be the same for every event")
		}
		if e.Seq < 1 {
			ve.Add(field("seq"), "must be 1 or greater")
		}
	}
	return ve.Err()
}

// CheckSubscribeRunEvents validates the input of
// RunEventNotifier.SubscribeRunEvents: tenantID and runID are required.
func CheckSubscribeRunEvents(tenantID, runID string) error {
	var ve ValidationError
	if tenantID == "" {
		ve.Add("tenant_id", "is required")
	}
	if runID == "" {
		ve.Add("run_id", "is required")
	}
	return ve.Err()
}

// CheckSaveArtifact validates the input of
// ArtifactRepository.SaveArtifact: a is required and its ID, TenantID and
// MessageID must be non-empty (the message itself need not exist).
func CheckSaveArtifact(a *Artifact) error {
	if a == nil {
		return Invalid("artifact", "is required")
	}
	return checkOwned("artifact", a.ID, a.TenantID, a.MessageID)
}

// CheckSaveCheckpoint validates the input of
// CheckpointRepository.SaveCheckpoint: cp is required and its ID,
// TenantID and MessageID must be non-empty (the message itself need not
// exist).
func CheckSaveCheckpoint(cp *Checkpoint) error {
	if cp == nil {
		return Invalid("checkpoint", "is required")
	}
	return checkOwned("checkpoint", cp.ID, cp.TenantID, cp.MessageID)
}

// checkOwned requires the id, tenant id and message id of an entity that
// hangs off a message.
func checkOwned(entity, id, tenantID, messageID string) error {
	var ve ValidationError
	if id == "" {
		ve.Add(entity+".id", "is required")
	}
	if tenantID == "" {
		ve.Add(entity+".tenant_id", "is required")
	}
	if messageID == "" {
		ve.Add(entity+".message_id", "is required")
	}
	return ve.Err()
}

// CheckPutResult validates the input of ResultRepository.PutResult: r is
// required, its TenantID and SessionID must be non-empty, and a set Name
// must pass ValidName (an empty Name asks for the next "result_N"). The
// size cap is the repository's own and is not checked here.
func CheckPutResult(r *StoredResult) error {
	if r == nil {
		return Invalid("result", "is required")
	}
	var ve ValidationError
	if r.TenantID == "" {
		ve.Add("result.tenant_id", "is required")
	}
	if r.SessionID == "" {
		ve.Add("result.session_id", "is required")
	}
	if r.Name != "" && !ValidName(r.Name) {
		ve.Add("result.name", "must be 1 to 128 printable ASCII characters without spaces")
	}
	return ve.Err()
}
