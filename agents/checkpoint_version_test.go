package agents_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// updateCheckpoints rewrites the fixtures of the current checkpoint format
// version from today's code:
//
//	go test ./agents/ -run TestCheckpointFixtures -update-checkpoints
//
// Fixtures of earlier versions are never rewritten: they are what older
// releases stored, and must keep resuming.
var updateCheckpoints = flag.Bool("update-checkpoints", false,
	"write testdata/checkpoints/v<CheckpointVersion>/*.json from the current code")

// cpClock is the fixed clock of the fixtures: checkpoints, confirmation
// expiry and event times all come from it, never from time.Now.
var cpClock = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// cpKey signs the fixtures' confirmation tokens; an executor resuming a
// fixture must use the same key, as another process of the same host
// would.
var cpKey = []byte("bichat-checkpoint-fixture-key-32")

// cpResume is one way to continue a fixture's interrupted run.
type cpResume struct {
	name string
	// turns answer the model after the interrupt.
	turns []scripted.Turn
	// resume continues cp on e.
	resume func(e *agents.Executor, cp *agents.Checkpoint) iter.Seq2[agents.Event, error]
	// toolRuns is how many times the scenario's write tool must have run
	// after the resume.
	toolRuns int32
}

// cpScenario is an interrupted run whose checkpoint is kept as a fixture.
type cpScenario struct {
	name  string
	kind  domain.CheckpointKind
	tools func(writes *atomic.Int32) []agents.Tool
	// turns answer the model up to the interrupt.
	turns   []scripted.Turn
	input   agents.Input
	resumes []cpResume
}

type cpCountIn struct {
	Region string `json:"region"`
}

func cpScenarios() []cpScenario {
	countOrders := func(*atomic.Int32) []agents.Tool {
		return []agents.Tool{mustTool(agents.NewTool("count_orders", "Counts the orders of a region.",
			func(_ context.Context, in cpCountIn) (string, error) { return "42 orders in " + in.Region, nil }))}
	}
	deleteRows := func(writes *atomic.Int32) []agents.Tool { return []agents.Tool{writeTool(writes)} }
	usage := func(p, c int) domain.Usage { return domain.Usage{PromptTokens: p, CompletionTokens: c} }
	return []cpScenario{
		{
			name:  "question",
			kind:  domain.CheckpointQuestion,
			tools: countOrders,
			turns: []scripted.Turn{
				{Reasoning: "Count the orders first.", ReasoningSignature: "sig-1", Text: "Let me count.",
					ToolCalls: []scripted.Call{call("c1", "count_orders", `{"region":"EU"}`)}, Usage: usage(120, 12)},
				{Text: "I need to know more.", ToolCalls: []scripted.Call{call("ask1", agents.ToolAskUserQuestion, askRegionArgs)},
					Usage: usage(160, 30)},
			},
			input: agents.Input{RunID: "run-q", TenantID: "t1", UserID: "u1", SessionID: "s1", MessageID: "m1",
				History: []agents.Message{agents.UserMessage("hi"), agents.AssistantMessage("hello")},
				Message: agents.UserMessage("What was revenue?")},
			resumes: []cpResume{{
				name:  "answered",
				turns: []scripted.Turn{{Text: "EU revenue last year was 3 M€.", Usage: usage(210, 11)}},
				resume: func(e *agents.Executor, cp *agents.Checkpoint) iter.Seq2[agents.Event, error] {
					return e.Resume(context.Background(), cp,
						agents.Answers{"region": {Selected: []string{"EU"}}, "q2": {Text: "last year"}}, agents.WithRunID("run-q2"))
				},
			}},
		},
		{
			name:  "confirmation",
			kind:  domain.CheckpointConfirmation,
			tools: deleteRows,
			turns: []scripted.Turn{
				{Text: "Deleting.", ToolCalls: []scripted.Call{call("w1", "delete_rows", `{"table":"orders"}`)}, Usage: usage(90, 14)},
			},
			input: agents.Input{RunID: "run-c", TenantID: "t1", UserID: "u1", SessionID: "s1", MessageID: "m2",
				Message: agents.UserMessage("Delete the orders table.")},
			resumes: []cpResume{
				{
					name:  "approved",
					turns: []scripted.Turn{{Text: "Orders are gone.", Usage: usage(130, 5)}},
					resume: func(e *agents.Executor, cp *agents.Checkpoint) iter.Seq2[agents.Event, error] {
						return e.Approve(context.Background(), cp,
							agents.Decision{Token: cp.Confirmation.Token, TenantID: "t1", UserID: "u1"}, agents.WithRunID("run-c2"))
					},
					toolRuns: 1,
				},
				{
					name:  "denied",
					turns: []scripted.Turn{{Text: "The orders were kept.", Usage: usage(140, 6)}},
					resume: func(e *agents.Executor, cp *agents.Checkpoint) iter.Seq2[agents.Event, error] {
						return e.Deny(context.Background(), cp,
							agents.Decision{Token: cp.Confirmation.Token, TenantID: "t1", UserID: "u1", Reason: "still needed"},
							agents.WithRunID("run-c2"))
					},
				},
			},
		},
	}
}

