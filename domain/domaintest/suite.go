package domaintest

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// RunRepositoryTests runs the conformance suite against the repositories
// that newRepos returns. Call it from a test of the implementing package:
//
//	func TestRepositories(t *testing.T) {
//		domaintest.RunRepositoryTests(t, func(t *testing.T) domain.Repositories {
//			return mystore.New().Repositories()
//		})
//	}
//
// Every subtest calls newRepos once and runs in parallel with the others,
// so newRepos must return repositories over a store that is empty and not
// shared with any other call (for a database: a fresh schema or database
// per call, dropped with t.Cleanup). Every field of the returned
// Repositories must be non-nil and all of them must share one store,
// because the suite checks that DeleteSession cascades to messages,
// checkpoints, artifacts, run events and results, and that RunRepository
// acts on the messages of MessageRepository.
//
// opts, at most one, tells the suite the limits the store was configured
// with (see Options); without it the suite assumes the defaults. The
// notifier cases run only when RunEvents implements
// domain.RunEventNotifier.
//
// See the package documentation for the behaviour the suite requires.
func RunRepositoryTests(t *testing.T, newRepos func(t *testing.T) domain.Repositories, opts ...Options) {
	t.Helper()
	if newRepos == nil {
		t.Fatal("domaintest: newRepos is nil")
	}
	if len(opts) > 1 {
		t.Fatalf("domaintest: RunRepositoryTests takes at most one Options, got %d", len(opts))
	}
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.ResultsKeep < 0 || o.ResultBytes < 0 {
		t.Fatalf("domaintest: negative limits in %+v", o)
	}
	if o.ResultsKeep == 0 {
		o.ResultsKeep = DefaultResultsKeep
	}
	if o.ResultBytes == 0 {
		o.ResultBytes = DefaultResultBytes
	}
	s := &suite{newRepos: newRepos, opts: o}
	s.group(t, "Sessions", s.sessionTests)
	s.group(t, "Messages", s.messageTests)
	s.group(t, "Runs", s.runTests)
	s.group(t, "Checkpoints", s.checkpointTests)
	s.group(t, "Artifacts", s.artifactTests)
	s.group(t, "RunEvents", s.runEventTests)
	s.group(t, "RunEventNotifier", s.notifierTests)
	s.group(t, "Results", s.resultTests)
	s.group(t, "TenantIsolation", s.isolationTests)
	s.group(t, "CascadeDelete", s.cascadeTests)
}

// Defaults the suite assumes for the fields of Options left zero. They are
// the defaults of the stores in this module (domain/memory,
// domain/postgres).
const (
	DefaultResultsKeep = 10
	DefaultResultBytes = 8 << 20
)

// Options describes the store under test where the domain interfaces leave
// a choice to the implementation. Configure the store the factory returns
// with the same values you pass here; small values keep the suite fast.
type Options struct {
	// ResultsKeep is how many named results per session the
	// ResultRepository keeps before it evicts the oldest; 0 means
	// DefaultResultsKeep.
	ResultsKeep int
	// ResultBytes is the largest StoredResult.Data the ResultRepository
	// accepts (larger yields domain.ErrTooLarge); 0 means
	// DefaultResultBytes. The suite stores a result of exactly this size.
	ResultBytes int64
}

type suite struct {
	newRepos func(t *testing.T) domain.Repositories
	opts     Options
}

// env is what a subtest works with: its own fresh repositories and the
// test's context.
type env struct {
	t   *testing.T
	ctx context.Context
	domain.Repositories
}

// group runs fn as a parallel subtest that holds further subtests.
func (s *suite) group(t *testing.T, name string, fn func(t *testing.T)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		fn(t)
	})
}

// run runs fn as a parallel subtest with fresh repositories.
func (s *suite) run(t *testing.T, name string, fn func(t *testing.T, e *env)) {
	t.Helper()
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		r := s.newRepos(t)
		if r.Sessions == nil || r.Messages == nil || r.Checkpoints == nil || r.Artifacts == nil || r.RunEvents == nil ||
			r.Runs == nil || r.Results == nil {
			t.Fatalf("domaintest: newRepos returned a Repositories with a nil field: %+v", r)
		}
		fn(t, &env{t: t, ctx: t.Context(), Repositories: r})
	})
}

