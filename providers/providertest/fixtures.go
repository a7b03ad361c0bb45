package providertest

import (
	"context"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
)

// EnvFixtures names the environment variable that overrides where
// FixtureDir looks for the vendor fixtures.
const EnvFixtures = "BICHAT_PROVIDER_FIXTURES"

// FixtureDir returns the folder of recorded and published vendor responses
// (shared/reference/provider-fixtures beside the repository, or
// $BICHAT_PROVIDER_FIXTURES). The fixtures are never copied into the
// repository. When the folder is absent the test is skipped with a
// message, except under CI=true, where the folder is always checked out
// beside the repository and its absence fails the test.
func FixtureDir(t testing.TB) string {
	t.Helper()
	if d := os.Getenv(EnvFixtures); d != "" {
		return checkFixtureDir(t, d)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatalf("providertest: working directory: %v", err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return checkFixtureDir(t, filepath.Join(filepath.Dir(dir), "shared", "reference", "provider-fixtures"))
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return checkFixtureDir(t, "")
}

func checkFixtureDir(t testing.TB, dir string) string {
	t.Helper()
	if dir != "" {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	msg := "providertest: vendor fixtures not found at " + dir + " (shared/reference/provider-fixtures beside the repository, or $" + EnvFixtures + ")"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// FixtureFiles lists the files under dir/sub, as slash paths relative to
// dir, sorted.
func FixtureFiles(t testing.TB, dir, sub string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(filepath.Join(dir, sub), func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		out = append(out, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		t.Fatalf("providertest: list fixtures: %v", err)
	}
	slices.Sort(out)
	return out
}

// Coverage makes sure every fixture file is accounted for: replayed and
// checked, or declared not applicable with a reason. Check fails the test
// for any file left over, so a new vendor file forces a review.
type Coverage struct {
	mu   sync.Mutex
	seen map[string]string
}

// Cover records that file was replayed and checked.
func (c *Coverage) Cover(file string) { c.mark(file, "") }

// NotApplicable records that file is deliberately not replayed, and why.
func (c *Coverage) NotApplicable(file, reason string) {
	if reason == "" {
		panic("providertest: NotApplicable needs a reason")
	}
	c.mark(file, reason)
}

func (c *Coverage) mark(file, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.seen == nil {
		c.seen = map[string]string{}
	}
	c.seen[file] = reason
}

// Check fails t for every file of files that was not accounted for.
func (c *Coverage) Check(t testing.TB, files []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range files {
		if _, ok := c.seen[f]; !ok {
			t.Errorf("fixture %s is not covered: replay and check it, or declare it not applicable with a reason", f)
		}
	}
}

// Replay is one fixture served by ServeFixture.
type Replay struct {
	// Status is the HTTP status (default 200).
	Status int
	// ContentType is sent as Content-Type (default text/event-stream).
	ContentType string
	// Body is sent byte for byte.
	Body []byte
}

// ServeFixture starts a server that answers every request with r, and
// returns its URL; the server is closed with the test.
func ServeFixture(t testing.TB, r Replay) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		ct := r.ContentType
		if ct == "" {
			ct = "text/event-stream"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(cmpOr(r.Status, http.StatusOK))
		_, _ = w.Write(r.Body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func cmpOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// Collect streams one request through m (a model pointed at a fixture
// server) and returns the chunks, the assembled response (nil when the
// stream failed or did not assemble) and the stream's error.
func Collect(t testing.TB, m agents.Model) (chunks []agents.Chunk, resp *agents.Response, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req := &agents.Request{Messages: []agents.Message{agents.UserMessage("replay")}}
	var acc agents.Accumulator
	for c, serr := range m.Stream(ctx, req) {
		if serr != nil {
			return chunks, nil, serr
		}
		chunks = append(chunks, c)
		if aerr := acc.Add(c); aerr != nil {
			return chunks, nil, aerr
		}
	}
	resp, err = acc.Response()
	return chunks, resp, err
}

// SplitSSE is a minimal, independent reading of an event stream for
// tests: events separated by blank lines (LF or CRLF), their data lines
// joined with "\n", a last event without a closing blank line kept.
// It returns each event's name and data.
func SplitSSE(body []byte) (names, data []string) {
	s := strings.ReplaceAll(string(body), "\r\n", "\n")
	for _, block := range strings.Split(s, "\n\n") {
		var name string
		var lines []string
		has := false
		for _, line := range strings.Split(block, "\n") {
			switch {
			case strings.HasPrefix(line, "event:"):
				name = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
			case strings.HasPrefix(line, "data:"):
				v := strings.TrimPrefix(line, "data:")
				v = strings.TrimPrefix(v, " ")
				lines = append(lines, v)
				has = true
			}
		}
		if has {
			names = append(names, name)
			data = append(data, strings.Join(lines, "\n"))
		}
	}
	return names, data
}

// ItemKinds returns the kinds of a response's provider items, in order.
func ItemKinds(r *agents.Response) []agents.ItemKind {
	var out []agents.ItemKind
	for _, it := range r.Items {
		out = append(out, it.Kind)
	}
	return out
}

// ReasoningText returns the text of a response's reasoning parts, joined
// in order.
func ReasoningText(r *agents.Response) string {
	var b strings.Builder
	for _, p := range r.Message.Parts {
		if p.Reasoning != nil {
			b.WriteString(p.Reasoning.Text)
		}
	}
	return b.String()
}

// SameJSON reports whether a and b encode the same JSON value (object
// member order and spacing aside); when either is not valid JSON it
// compares them as text.
func SameJSON(a, b string) bool {
	var x, y any
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return a == b
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
