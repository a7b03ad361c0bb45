package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/domain"
)

// The replica test runs the example server as two Docker containers on
// one PostgreSQL schema, as a deployment would, and kills one of them in
// the middle of an answer.
const (
	// replicaLease is the run lease the replicas use (-lease); their
	// reapers sweep every third of it.
	replicaLease = 2 * time.Second
	// replicaPace slows the scripted analyst (-pace) so that the long
	// answer (QuestionMonths) takes a few seconds.
	replicaPace = 40 * time.Millisecond
	// replicaFailBound bounds the time from the kill of a replica to the
	// message_error its watcher gets on another replica: what is left of
	// the lease (at most one lease), one reaper interval (a third of it),
	// and slack for LISTEN/NOTIFY and a loaded machine.
	replicaFailBound = 8 * time.Second
	// replicaLabel marks the containers of one test run, so that cleanup
	// removes only those.
	replicaLabel = "bichat.test.run"
)

// TestReplicas: three replicas of examples/server (a static binary in a
// Docker image built with docker import) share one PostgreSQL schema and
// nothing else. A run started on B is watched through A to its end; a
// question asked on A is answered on B and the confirmation that follows
// approved on A. A run started on A is watched through B and A is killed
// (SIGKILL) mid-answer: B's reaper fails the run within one lease, the
// watcher on B gets message_error "lease_expired" with no gap or
// duplicate in the event ids, and the chat takes a new question on B.
// Last, C is stopped (SIGTERM) in the middle of a run watched through B,
// which ends at once with message_error "shutdown".
func TestReplicas(t *testing.T) {
	dsn := storeDSN(t)
	requireDocker(t)
	schema := tempSchema(t, dsn) // dropped last: cleanups run in reverse
	runTag := randomHex(t, 6)
	image := buildServerImage(t, runTag)

	env := []string{
		"BICHAT_STORE_URL=" + dsn,
		"BICHAT_CONFIRMATION_KEY=" + randomHex(t, 24),
	}
	reps := startReplicas(t, image, runTag, schema, env, "a", "b", "c")
	a, b, c := reps[0], reps[1], reps[2]
	t.Logf("replicas at %s (a), %s (b), %s (c)", a.url, b.url, c.url)

	ok := t.Run("runs watched and answered across replicas", func(t *testing.T) {
		sessionID, msgID := replicaAsk(t, b.url, "", QuestionRegions)
		evs := openStream(t, a.url, msgID).rest(t, 30*time.Second)
		consecutive(t, evs)
		if got := names(evs); got[0] != bichat.SSEMessageStart || got[len(got)-1] != bichat.SSEMessageComplete {
			t.Fatalf("the stream on A is %v", got)
		}
		var done bichat.EventComplete
		find(t, evs, bichat.SSEMessageComplete, &done)
		if !strings.Contains(done.Text, "highest revenue in 2025") {
			t.Errorf("message_complete text on A = %q", done.Text)
		}
		// A is a replica like any other: the chat it did not run takes the
		// next question there.
		_, next := replicaAsk(t, a.url, sessionID, QuestionMonths)
		if got := names(openStream(t, b.url, next).rest(t, 30*time.Second)); got[len(got)-1] != bichat.SSEMessageComplete {
			t.Fatalf("the next run (on A, watched on B) ended with %v", got)
		}

		// A question asked on A is answered on B, and the confirmation
		// B's run asks for is approved on A: the interrupt is in the
		// database and the replicas share the key that signs the token.
		// The question is asked on A as soon as B showed the end of A's
		// run: A must have freed the session by the time any replica
		// shows the terminal event, not only its own watchers (a 409
		// "still being generated" here means it had not).
		_, pin := replicaAsk(t, a.url, sessionID, QuestionPin)
		evs = openStream(t, b.url, pin).rest(t, 30*time.Second)
		if got := names(evs); got[len(got)-1] != bichat.SSEInterrupt {
			t.Fatalf("the pin run (on A, watched on B) ended with %v, want an interrupt", got)
		}
		replicaCall(t, b.url, http.MethodPost, "/api/messages/"+pin+"/answers",
			map[string]any{"answers": map[string]any{"dashboard": map[string]any{"selected": []string{"Executive summary"}}}},
			http.StatusAccepted, nil)
		var conf bichat.EventConfirmation
		find(t, openStream(t, a.url, pin).rest(t, 30*time.Second), bichat.SSEConfirmationRequired, &conf)
		if conf.Confirmation == nil || conf.Confirmation.Tool != ToolPinChart {
			t.Fatalf("confirmation seen on A: %+v", conf.Confirmation)
		}
		replicaCall(t, a.url, http.MethodPost, "/api/messages/"+pin+"/approve",
			map[string]string{"token": conf.Confirmation.Token}, http.StatusAccepted, nil)
		evs = openStream(t, b.url, pin).rest(t, 30*time.Second)
		find(t, evs, bichat.SSEMessageComplete, &done)
		if !strings.Contains(done.Text, "pinned to **Executive summary**") {
			t.Errorf("the approved pin answered %q", done.Text)
		}
	})
	if !ok {
		return
	}

	t.Run("replica killed mid-run", func(t *testing.T) {
		sessionID, msgID := replicaAsk(t, a.url, "", QuestionMonths)
		st := openStream(t, b.url, msgID)
		before := intoAnswer(t, st)
		a.kill(t)
		killed := time.Now()

		after := st.rest(t, replicaFailBound+5*time.Second)
		elapsed := time.Since(killed)
		all := append(slices.Clone(before), after...)
		consecutive(t, all)
		if len(after) == 0 || after[len(after)-1].Name != bichat.SSEMessageError {
			t.Fatalf("after the kill the stream on B went on with %v", names(after))
		}
		var fail bichat.EventError
		if err := json.Unmarshal(after[len(after)-1].Data, &fail); err != nil {
			t.Fatal(err)
		}
		if fail.Code != "lease_expired" {
			t.Errorf("message_error code = %q, want lease_expired (%+v)", fail.Code, fail)
		}
		t.Logf("kill of A -> message_error on B: %v (%d events before the kill, %d after)", elapsed.Round(time.Millisecond), len(before), len(after))
		if elapsed > replicaFailBound {
			t.Errorf("message_error came %v after the kill, want under %v (lease %v)", elapsed, replicaFailBound, replicaLease)
		}
		for _, ev := range after[:len(after)-1] {
			if ev.Name == bichat.SSEMessageComplete {
				t.Fatalf("the killed run completed: %v", names(after))
			}
		}

		// The run log on B replays the same events, and the message is
		// failed for good.
		if replay := openStream(t, b.url, msgID).rest(t, 10*time.Second); !sameEvents(replay, all) {
			t.Errorf("replay on B differs from the live stream:\n replay %v\n live   %v", ids(replay), ids(all))
		}
		var m bichat.MessageView
		replicaCall(t, b.url, http.MethodGet, "/api/messages/"+msgID, nil, http.StatusOK, &m)
		if m.Status != domain.StatusFailed || m.Metadata.Error == nil || m.Metadata.Error.Code != "lease_expired" {
			t.Errorf("the killed run's message on B: status %s, error %+v", m.Status, m.Metadata.Error)
		}

		// The chat takes a new question on B.
		_, next := replicaAsk(t, b.url, sessionID, QuestionRegions)
		evs := openStream(t, b.url, next).rest(t, 30*time.Second)
		consecutive(t, evs)
		if got := names(evs); got[len(got)-1] != bichat.SSEMessageComplete {
			t.Fatalf("the question after the kill ended with %v", got)
		}
		var page bichat.MessageList
		replicaCall(t, b.url, http.MethodGet, "/api/sessions/"+sessionID+"/messages", nil, http.StatusOK, &page)
		var statuses []domain.MessageStatus
		for _, m := range page.Items {
			if m.Role == domain.RoleAssistant {
				statuses = append(statuses, m.Status)
			}
		}
		if !slices.Equal(statuses, []domain.MessageStatus{domain.StatusFailed, domain.StatusComplete}) {
			t.Errorf("the chat's answers on B are %v, want [failed complete]", statuses)
		}
	})

	t.Run("replica stopped mid-run", func(t *testing.T) {
		// A replica stopped with SIGTERM (docker stop, a rolling update)
		// ends its runs as "shutdown" at once instead of leaving them to
		// the reaper, and exits cleanly.
		sessionID, msgID := replicaAsk(t, c.url, "", QuestionMonths)
		st := openStream(t, b.url, msgID)
		before := intoAnswer(t, st)
		stopped := time.Now()
		docker(t, 30*time.Second, nil, "stop", "--time", "20", c.container)
		after := st.rest(t, replicaFailBound)
		elapsed := time.Since(stopped)
		consecutive(t, append(slices.Clone(before), after...))
		if len(after) == 0 || after[len(after)-1].Name != bichat.SSEMessageError {
			t.Fatalf("after the stop the stream on B went on with %v", names(after))
		}
		var fail bichat.EventError
		if err := json.Unmarshal(after[len(after)-1].Data, &fail); err != nil {
			t.Fatal(err)
		}
		if fail.Code != "shutdown" {
			t.Errorf("message_error code = %q, want shutdown (%+v)", fail.Code, fail)
		}
		t.Logf("docker stop of C -> message_error on B: %v", elapsed.Round(time.Millisecond))
		if elapsed >= replicaLease {
			t.Errorf("message_error came %v after the stop, not before the lease (%v) would have run out", elapsed, replicaLease)
		}
		if code := docker(t, 10*time.Second, nil, "inspect", "--format", "{{.State.ExitCode}}", c.container); code != "0" {
			t.Errorf("replica c exited with code %s after SIGTERM", code)
		}
		_, next := replicaAsk(t, b.url, sessionID, QuestionRegions)
		if got := names(openStream(t, b.url, next).rest(t, 30*time.Second)); got[len(got)-1] != bichat.SSEMessageComplete {
			t.Fatalf("the question after the stop ended with %v", got)
		}
	})
}