// Fixture values. Tenant and owner ids are host-supplied names; entity ids
// come from domain.NewID.
const (
	tenantA = "tenant-a"
	tenantB = "tenant-b"
	ownerA  = "user-1"
	ownerB  = "user-2"
)

// base is the time fixtures are built from. Offsets are whole milliseconds
// so that stores with microsecond precision round-trip them exactly.
var base = time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

// at returns base plus d.
func at(d time.Duration) time.Time { return base.Add(d) }

// wantErr fails the test unless errors.Is(err, want).
func wantErr(t *testing.T, what string, err, want error) {
	t.Helper()
	if !errors.Is(err, want) {
		t.Errorf("%s: got error %v, want one matching %q", what, err, want)
	}
}

// must fails the test now when err is not nil.
func must(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// createSession stores a session with every field set and returns it.
func (e *env) createSession(tenant, owner, title string, created, updated time.Time) domain.Session {
	e.t.Helper()
	s := domain.Session{
		ID:        domain.NewID(),
		TenantID:  tenant,
		OwnerID:   owner,
		Title:     title,
		Model:     "model-large",
		CreatedAt: created,
		UpdatedAt: updated,
	}
	in := s
	must(e.t, "CreateSession", e.Sessions.CreateSession(e.ctx, &in))
	return s
}

// createMessages stores msgs in one batch and returns copies of them.
func (e *env) createMessages(msgs ...*domain.Message) []domain.Message {
	e.t.Helper()
	out := make([]domain.Message, len(msgs))
	for i, m := range msgs {
		out[i] = *m
	}
	must(e.t, "CreateMessages", e.Messages.CreateMessages(e.ctx, msgs...))
	return out
}

// seedMessage stores a session in tenant and one generating assistant
// message in it, and returns both.
func (e *env) seedMessage(tenant string) (domain.Session, domain.Message) {
	e.t.Helper()
	s := e.createSession(tenant, ownerA, "Seed", at(0), at(0))
	m := e.createMessages(newMessage(tenant, s.ID, domain.RoleAssistant, domain.StatusGenerating, at(time.Second)))
	return s, m[0]
}

// newMessage returns an unsaved message with one text part.
func newMessage(tenant, sessionID string, role domain.Role, status domain.MessageStatus, created time.Time) *domain.Message {
	return &domain.Message{
		ID:        domain.NewID(),
		TenantID:  tenant,
		SessionID: sessionID,
		Role:      role,
		Status:    status,
		Parts:     []domain.Part{domain.TextPart("message " + created.Format(time.StampMilli))},
		CreatedAt: created,
		UpdatedAt: created,
	}
}

// Raw JSON fixtures. They are compact, as encoding/json would produce, but
// keys are out of order and strings hold escapes, so a store that
// re-encodes JSON (such as a PostgreSQL jsonb column) changes them.
var (
	rawReasoningOpaque = json.RawMessage(`{"type":"redacted_thinking","data":"RW5j\u002fcnlwdGVk+Pz8="}`)
	rawCallArguments   = json.RawMessage(`{"sql":"select region, sum(amount) from sales group by 1","limit":50}`)
	rawCallOpaque      = json.RawMessage(`{"thought_signature":"c2lnbmF0dXJl\u002f","b":2,"a":1}`)
	rawCheckpointData  = json.RawMessage(`{"version":2,"agent":"sql","pending":[{"id":"q1","text":"caf\u00e9?"}]}`)
)

// allParts returns one part of every type, with every field set.
func allParts() []domain.Part {
	return []domain.Part{
		domain.TextPart("Revenue grew 12% in Q3."),
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{
			Text:      "The user wants the Q3 figure; query the sales table.",
			Signature: "EqQBCkgIARABGAIiQPz1+/sig==",
			Provider:  "anthropic",
			Opaque:    rawReasoningOpaque,
		}},
		{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{
			ID:        "call_01",
			Name:      "sql_query",
			Arguments: rawCallArguments,
			Provider:  "gemini",
			Opaque:    rawCallOpaque,
		}},
		{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{
			CallID:  "call_01",
			Name:    "sql_query",
			Content: "3 rows",
			IsError: true,
		}},
		{Type: domain.PartFile, File: &domain.FileRef{
			Name:       "sales.csv",
			MediaType:  "text/csv",
			URI:        "artifact://0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
			ArtifactID: "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b",
			Size:       2048,
		}},
		{Type: domain.PartImage, File: &domain.FileRef{
			Name:      "chart.png",
			MediaType: "image/png",
			URI:       "https://example.com/chart.png",
			Size:      4096,
		}},
	}
}