// cpExecutor returns an executor with the fixtures' clock, key and a
// deterministic id sequence.
func cpExecutor(t testing.TB, m agents.Model, tools []agents.Tool) *agents.Executor {
	t.Helper()
	var ids atomic.Int64
	return newExec(t, agents.Config{
		Model: m, Tools: tools, System: "You answer questions about sales.",
		Now:             func() time.Time { return cpClock },
		NewID:           func() string { return "id-" + strconv.FormatInt(ids.Add(1), 10) },
		ConfirmationKey: cpKey,
	})
}

// interruptScenario runs sc up to its interrupt on a model that continues
// with more turns, and returns the fresh checkpoint and the model.
func interruptScenario(t testing.TB, sc cpScenario, more []scripted.Turn, writes *atomic.Int32) (*agents.Executor, *scripted.Model, *agents.Checkpoint) {
	t.Helper()
	m := &scripted.Model{Turns: append(append([]scripted.Turn(nil), sc.turns...), more...)}
	e := cpExecutor(t, m, sc.tools(writes))
	_, intr := interrupted(t, drain(t, e.Run(context.Background(), sc.input)))
	if intr.Kind != sc.kind || intr.Checkpoint.Kind != sc.kind {
		t.Fatalf("%s: interrupted for a %s, want a %s", sc.name, intr.Kind, sc.kind)
	}
	return e, m, intr.Checkpoint
}

func cpFixturePath(version int, name string) string {
	return filepath.Join("testdata", "checkpoints", "v"+strconv.Itoa(version), name+".json")
}

// TestCheckpointFixtures writes the current version's fixtures when
// -update-checkpoints is set, and otherwise checks that every format
// version up to CheckpointVersion has a fixture of every scenario.
func TestCheckpointFixtures(t *testing.T) {
	for _, sc := range cpScenarios() {
		path := cpFixturePath(agents.CheckpointVersion, sc.name)
		if *updateCheckpoints {
			var writes atomic.Int32
			_, _, cp := interruptScenario(t, sc, nil, &writes)
			// Stored exactly as the service stores a checkpoint
			// (json.Marshal into domain.Checkpoint.Data): raw JSON
			// members such as tool arguments keep their bytes.
			b, err := json.Marshal(cp)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			t.Logf("wrote %s", path)
		}
		for v := 1; v <= agents.CheckpointVersion; v++ {
			b, err := os.ReadFile(cpFixturePath(v, sc.name))
			if err != nil {
				t.Errorf("no fixture of format version %d for %s (a new version needs fixtures; run with -update-checkpoints): %v", v, sc.name, err)
				continue
			}
			var head struct {
				Version int `json:"version"`
			}
			if err := json.Unmarshal(b, &head); err != nil || head.Version != v {
				t.Errorf("fixture %s says version %d (%v), want %d", cpFixturePath(v, sc.name), head.Version, err, v)
			}
		}
	}
}

// resumeRecord is what a resumed run did: its events and the requests the
// model received, both as JSON.
type resumeRecord struct {
	events   []string
	requests []string
	toolRuns int32
}

func record(t testing.TB, items []item, reqs []agents.Request, toolRuns int32) resumeRecord {
	t.Helper()
	var r resumeRecord
	for _, ev := range events(t, items) {
		if f, ok := ev.(*agents.ToolCallFinished); ok {
			// How long the tool took is measured, not replayed.
			c := *f
			c.Duration = 0
			ev = &c
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatalf("encode %T: %v", ev, err)
		}
		r.events = append(r.events, fmt.Sprintf("%T %s", ev, b))
	}
	for _, req := range reqs {
		b, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("encode request: %v", err)
		}
		r.requests = append(r.requests, string(b))
	}
	r.toolRuns = toolRuns
	return r
}