// intoAnswer reads a stream of QuestionMonths into its final turn (three
// text events after the query's tool_result), failing the test if the
// run ends first, and returns the events read.
func intoAnswer(t *testing.T, st *liveStream) []sseEvent {
	t.Helper()
	var evs []sseEvent
	for texts := 0; texts < 3; {
		ev, ok := st.next(t, 15*time.Second)
		if !ok {
			t.Fatalf("the stream ended in the middle of the answer: %v", names(evs))
		}
		evs = append(evs, ev)
		if ev.Name == bichat.SSEMessageComplete || ev.Name == bichat.SSEMessageError {
			t.Fatalf("the run ended too soon (make -pace slower): %v", names(evs))
		}
		if ev.Name == bichat.SSEText && slices.Contains(names(evs), bichat.SSEToolResult) {
			texts++
		}
	}
	return evs
}

// requireDocker skips the test (fails it under
// BICHAT_REQUIRE_INTEGRATION=1) when there is no docker CLI or engine.
func requireDocker(t *testing.T) {
	t.Helper()
	unavailable := func(why string) {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatalf("Docker is required (BICHAT_REQUIRE_INTEGRATION=1): %s", why)
		}
		t.Skip("no Docker engine: " + why)
	}
	if _, err := exec.LookPath("docker"); err != nil {
		unavailable("the docker CLI is not on PATH")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "version", "--format", "{{.Server.Version}}").CombinedOutput()
	if err != nil {
		unavailable(fmt.Sprintf("docker version: %v: %s", err, bytes.TrimSpace(out)))
	}
}

