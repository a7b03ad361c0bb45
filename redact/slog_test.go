package redact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/redact"
)

// capture keeps the records it handles (with the attributes and groups
// given to WithAttrs/WithGroup) so tests can inspect the values
// themselves, not just their printed form.
type capture struct {
	mu      *sync.Mutex
	records *[]slog.Record
	handled **capture // the capture that handled the last record
	pre     []slog.Attr
	groups  []string
}

func newCapture() *capture {
	var last *capture
	return &capture{mu: &sync.Mutex{}, records: &[]slog.Record{}, handled: &last}
}

func (c *capture) last() *capture {
	c.mu.Lock()
	defer c.mu.Unlock()
	return *c.handled
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }

// Handle records r with the WithAttrs attributes prepended.
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pre) > 0 {
		nr := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
		nr.AddAttrs(c.pre...)
		r.Attrs(func(a slog.Attr) bool { nr.AddAttrs(a); return true })
		r = nr
	}
	*c.records = append(*c.records, r)
	*c.handled = c
	return nil
}
func (c *capture) WithAttrs(as []slog.Attr) slog.Handler {
	n := *c
	n.pre = append(append([]slog.Attr(nil), c.pre...), as...)
	return &n
}
func (c *capture) WithGroup(name string) slog.Handler {
	n := *c
	n.groups = append(append([]string(nil), c.groups...), name)
	return &n
}

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

type creds struct {
	User     string `json:"user"`
	Password string `json:"password"`
}

type lazy struct{ v string }

func (l lazy) LogValue() slog.Value { return slog.StringValue(l.v) }

func TestHandlerScrubsRecords(t *testing.T) {
	t.Parallel()
	const secret = "hunter2secret"
	dsn := "postgres://bi:" + secret + "@db/bi"
	var buf bytes.Buffer
	logger := slog.New(redact.Default().Handler(slog.NewJSONHandler(&buf, nil)))
	baseErr := &fs.PathError{Op: "open", Path: dsn, Err: fs.ErrPermission}

	logger.With("dsn", dsn).WithGroup("req").With(slog.Group("auth", "header", "Bearer "+secret+"99")).
		Info("connect to "+dsn+" failed",
			"error", baseErr,
			"plain", "nothing here",
			"count", 3,
			slog.Group("db", "url", dsn, slog.Group("deeper", "pw", "password="+secret)),
			"stringer", stringer{"token=" + secret},
			"bytes", []byte("api_key="+secret),
			"raw", json.RawMessage(`{"password":"`+secret+`"}`),
			"struct", creds{User: "bi", Password: secret},
			"lazy", lazy{"secret=" + secret},
		)
	out := buf.String()
	if strings.Contains(out, secret) {
		t.Fatalf("log output leaks the secret:\n%s", out)
	}
	for _, want := range []string{
		`"msg":"connect to postgres://bi:[REDACTED]@db/bi failed"`,
		`"dsn":"postgres://bi:[REDACTED]@db/bi"`,
		`"req":{"auth":{"header":"Bearer [REDACTED]"}`,
		`"plain":"nothing here"`,
		`"count":3`,
		`"db":{"url":"postgres://bi:[REDACTED]@db/bi","deeper":{"pw":"password=[REDACTED]"}}`,
		`"stringer":"token=[REDACTED]"`,
		`"lazy":"secret=[REDACTED]"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("output is not one JSON record: %v\n%s", err, out)
	}
}

func TestHandlerKeepsErrorsInspectable(t *testing.T) {
	t.Parallel()
	c := newCapture()
	logger := slog.New(redact.Default().Handler(c))
	base := &fs.PathError{Op: "open", Path: "api_key=abcdef123456", Err: fs.ErrPermission}
	logger.Error("failed", "err", base)
	if len(*c.records) != 1 {
		t.Fatalf("%d records", len(*c.records))
	}
	var got error
	(*c.records)[0].Attrs(func(a slog.Attr) bool {
		got, _ = a.Value.Any().(error)
		return false
	})
	if got == nil {
		t.Fatal("the error attribute is no longer an error")
	}
	if strings.Contains(got.Error(), "abcdef123456") {
		t.Errorf("error message leaks: %q", got.Error())
	}
	var pe *fs.PathError
	if !errors.As(got, &pe) || pe != base || !errors.Is(got, fs.ErrPermission) {
		t.Error("scrubbed error does not unwrap to the original")
	}
}

func TestHandlerPassesCleanRecordsThrough(t *testing.T) {
	t.Parallel()
	c := newCapture()
	h := redact.Default().Handler(c)
	logger := slog.New(h)
	logger.Info("all good", "n", 1, "s", "plain", slog.Group("g", "k", "v"))
	rec := (*c.records)[0]
	if rec.Message != "all good" || rec.NumAttrs() != 3 {
		t.Errorf("record changed: %q with %d attrs", rec.Message, rec.NumAttrs())
	}
	if !h.Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Enabled not delegated")
	}
	quiet := redact.Default().Handler(slog.NewTextHandler(&bytes.Buffer{}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if quiet.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("Enabled not delegated to the wrapped handler's level")
	}
}

func TestHandlerWithAttrsAndGroups(t *testing.T) {
	t.Parallel()
	c := newCapture()
	h := redact.Default().Handler(c).
		WithAttrs([]slog.Attr{slog.String("key", "password=s3cr3t!"), slog.Int("n", 1)}).
		WithGroup("g").
		WithAttrs([]slog.Attr{slog.Group("inner", slog.String("auth", "Authorization: Basic dXNlcjpwYXNz"))})
	slog.New(h).Info("m", "tok", "Bearer abcdefgh12345")
	rec := (*c.records)[0]
	var all []string
	rec.Attrs(func(a slog.Attr) bool { all = append(all, a.String()); return true })
	joined := strings.Join(all, " ")
	for _, leak := range []string{"s3cr3t!", "dXNlcjpwYXNz", "abcdefgh12345"} {
		if strings.Contains(joined, leak) {
			t.Errorf("attributes leak %s: %s", leak, joined)
		}
	}
	for _, want := range []string{"key=password=[REDACTED]", "n=1", "inner=[auth=Authorization: Basic [REDACTED]]", "tok=Bearer [REDACTED]"} {
		if !strings.Contains(joined, want) {
			t.Errorf("attributes lack %s: %s", want, joined)
		}
	}
	if got := strings.Join(c.last().groups, "."); got != "g" {
		t.Errorf("groups = %q, want g", got)
	}

	var buf bytes.Buffer
	h3 := redact.Default().Handler(slog.NewTextHandler(&buf, nil)).
		WithAttrs([]slog.Attr{slog.String("key", "password=s3cr3t!")}).
		WithGroup("g").
		WithAttrs([]slog.Attr{slog.Group("inner", slog.String("auth", "Authorization: Basic dXNlcjpwYXNz"))})
	slog.New(h3).Info("m", "tok", "Bearer abcdefgh12345")
	out := buf.String()
	for _, leak := range []string{"s3cr3t!", "dXNlcjpwYXNz", "abcdefgh12345"} {
		if strings.Contains(out, leak) {
			t.Errorf("output leaks %s: %s", leak, out)
		}
	}
	for _, want := range []string{`key="password=[REDACTED]"`, `g.inner.auth="Authorization: Basic [REDACTED]"`, `g.tok="Bearer [REDACTED]"`} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %s: %s", want, out)
		}
	}
}
