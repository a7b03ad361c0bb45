package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const testSecret = "s3cr3t-VALUE-42"

// scrubSecret is the redaction function of these tests: it replaces
// testSecret, and the value of a "password" JSON member (which only the
// whole-text pass over tool arguments can see).
func scrubSecret(s string) string {
	s = strings.ReplaceAll(s, testSecret, "[X]")
	return passwordMember.ReplaceAllString(s, `${1}[X]"`)
}

var passwordMember = regexp.MustCompile(`("password"\s*:\s*")(?:[^"\\]|\\.)*"`)

// eventTypes lists a zero value of every event type of events.go, by
// type name.
var eventTypes = map[string]Event{
	"AgentStart": &AgentStart{}, "AgentFinish": &AgentFinish{}, "AgentError": &AgentError{},
	"LLMRequest": &LLMRequest{}, "LLMResponse": &LLMResponse{}, "ToolStart": &ToolStart{},
	"ToolFinish": &ToolFinish{}, "ToolError": &ToolError{}, "ContextCompile": &ContextCompile{},
	"SessionCreate": &SessionCreate{}, "SessionUpdate": &SessionUpdate{}, "SessionDelete": &SessionDelete{},
	"MessageSave": &MessageSave{}, "Interrupt": &Interrupt{}, "SQLQuery": &SQLQuery{},
	"SandboxRun": &SandboxRun{}, "ArtifactSave": &ArtifactSave{}, "Decision": &Decision{},
	"BudgetExceeded": &BudgetExceeded{}, "QuotaExceeded": &QuotaExceeded{},
}

// freeText lists, per event type, the fields that carry free text and
// must be scrubbed. notFreeText lists the other text-typed fields:
// identifiers, names chosen by the host and enumerations.
var (
	freeText = map[string][]string{
		"AgentError":    {"Err"},
		"LLMRequest":    {"Input"},
		"LLMResponse":   {"Err", "Output"},
		"ToolFinish":    {"Result"},
		"ToolStart":     {"Arguments"},
		"ToolError":     {"Err", "Stack"},
		"SessionCreate": {"Title"},
		"SessionUpdate": {"Title"},
		"MessageSave":   {"Text"},
		"SQLQuery":      {"SQL", "Reason"},
		"ArtifactSave":  {"Name"},
		"Decision":      {"Reason"},
	}
	notFreeText = map[string][]string{
		"AgentStart":     {"Agent", "Model"},
		"AgentFinish":    {"Agent", "Reason"},
		"AgentError":     {"Agent", "Code"},
		"LLMRequest":     {"Provider", "Model"},
		"LLMResponse":    {"Provider", "Model", "StopReason"},
		"ToolStart":      {"CallID", "Tool"},
		"ToolFinish":     {"CallID", "Tool"},
		"ToolError":      {"CallID", "Tool", "Code"},
		"ContextCompile": {"ByKind", "CachePrefixHash"},
		"SessionUpdate":  {"Model"},
		"MessageSave":    {"Role", "Status", "ErrorCode"},
		"Interrupt":      {"Reason", "Tool", "CallID"},
		"SQLQuery":       {"CallID", "Tool", "Dialect", "Error"},
		"SandboxRun":     {"CallID", "Outcome", "Unenforced"},
		"ArtifactSave":   {"CallID", "Tool", "ArtifactID", "MediaType", "SHA256"},
		"Decision":       {"Policy", "Outcome", "Tool", "CallID"},
		"BudgetExceeded": {"Scope"},
		"QuotaExceeded":  {"Scope", "Limit"},
	}
)

var errorType = reflect.TypeFor[error]()

// textFields returns the names of the fields of the struct e points to
// that can hold text (strings, errors, byte slices, string slices and
// maps), Meta excluded.
func textFields(e Event) []string {
	t := reflect.TypeOf(e).Elem()
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous {
			continue
		}
		switch {
		case f.Type == errorType, f.Type.Kind() == reflect.String, f.Type == jsonFuncType,
			f.Type.Kind() == reflect.Slice && (f.Type.Elem().Kind() == reflect.Uint8 || f.Type.Elem().Kind() == reflect.String),
			f.Type.Kind() == reflect.Map && f.Type.Key().Kind() == reflect.String:
			names = append(names, f.Name)
		}
	}
	return names
}

// jsonFuncType is the type of fields that return JSON when called
// (LLMRequest.Input).
var jsonFuncType = reflect.TypeFor[func() []byte]()