// docker runs the docker CLI within timeout and returns its standard
// output, failing the test with its error output otherwise.
func docker(t *testing.T, timeout time.Duration, stdin io.Reader, args ...string) string {
	t.Helper()
	out, err := dockerCmd(timeout, stdin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// dockerCmd runs the docker CLI within timeout (for cleanups, which run
// after the test's context ended).
func dockerCmd(timeout time.Duration, stdin io.Reader, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "docker", args...)
	cmd.Stdin = stdin
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr.Bytes()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// buildServerImage builds examples/server as a static binary and imports
// a root filesystem holding only that binary and a /tmp (where the server
// writes its SQLite sample data) as a Docker image, removed at the end.
func buildServerImage(t *testing.T, runTag string) string {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("build the server: the go command is not on PATH: %v", err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "server")
	// A cold build cache takes about a minute on two cores; the cached
	// build a few seconds.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	start := time.Now()
	cmd := exec.CommandContext(ctx, goTool, "build", "-ldflags=-s -w", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the server: %v: %s", err, out)
	}
	t.Logf("built the static server in %v", time.Since(start).Round(time.Millisecond))
	checkStatic(t, bin)

	var rootfs bytes.Buffer
	tw := tar.NewWriter(&rootfs)
	now := time.Now()
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: now}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "server", Mode: 0o755, Size: int64(len(data)), ModTime: now}); err != nil {
		t.Fatal(err)
	}
	if _, err := tw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	image := "bichat-server-test:" + runTag
	docker(t, 2*time.Minute, &rootfs, "import", "--change", `ENTRYPOINT ["/server"]`, "-", image)
	t.Cleanup(func() {
		if _, err := dockerCmd(time.Minute, nil, "image", "rm", "--force", image); err != nil {
			t.Errorf("remove the test image: %v", err)
		}
	})
	return image
}