func diffRecords(t testing.TB, what string, got, want resumeRecord) {
	t.Helper()
	if got.toolRuns != want.toolRuns {
		t.Errorf("%s: the write tool ran %d times, the fresh checkpoint's resume ran it %d times", what, got.toolRuns, want.toolRuns)
	}
	for _, c := range []struct {
		name      string
		got, want []string
	}{{"events", got.events, want.events}, {"model requests", got.requests, want.requests}} {
		if len(c.got) != len(c.want) {
			t.Errorf("%s: %d %s, the fresh checkpoint's resume gave %d:\n got: %s\nwant: %s", what, len(c.got), c.name, len(c.want),
				strings.Join(c.got, "\n      "), strings.Join(c.want, "\n      "))
			continue
		}
		for i := range c.got {
			if c.got[i] != c.want[i] {
				t.Errorf("%s: %s[%d] differs:\n got: %s\nwant: %s", what, c.name, i, c.got[i], c.want[i])
			}
		}
	}
}

// TestCheckpointFixturesResume resumes the stored checkpoint of every
// format version (and the same checkpoint stored without a version field,
// as before the field existed) with Executor.Resume, Approve and Deny in a
// new executor, as another process would, and checks that the run
// continues exactly as resuming the freshly produced checkpoint does: the
// same events and the same requests to the model.
func TestCheckpointFixturesResume(t *testing.T) {
	t.Parallel()
	for _, sc := range cpScenarios() {
		for _, rs := range sc.resumes {
			t.Run(sc.name+"/"+rs.name, func(t *testing.T) {
				t.Parallel()
				// The run as today's code continues it, from its own checkpoint.
				var freshWrites atomic.Int32
				e, m, cp := interruptScenario(t, sc, rs.turns, &freshWrites)
				items := drain(t, rs.resume(e, cp))
				if _, rf := finished(t, items); rf.Text != rs.turns[len(rs.turns)-1].Text {
					t.Fatalf("fresh resume finished with %q", rf.Text)
				}
				want := record(t, items, m.Requests()[len(sc.turns):], freshWrites.Load())
				if want.toolRuns != rs.toolRuns {
					t.Fatalf("fresh resume ran the write tool %d times, want %d", want.toolRuns, rs.toolRuns)
				}

				for v := 1; v <= agents.CheckpointVersion; v++ {
					data, err := os.ReadFile(cpFixturePath(v, sc.name))
					if err != nil {
						t.Fatalf("fixture: %v", err)
					}
					variants := []struct {
						name string
						data []byte
					}{{fmt.Sprintf("v%d", v), data}}
					if v == 1 {
						variants = append(variants, struct {
							name string
							data []byte
						}{"v1 without a version field", withoutVersion(t, data)})
					}
					for _, vr := range variants {
						var stored agents.Checkpoint
						if err := json.Unmarshal(vr.data, &stored); err != nil {
							t.Fatalf("%s: decode: %v", vr.name, err)
						}
						if stored.Version != agents.CheckpointVersion {
							t.Errorf("%s: decoded Version = %d, want the current %d", vr.name, stored.Version, agents.CheckpointVersion)
						}
						var writes atomic.Int32
						fm := &scripted.Model{Turns: rs.turns}
						fe := cpExecutor(t, fm, sc.tools(&writes))
						got := record(t, drain(t, rs.resume(fe, &stored)), fm.Requests(), writes.Load())
						diffRecords(t, vr.name, got, want)
					}
				}
			})
		}
	}
}