// TestEventTypesClassified fails when events.go gains an event type or a
// text field that this file does not classify as free text or not:
// deciding is what keeps secrets out of handlers.
func TestEventTypesClassified(t *testing.T) {
	t.Parallel()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "events.go", nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var declared []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Recv == nil || fn.Name.Name != "Kind" {
			continue
		}
		if star, ok := fn.Recv.List[0].Type.(*ast.StarExpr); ok {
			declared = append(declared, star.X.(*ast.Ident).Name)
		}
	}
	if len(declared) < 20 {
		t.Fatalf("found only %d event types in events.go: %v", len(declared), declared)
	}
	for _, name := range declared {
		e, ok := eventTypes[name]
		if !ok {
			t.Errorf("event type %s is not in eventTypes: add it and classify its fields", name)
			continue
		}
		_, scrubs := e.(Scrubber)
		if scrubs != (len(freeText[name]) > 0) {
			t.Errorf("%s: implements Scrubber = %v, but has free-text fields %v", name, scrubs, freeText[name])
		}
		for _, field := range textFields(e) {
			in, out := slices.Contains(freeText[name], field), slices.Contains(notFreeText[name], field)
			if in == out {
				t.Errorf("%s.%s: classify it in exactly one of freeText and notFreeText", name, field)
			}
		}
	}
}

// fill sets every text field of e to a value holding testSecret and
// returns the byte slices it set, to check they are not written to.
func fill(t *testing.T, e Event, base error) (owned [][]byte) {
	t.Helper()
	v := reflect.ValueOf(e).Elem()
	for _, name := range textFields(e) {
		f := v.FieldByName(name)
		switch {
		case f.Type() == errorType:
			f.Set(reflect.ValueOf(fmt.Errorf("call failed (key %s): %w", testSecret, base)))
		case f.Kind() == reflect.String:
			f.SetString("text " + testSecret)
		case f.Type() == reflect.TypeFor[json.RawMessage]():
			raw := json.RawMessage(`{"q":"select '` + testSecret + `'","note":"line\n` + testSecret + `","password":"hunter22","n":[1,"` + testSecret + `"]}`)
			owned = append(owned, raw)
			f.SetBytes(raw)
		case f.Type() == jsonFuncType:
			raw := []byte(`[{"role":"user","parts":[{"type":"text","content":"my key ` + testSecret + `"}]},{"password":"hunter22"}]`)
			owned = append(owned, raw)
			f.Set(reflect.ValueOf(func() []byte { return raw }))
		case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
			b := []byte("goroutine 1 " + testSecret)
			owned = append(owned, b)
			f.SetBytes(b)
		case f.Kind() == reflect.Slice:
			f.Set(reflect.ValueOf([]string{testSecret}))
		case f.Kind() == reflect.Map:
			f.Set(reflect.ValueOf(map[string]int{testSecret: 1}))
		}
	}
	return owned
}

// fieldText returns the text of field name of e.
func fieldText(e Event, name string) string {
	f := reflect.ValueOf(e).Elem().FieldByName(name)
	switch {
	case f.Type() == errorType:
		if f.IsNil() {
			return ""
		}
		return f.Interface().(error).Error()
	case f.Kind() == reflect.String:
		return f.String()
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Uint8:
		return string(f.Bytes())
	case f.Type() == jsonFuncType:
		if f.IsNil() {
			return ""
		}
		return string(f.Interface().(func() []byte)())
	}
	return fmt.Sprint(f.Interface())
}

func TestPublishScrubsEveryEventKind(t *testing.T) {
	t.Parallel()
	for name, proto := range eventTypes {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(Event)
			base := errors.New("base failure")
			owned := fill(t, e, base)
			snapshot := make([]string, len(owned))
			for i, b := range owned {
				snapshot[i] = string(b)
			}
			bus := New(Options{Redact: scrubSecret})
			defer bus.Close()
			var seen Event
			if _, err := bus.Subscribe(HandlerFunc(func(_ context.Context, got Event) error {
				seen = got
				for _, field := range freeText[name] {
					if txt := fieldText(got, field); strings.Contains(txt, testSecret) {
						t.Errorf("handler sees %s.%s = %q", name, field, txt)
					}
				}
				for _, field := range notFreeText[name] {
					if txt := fieldText(got, field); !strings.Contains(txt, testSecret) {
						t.Errorf("%s.%s is not free text but was changed: %q", name, field, txt)
					}
				}
				return nil
			})); err != nil {
				t.Fatal(err)
			}
			bus.Publish(context.Background(), e)
			if seen == nil {
				t.Fatal("handler not called")
			}
			for i, b := range owned {
				if string(b) != snapshot[i] {
					t.Errorf("the publisher's byte slice was written to: %q", b)
				}
			}
			v := reflect.ValueOf(seen).Elem()
			for _, field := range freeText[name] {
				f := v.FieldByName(field)
				switch {
				case f.Type() == errorType:
					err := f.Interface().(error)
					if !errors.Is(err, base) {
						t.Errorf("%s.%s no longer wraps the original error", name, field)
					}
				case f.Type() == reflect.TypeFor[json.RawMessage](), f.Type() == jsonFuncType:
					raw := []byte(fieldText(seen, field))
					if !json.Valid(raw) {
						t.Errorf("%s.%s is not valid JSON: %s", name, field, raw)
					}
					if bytes.Contains(raw, []byte("hunter22")) {
						t.Errorf("%s.%s keeps the password member: %s", name, field, raw)
					}
				}
			}
		})
	}
}