// checkStatic fails the test unless bin is an ELF executable with no
// program interpreter and no shared libraries (the image has no libc).
func checkStatic(t *testing.T, bin string) {
	t.Helper()
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatalf("read the server binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Fatal("the server binary is dynamically linked (it has a program interpreter)")
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil && len(libs) > 0 {
		t.Fatalf("the server binary needs shared libraries %v", libs)
	}
}

// replica is one container running the example server.
type replica struct {
	name      string
	container string
	url       string
}

// startReplicas starts one container per name, on the host network (so
// that they reach PostgreSQL on the loopback and the test reaches them),
// and waits until each serves the API. They are removed at the end, with
// their logs reported when the test failed.
func startReplicas(t *testing.T, image, runTag, schema string, env []string, names ...string) []*replica {
	t.Helper()
	t.Cleanup(func() {
		ids, err := dockerCmd(30*time.Second, nil, "ps", "--all", "--quiet", "--filter", "label="+replicaLabel+"="+runTag)
		if err != nil {
			t.Errorf("list the test containers: %v", err)
			return
		}
		if ids = strings.TrimSpace(ids); ids != "" {
			if _, err := dockerCmd(time.Minute, nil, append([]string{"rm", "--force"}, strings.Fields(ids)...)...); err != nil {
				t.Errorf("remove the test containers: %v", err)
			}
		}
	})
	var reps []*replica
	for _, name := range names {
		args := []string{"run", "--detach", "--network", "host", "--user", "65534:65534",
			"--name", "bichat-replica-" + name + "-" + runTag, "--label", replicaLabel + "=" + runTag}
		// The DSN and the key come from the docker CLI's environment, so
		// they are not on any command line.
		for _, kv := range env {
			args = append(args, "--env", strings.SplitN(kv, "=", 2)[0])
		}
		args = append(args, image, "-addr", "127.0.0.1:0", "-schema", schema,
			"-lease", replicaLease.String(), "-pace", replicaPace.String(), "-offline", "-no-sandbox")
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		cmd := exec.CommandContext(ctx, "docker", args...)
		cmd.Env = append(os.Environ(), env...)
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("start replica %s: %v: %s", name, err, out)
		}
		r := &replica{name: name, container: strings.TrimSpace(string(out))}
		reps = append(reps, r)
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("logs of replica %s:\n%s", r.name, r.logs("40"))
			}
		})
	}
	for _, r := range reps {
		r.waitReady(t, 60*time.Second)
	}
	return reps
}

var listening = regexp.MustCompile(`listening on (http://[^/\s]+)/`)

// waitReady waits until the replica printed its address and answers
// GET /api/sessions.
func (r *replica) waitReady(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if time.Now().After(deadline) {
			t.Fatalf("replica %s did not start within %v; logs:\n%s", r.name, timeout, r.logs("all"))
		}
		if r.url == "" {
			running, err := dockerCmd(10*time.Second, nil, "inspect", "--format", "{{.State.Running}}", r.container)
			if err == nil && running == "false" {
				t.Fatalf("replica %s exited; logs:\n%s", r.name, r.logs("all"))
			}
			if m := listening.FindSubmatch(r.logs("all")); m != nil {
				r.url = string(m[1])
			}
		}
		if r.url != "" {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, r.url+"/api/sessions", nil)
			res, err := http.DefaultClient.Do(req)
			if err == nil {
				res.Body.Close()
			}
			cancel()
			if err == nil && res.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logs returns the last lines of the replica's output (tail: a number
// or "all"); the server writes to its standard error.
func (r *replica) logs(tail string) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "docker", "logs", "--tail", tail, r.container).CombinedOutput()
	if err != nil {
		return fmt.Appendf(out, "\n(docker logs: %v)", err)
	}
	return out
}