// withoutVersion returns data with its "version" member removed.
func withoutVersion(t testing.TB, data []byte) []byte {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	if _, ok := obj["version"]; !ok {
		t.Fatal("fixture has no version member")
	}
	delete(obj, "version")
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// withVersion returns data with its "version" member set to raw.
func withVersion(t testing.TB, data []byte, raw string) []byte {
	t.Helper()
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	obj["version"] = json.RawMessage(raw)
	out, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestCheckpointVersionRefused: a checkpoint of a version this code does
// not know (newer, or not a version) is refused when decoded, through
// json.Unmarshal as the service decodes it and through DecodeCheckpoint,
// with an error matching ErrCheckpointVersion and ErrBadCheckpoint that
// names the version; nothing is resumed.
func TestCheckpointVersionRefused(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(cpFixturePath(1, "question"))
	if err != nil {
		t.Fatal(err)
	}
	newer := agents.CheckpointVersion + 1
	for _, c := range []struct {
		raw  string
		want string
	}{
		{strconv.Itoa(newer), fmt.Sprintf("version %d was written by a newer bichat", newer)},
		{"99", "version 99 was written by a newer bichat"},
		{"0", "version 0 is not a checkpoint format"},
		{"-1", "version -1 is not a checkpoint format"},
	} {
		bad := withVersion(t, data, c.raw)
		var cp agents.Checkpoint
		err := json.Unmarshal(bad, &cp)
		if !errors.Is(err, agents.ErrCheckpointVersion) || !errors.Is(err, agents.ErrBadCheckpoint) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("json.Unmarshal(version %s) = %v, want ErrCheckpointVersion saying %q", c.raw, err, c.want)
		}
		if cp.ID != "" || cp.Messages != nil {
			t.Errorf("version %s: refused decode filled the checkpoint: %+v", c.raw, cp)
		}
		if got, err := agents.DecodeCheckpoint(bad); got != nil || !errors.Is(err, agents.ErrCheckpointVersion) {
			t.Errorf("DecodeCheckpoint(version %s) = %v, %v; want ErrCheckpointVersion", c.raw, got, err)
		}
	}
	// A version that is not a number, and input that is not a checkpoint.
	for _, bad := range [][]byte{withVersion(t, data, `"1"`), []byte(`[]`), []byte(`null`), []byte(``), []byte(`{"messages":3}`)} {
		if got, err := agents.DecodeCheckpoint(bad); got != nil || !errors.Is(err, agents.ErrBadCheckpoint) {
			t.Errorf("DecodeCheckpoint(%s) = %v, %v; want ErrBadCheckpoint", bad, got, err)
		}
	}
}

// TestDecodeCheckpoint: DecodeCheckpoint and json.Unmarshal decode a
// stored checkpoint alike, a checkpoint without a version field decodes
// as the current version, and re-encoding a decoded fixture of the current
// version gives back the stored JSON.
func TestDecodeCheckpoint(t *testing.T) {
	t.Parallel()
	for _, sc := range cpScenarios() {
		data, err := os.ReadFile(cpFixturePath(agents.CheckpointVersion, sc.name))
		if err != nil {
			t.Fatal(err)
		}
		cp, err := agents.DecodeCheckpoint(data)
		if err != nil {
			t.Fatalf("%s: DecodeCheckpoint: %v", sc.name, err)
		}
		var viaJSON agents.Checkpoint
		if err := json.Unmarshal(data, &viaJSON); err != nil {
			t.Fatalf("%s: json.Unmarshal: %v", sc.name, err)
		}
		a, _ := json.Marshal(cp)
		b, _ := json.Marshal(&viaJSON)
		if !bytes.Equal(a, b) {
			t.Errorf("%s: DecodeCheckpoint and json.Unmarshal differ:\n%s\n%s", sc.name, a, b)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, compact.Bytes()) {
			t.Errorf("%s: re-encoding the current version's fixture changed it:\n got: %s\nwant: %s", sc.name, a, compact.Bytes())
		}
		if cp.Kind != sc.kind || cp.Version != agents.CheckpointVersion || cp.TenantID != "t1" || !cp.CreatedAt.Equal(cpClock) {
			t.Errorf("%s: decoded %+v", sc.name, cp)
		}
		if sc.kind == domain.CheckpointConfirmation &&
			(cp.Confirmation == nil || !cp.Confirmation.ExpiresAt.Equal(cpClock.Add(agents.DefaultConfirmationTTL))) {
			t.Errorf("%s: confirmation %+v does not expire at the fixture clock plus the default TTL", sc.name, cp.Confirmation)
		}
		unversioned, err := agents.DecodeCheckpoint(withoutVersion(t, data))
		if err != nil || unversioned.Version != agents.CheckpointVersion {
			t.Errorf("%s without a version: %+v, %v", sc.name, unversioned, err)
		}
	}
	// An Interrupted event carrying a checkpoint decodes through it too.
	var ev struct {
		Checkpoint *agents.Checkpoint `json:"checkpoint"`
	}
	if err := json.Unmarshal([]byte(`{"checkpoint":null}`), &ev); err != nil || ev.Checkpoint != nil {
		t.Errorf("null checkpoint = %+v, %v", ev.Checkpoint, err)
	}
}