// richMessage returns an unsaved assistant message with every field set.
func richMessage(tenant, sessionID string, created time.Time) *domain.Message {
	return &domain.Message{
		ID:        domain.NewID(),
		TenantID:  tenant,
		SessionID: sessionID,
		Role:      domain.RoleAssistant,
		Parts:     allParts(),
		Status:    domain.StatusAwaitingInput,
		RunID:     domain.NewID(),
		// A lease and a cancel request, so that CreateMessages is seen to
		// store them (and UpdateMessage to clear them: the message is not
		// generating).
		LeaseUntil:      created.Add(time.Minute),
		CancelRequested: true,
		Metadata: domain.MessageMetadata{
			Model: "model-large",
			ToolCalls: []domain.ToolCallRecord{{
				ID:          "call_01",
				Name:        "sql_query",
				Arguments:   `{"sql":"select 1"}`,
				Result:      "1 row",
				Error:       "timeout after 30s",
				Truncated:   true,
				DurationMS:  1234,
				ArtifactIDs: []string{"0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"},
			}},
			Usage: domain.Usage{
				PromptTokens:     1000,
				CompletionTokens: 200,
				CachedTokens:     300,
				CacheWriteTokens: 50,
				ReasoningTokens:  80,
				TotalTokens:      1200,
			},
			DatasetsUsed: []string{"sales", "regions"},
			StopReason:   "interrupted",
			Note:         "Waiting for confirmation.",
			Error:        &domain.MessageError{Code: "timeout", Message: "The query took too long.", Time: created.Add(time.Second)},
		},
		Citations: []domain.Citation{{
			Source:     "kb",
			DocumentID: "doc-7",
			Title:      "Sales glossary",
			URL:        "https://example.com/glossary",
			Snippet:    "Revenue is recognised when ...",
			Score:      0.875,
		}},
		Attachments: []domain.Attachment{{
			ID:        "0190a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a60",
			Name:      "targets.xlsx",
			MediaType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
			Size:      10240,
			SHA256:    domain.ContentHash([]byte("targets")),
			URI:       "s3://bucket/targets.xlsx",
		}},
		CreatedAt: created,
		UpdatedAt: created.Add(2 * time.Second),
	}
}

// newCheckpoint returns an unsaved checkpoint of m with every field set.
func newCheckpoint(m domain.Message, created time.Time) domain.Checkpoint {
	return domain.Checkpoint{
		ID:        domain.NewID(),
		TenantID:  m.TenantID,
		SessionID: m.SessionID,
		MessageID: m.ID,
		OwnerID:   ownerA,
		RunID:     domain.NewID(),
		Kind:      domain.CheckpointQuestion,
		Data:      rawCheckpointData,
		CreatedAt: created,
		ExpiresAt: created.Add(24 * time.Hour),
	}
}

// newArtifact returns an unsaved artifact of m with every field set.
func newArtifact(m domain.Message, name string, created time.Time) domain.Artifact {
	return domain.Artifact{
		ID:        domain.NewID(),
		TenantID:  m.TenantID,
		SessionID: m.SessionID,
		MessageID: m.ID,
		Kind:      domain.ArtifactTable,
		Name:      name,
		MediaType: "text/csv",
		SHA256:    domain.ContentHash([]byte(name)),
		Size:      int64(len(name)),
		URI:       "artifact://" + name,
		Metadata:  map[string]string{"rows": "3", "source": "sql_query"},
		CreatedAt: created,
	}
}

// newRunEvents returns unsaved events of run runID for message m, one per
// seq, with every field set.
func newRunEvents(m domain.Message, runID string, seqs ...int64) []domain.RunEvent {
	evs := make([]domain.RunEvent, len(seqs))
	for i, seq := range seqs {
		evs[i] = domain.RunEvent{
			TenantID:  m.TenantID,
			RunID:     runID,
			SessionID: m.SessionID,
			MessageID: m.ID,
			Seq:       seq,
			Type:      "text_delta",
			Time:      at(time.Duration(seq) * time.Millisecond),
			Data:      json.RawMessage(`{"type":"text_delta","seq":` + strconv.FormatInt(seq, 10) + `,"text":"caf\u00e9"}`),
		}
	}
	return evs
}