// kill kills the replica's process with SIGKILL: no shutdown, no lease
// released, as when a machine dies.
func (r *replica) kill(t *testing.T) {
	t.Helper()
	docker(t, 30*time.Second, nil, "kill", "--signal", "KILL", r.container)
	running := docker(t, 10*time.Second, nil, "inspect", "--format", "{{.State.Running}}", r.container)
	if running != "false" {
		t.Fatalf("replica %s still runs after docker kill", r.name)
	}
}

// replicaClient serves the requests of the test other than event streams.
var replicaClient = &http.Client{Timeout: 15 * time.Second}

// replicaCall is call for the replica at base.
func replicaCall(t *testing.T, base, method, path string, body any, want int, out any) {
	t.Helper()
	callAt(t, replicaClient, base, method, path, body, want, out)
}

// replicaAsk is ask for the replica at base.
func replicaAsk(t *testing.T, base, sessionID, text string) (string, string) {
	t.Helper()
	return askAt(t, replicaClient, base, sessionID, text)
}

// liveStream reads a message's event stream as the events arrive.
type liveStream struct {
	events <-chan sseEvent
	err    error // why the stream ended; read after events is closed
	cancel context.CancelFunc
}

// openStream opens the event stream of a message on the replica at base;
// it is closed at the end of the test.
func openStream(t *testing.T, base, messageID string) *liveStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/messages/"+messageID+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatalf("events of %s on %s: %v", messageID, base, err)
	}
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/event-stream") {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		t.Fatalf("events of %s on %s: status %d %s: %s", messageID, base, res.StatusCode, res.Header.Get("Content-Type"), b)
	}
	ch := make(chan sseEvent)
	st := &liveStream{events: ch, cancel: cancel}
	go func() {
		defer close(ch)
		defer res.Body.Close()
		var cur sseEvent
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if cur.Name != "" {
					select {
					case ch <- cur:
					case <-ctx.Done():
						return
					}
				}
				cur = sseEvent{}
			case strings.HasPrefix(line, "id: "):
				cur.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				cur.Name = line[7:]
			case strings.HasPrefix(line, "data: "):
				cur.Data = json.RawMessage(line[6:])
			}
		}
		st.err = sc.Err()
	}()
	return st
}

// next returns the next event, or false when the stream ended cleanly;
// it fails the test when none comes within timeout or the stream broke.
func (s *liveStream) next(t *testing.T, timeout time.Duration) (sseEvent, bool) {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case ev, ok := <-s.events:
		if !ok && s.err != nil && !errors.Is(s.err, io.EOF) {
			t.Fatalf("event stream broke: %v", s.err)
		}
		return ev, ok
	case <-timer.C:
		s.cancel()
		t.Fatalf("no event within %v", timeout)
		return sseEvent{}, false
	}
}

// rest reads the events until the stream ends, which must happen within
// timeout.
func (s *liveStream) rest(t *testing.T, timeout time.Duration) []sseEvent {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var out []sseEvent
	for {
		left := time.Until(deadline)
		if left <= 0 {
			s.cancel()
			t.Fatalf("the stream did not end within %v: %v", timeout, names(out))
		}
		ev, ok := s.next(t, left)
		if !ok {
			return out
		}
		out = append(out, ev)
	}
}

// consecutive fails the test unless the events' ids are 1, 2, 3...: no
// gap, no duplicate (every event of a run without sub-agents is sent).
func consecutive(t *testing.T, evs []sseEvent) {
	t.Helper()
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	for i, e := range evs {
		if n, err := strconv.Atoi(e.ID); err != nil || n != i+1 {
			t.Fatalf("event %d (%s) has id %q, want %d: ids %v", i, e.Name, e.ID, i+1, ids(evs))
		}
	}
}

func ids(evs []sseEvent) []string {
	out := make([]string, len(evs))
	for i, e := range evs {
		out[i] = e.ID + ":" + e.Name
	}
	return out
}

// sameEvents reports whether two streams carry the same events.
func sameEvents(x, y []sseEvent) bool {
	return slices.EqualFunc(x, y, func(a, b sseEvent) bool {
		return a.ID == b.ID && a.Name == b.Name && bytes.Equal(a.Data, b.Data)
	})
}

// randomHex returns n random bytes in hexadecimal.
func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