func TestPublishWithoutRedactLeavesEventsAlone(t *testing.T) {
	t.Parallel()
	bus := New(Options{})
	defer bus.Close()
	var got []Event
	if _, err := bus.Subscribe(HandlerFunc(func(_ context.Context, e Event) error {
		got = append(got, e)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	for name, proto := range eventTypes {
		e := reflect.New(reflect.TypeOf(proto).Elem()).Interface().(Event)
		fill(t, e, errors.New("base"))
		want := map[string]any{}
		for _, field := range textFields(e) {
			want[field] = reflect.ValueOf(e).Elem().FieldByName(field).Interface()
		}
		bus.Publish(context.Background(), e)
		last := got[len(got)-1]
		for _, field := range textFields(e) {
			f := reflect.ValueOf(last).Elem().FieldByName(field)
			if f.Type() == errorType {
				if f.Interface() != want[field] {
					t.Errorf("%s.%s: the error was replaced", name, field)
				}
				continue
			}
			if f.Type() == jsonFuncType { // funcs do not compare: compare what they return
				if got, w := fieldText(last, field), string(want[field].(func() []byte)()); got != w {
					t.Errorf("%s.%s changed without Redact: %s", name, field, got)
				}
				continue
			}
			if !reflect.DeepEqual(f.Interface(), want[field]) {
				t.Errorf("%s.%s changed without Redact", name, field)
			}
		}
	}
}

func TestPublishRedactsOncePerEvent(t *testing.T) {
	t.Parallel()
	var calls int
	f := func(s string) string { calls++; return scrubSecret(s) }
	bus := New(Options{Redact: f})
	defer bus.Close()
	ctx := context.Background()

	bus.Publish(ctx, &SessionCreate{Title: "no subscriber " + testSecret})
	if calls != 0 {
		t.Errorf("Redact called %d times without subscribers", calls)
	}
	for range 3 {
		if _, err := bus.Subscribe(HandlerFunc(func(_ context.Context, e Event) error {
			if strings.Contains(e.(*SessionCreate).Title, testSecret) {
				t.Error("a handler saw the secret")
			}
			return nil
		})); err != nil {
			t.Fatal(err)
		}
	}
	bus.Publish(ctx, &SessionCreate{Title: "title " + testSecret})
	if calls != 1 {
		t.Errorf("Redact called %d times for one event with 3 handlers, want 1", calls)
	}
	calls = 0
	bus.Publish(ctx, &AgentStart{Model: testSecret})
	if calls != 0 {
		t.Errorf("Redact called %d times for an event without free text", calls)
	}
}

func TestScrubErrorKeepsChain(t *testing.T) {
	t.Parallel()
	base := errors.New("base " + testSecret)
	if got := scrubError(nil, scrubSecret); got != nil {
		t.Errorf("scrubError(nil) = %v", got)
	}
	clean := errors.New("clean")
	if got := scrubError(clean, scrubSecret); got != clean {
		t.Errorf("clean error replaced by %v", got)
	}
	got := scrubError(fmt.Errorf("op: %w", base), scrubSecret)
	if got.Error() != "op: base [X]" {
		t.Errorf("Error() = %q", got.Error())
	}
	if !errors.Is(got, base) {
		t.Error("errors.Is lost the original")
	}
}

func TestScrubJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		f    func(string) string
		in   string
		want string
	}{
		{"clean", scrubSecret, `{"a":"b","n":1}`, `{"a":"b","n":1}`},
		{"values and keys, order kept", scrubSecret, `{"z":"x ` + testSecret + `","` + testSecret + `":2,"a":[true,"` + testSecret + `"]}`, `{"z":"x [X]","[X]":2,"a":[true,"[X]"]}`},
		{"escaped text is scrubbed unescaped", scrubSecret, `{"note":"a\n` + testSecret + `\"q\""}`, `{"note":"a\n[X]\"q\""}`},
		{"whole-text pass sees members", scrubSecret, `{"user":"bi", "password": "hunter22"}`, `{"user":"bi", "password": "[X]"}`},
		{"whole-text pass breaking JSON is dropped", func(s string) string { return strings.ReplaceAll(s, `x","b`, "") },
			`{"a":"x","b":"y"}`, `{"a":"x","b":"y"}`},
		{"html not escaped", scrubSecret, `{"q":"a<b ` + testSecret + `"}`, `{"q":"a<b [X]"}`},
		{"invalid JSON scrubbed as text", scrubSecret, `{"q": "` + testSecret, `{"q": "[X]`},
		{"empty", scrubSecret, ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := json.RawMessage(tt.in)
			got := scrubJSON(in, tt.f)
			if string(got) != tt.want {
				t.Errorf("scrubJSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
			if json.Valid(in) && !json.Valid(got) {
				t.Errorf("scrubJSON(%s) = %s: invalid", tt.in, got)
			}
			if string(in) != tt.in {
				t.Errorf("input modified: %s", in)
			}
			if tt.in == tt.want && len(in) > 0 && &got[0] != &in[0] {
				t.Error("unchanged input was copied")
			}
		})
	}
}
