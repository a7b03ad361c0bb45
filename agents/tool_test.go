package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

// Types and helpers of this file are prefixed with tt so they cannot clash
// with other test files of package agents_test.

type ttItem struct {
	Name string `json:"name" jsonschema:"maxLength=8,description=Item name"`
	Qty  int    `json:"qty,omitempty" jsonschema:"minimum=1"`
}

type ttInput struct {
	Kind  string   `json:"kind" jsonschema:"enum=sum,enum=avg,description=Aggregation to apply"`
	Limit int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100"`
	Items []ttItem `json:"items,omitempty"`
	Sub   *ttItem  `json:"sub,omitempty"`
	Note  string   `json:"note,omitempty" jsonschema:"maxLength=10"`
}

type ttOptional struct {
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=1"`
	Query string `json:"query,omitempty"`
}

type ttEmpty struct{}

// ttRecursive refers to itself, like a filter tree.
type ttRecursive struct {
	Name     string        `json:"name"`
	Children []ttRecursive `json:"children,omitempty"`
}

type ttSummarized struct {
	Rows int `json:"rows"`
}

func (s ttSummarized) ToolSummary() string { return fmt.Sprintf("%d rows", s.Rows) }

type ttPlain struct {
	Total float64 `json:"total"`
	Unit  string  `json:"unit"`
}

// ttCounting returns a tool over ttInput that counts its calls and records
// the last input it received.
func ttCounting(t *testing.T, opts ...agents.ToolOption) (agents.Tool, *atomic.Int64, *atomic.Pointer[ttInput]) {
	t.Helper()
	var calls atomic.Int64
	var last atomic.Pointer[ttInput]
	tool, err := agents.NewTool("aggregate", "Aggregates items.", func(_ context.Context, in ttInput) (string, error) {
		calls.Add(1)
		last.Store(&in)
		return "ok", nil
	}, opts...)
	if err != nil {
		t.Fatalf("NewTool: %v", err)
	}
	return tool, &calls, &last
}

func ttSchemaMap(t *testing.T, raw json.RawMessage) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("schema is not a JSON object: %v\n%s", err, raw)
	}
	return m
}

func ttPath(t *testing.T, m map[string]any, path ...string) any {
	t.Helper()
	var cur any = m
	for _, p := range path {
		obj, ok := cur.(map[string]any)
		if !ok {
			t.Fatalf("schema path %v: %q is not an object", path, p)
		}
		cur, ok = obj[p]
		if !ok {
			t.Fatalf("schema path %v: no member %q", path, p)
		}
	}
	return cur
}

// ttForbiddenKeys reports every $schema, $id, $ref, $defs or definitions
// member anywhere in v.
func ttForbiddenKeys(v any, at string, out *[]string) {
	switch x := v.(type) {
	case map[string]any:
		for k, child := range x {
			switch k {
			case "$schema", "$id", "$ref", "$defs", "definitions":
				*out = append(*out, at+"/"+k)
			}
			ttForbiddenKeys(child, at+"/"+k, out)
		}
	case []any:
		for i, child := range x {
			ttForbiddenKeys(child, fmt.Sprintf("%s/%d", at, i), out)
		}
	}
}

func ttArgErr(t *testing.T, err error) *agents.ArgumentError {
	t.Helper()
	if err == nil {
		t.Fatal("got nil error, want an *ArgumentError")
	}
	if !errors.Is(err, agents.ErrInvalidArguments) {
		t.Errorf("errors.Is(%v, ErrInvalidArguments) = false", err)
	}
	var ae *agents.ArgumentError
	if !errors.As(err, &ae) {
		t.Fatalf("error %T %v is not an *ArgumentError", err, err)
	}
	return ae
}

func TestNewToolSchema(t *testing.T) {
	t.Parallel()
	tool, _, _ := ttCounting(t)
	spec := tool.Spec()
	if spec.Name != "aggregate" || spec.Description != "Aggregates items." {
		t.Errorf("spec name/description = %q/%q", spec.Name, spec.Description)
	}
	if spec.Permission != agents.PermRead || spec.Timeout != 0 || spec.ParallelSafe {
		t.Errorf("default spec options = %v/%v/%v, want read/0/false", spec.Permission, spec.Timeout, spec.ParallelSafe)
	}
	if again := tool.Spec().Schema; string(again) != string(spec.Schema) {
		t.Errorf("Spec().Schema differs between calls:\n%s\n%s", spec.Schema, again)
	}
	m := ttSchemaMap(t, spec.Schema)

	checks := []struct {
		path []string
		want any
	}{
		{[]string{"type"}, "object"},
		{[]string{"additionalProperties"}, false},
		{[]string{"required"}, []any{"kind"}},
		{[]string{"properties", "kind", "type"}, "string"},
		{[]string{"properties", "kind", "enum"}, []any{"sum", "avg"}},
		{[]string{"properties", "kind", "description"}, "Aggregation to apply"},
		{[]string{"properties", "limit", "type"}, "integer"},
		{[]string{"properties", "limit", "minimum"}, 1.0},
		{[]string{"properties", "limit", "maximum"}, 100.0},
		{[]string{"properties", "note", "maxLength"}, 10.0},
		{[]string{"properties", "items", "type"}, "array"},
		{[]string{"properties", "items", "items", "type"}, "object"},
		{[]string{"properties", "items", "items", "additionalProperties"}, false},
		{[]string{"properties", "items", "items", "required"}, []any{"name"}},
		{[]string{"properties", "items", "items", "properties", "name", "maxLength"}, 8.0},
		{[]string{"properties", "items", "items", "properties", "name", "description"}, "Item name"},
		{[]string{"properties", "items", "items", "properties", "qty", "minimum"}, 1.0},
		{[]string{"properties", "sub", "type"}, "object"},
		{[]string{"properties", "sub", "additionalProperties"}, false},
		{[]string{"properties", "sub", "required"}, []any{"name"}},
	}
	for _, c := range checks {
		if got := ttPath(t, m, c.path...); !reflect.DeepEqual(got, c.want) {
			t.Errorf("schema %s = %#v, want %#v", strings.Join(c.path, "."), got, c.want)
		}
	}
	var bad []string
	ttForbiddenKeys(m, "", &bad)
	if len(bad) > 0 {
		t.Errorf("schema contains %v; it must be inlined and self-contained:\n%s", bad, spec.Schema)
	}
}

func TestNewToolSchemaShapes(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, ttEmpty) (string, error) { return "", nil }
	tests := []struct {
		name string
		make func() (agents.Tool, error)
		want map[string]any
	}{
		{
			name: "empty struct",
			make: func() (agents.Tool, error) { return agents.NewTool("empty", "No input.", fn) },
			want: map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
		},
		{
			name: "pointer to struct",
			make: func() (agents.Tool, error) {
				return agents.NewTool("ptr", "Pointer input.", func(context.Context, *ttItem) (string, error) { return "", nil })
			},
			want: map[string]any{
				"type": "object", "additionalProperties": false, "required": []any{"name"},
				"properties": map[string]any{
					"name": map[string]any{"type": "string", "maxLength": 8.0, "description": "Item name"},
					"qty":  map[string]any{"type": "integer", "minimum": 1.0},
				},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := tc.make()
			if err != nil {
				t.Fatal(err)
			}
			got := ttSchemaMap(t, tool.Spec().Schema)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("schema = %s\nwant %v", tool.Spec().Schema, tc.want)
			}
		})
	}
}

func TestNewToolRecursiveInput(t *testing.T) {
	_, err := agents.NewTool("tree", "Walks a tree.", func(context.Context, ttRecursive) (string, error) { return "", nil })
	if err == nil {
		t.Fatal("NewTool with a recursive input type: want an error (or a schema), got neither")
	}
}

func TestNewToolErrors(t *testing.T) {
	t.Parallel()
	okFn := func(context.Context, ttEmpty) (string, error) { return "", nil }
	tests := []struct {
		name string
		make func() (agents.Tool, error)
		want string // substring of the error
	}{
		{"int input", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", func(context.Context, int) (string, error) { return "", nil })
		}, "must be a struct"},
		{"string input", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", func(context.Context, string) (string, error) { return "", nil })
		}, "must be a struct"},
		{"slice input", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", func(context.Context, []ttItem) (string, error) { return "", nil })
		}, "must be a struct"},
		{"name with space", func() (agents.Tool, error) { return agents.NewTool("bad name", "d", okFn) }, "must match"},
		{"name with dot", func() (agents.Tool, error) { return agents.NewTool("bad.name", "d", okFn) }, "must match"},
		{"name of 65 chars", func() (agents.Tool, error) { return agents.NewTool(strings.Repeat("a", 65), "d", okFn) }, "must match"},
		{"empty name", func() (agents.Tool, error) { return agents.NewTool("", "d", okFn) }, "must match"},
		{"empty description", func() (agents.Tool, error) { return agents.NewTool("t", "", okFn) }, "description"},
		{"blank description", func() (agents.Tool, error) { return agents.NewTool("t", " \n\t", okFn) }, "description"},
		{"nil fn", func() (agents.Tool, error) {
			return agents.NewTool[ttEmpty, string]("t", "d", nil)
		}, "nil function"},
		{"schema not JSON", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", okFn, agents.WithSchema(json.RawMessage(`{`)))
		}, "schema"},
		{"schema not an object", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", okFn, agents.WithSchema(json.RawMessage(`[1]`)))
		}, "schema"},
		{"schema with remote ref", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", okFn, agents.WithSchema(json.RawMessage(`{"$ref":"https://example.com/s.json"}`)))
		}, "schema"},
		{"unknown permission", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", okFn, agents.WithPermission(agents.Permission(9)))
		}, "permission"},
		{"negative timeout", func() (agents.Tool, error) {
			return agents.NewTool("t", "d", okFn, agents.WithTimeout(-time.Second))
		}, "timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := tc.make()
			if err == nil {
				t.Fatalf("got tool %v, want an error", tool.Spec())
			}
			if tool != nil {
				t.Errorf("got a non-nil tool with error %v", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestNewToolNameBoundary(t *testing.T) {
	t.Parallel()
	for _, name := range []string{strings.Repeat("a", 64), "a", "A-z_0-9"} {
		if _, err := agents.NewTool(name, "d", func(context.Context, ttEmpty) (string, error) { return "", nil }); err != nil {
			t.Errorf("NewTool(%q): %v", name, err)
		}
	}
}

func TestMustTool(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, ttEmpty) (string, error) { return "", nil }
	t.Run("valid", func(t *testing.T) {
		t.Parallel()
		if tool := agents.MustTool("ok", "d", fn); tool.Spec().Name != "ok" {
			t.Errorf("name = %q", tool.Spec().Name)
		}
	})
	bad := map[string]func(){
		"bad name":     func() { agents.MustTool("bad name", "d", fn) },
		"no desc":      func() { agents.MustTool("ok", "", fn) },
		"nil fn":       func() { agents.MustTool[ttEmpty, string]("ok", "d", nil) },
		"non-struct":   func() { agents.MustTool("ok", "d", func(context.Context, int) (int, error) { return 0, nil }) },
		"bad schema":   func() { agents.MustTool("ok", "d", fn, agents.WithSchema(json.RawMessage(`nope`))) },
		"bad perm":     func() { agents.MustTool("ok", "d", fn, agents.WithPermission(agents.Permission(200))) },
		"name too big": func() { agents.MustTool(strings.Repeat("x", 65), "d", fn) },
	}
	for name, f := range bad {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			defer func() {
				if recover() == nil {
					t.Error("MustTool did not panic")
				}
			}()
			f()
		})
	}
}

func TestToolCallValid(t *testing.T) {
	t.Parallel()
	tool, calls, last := ttCounting(t)
	res, err := tool.Call(context.Background(), json.RawMessage(
		`{"kind":"avg","limit":5,"items":[{"name":"a","qty":2},{"name":"b"}],"sub":{"name":"s"},"note":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary != "ok" {
		t.Errorf("summary = %q", res.Summary)
	}
	if calls.Load() != 1 {
		t.Fatalf("fn called %d times, want 1", calls.Load())
	}
	want := ttInput{Kind: "avg", Limit: 5, Items: []ttItem{{Name: "a", Qty: 2}, {Name: "b"}}, Sub: &ttItem{Name: "s"}, Note: "hi"}
	if got := *last.Load(); !reflect.DeepEqual(got, want) {
		t.Errorf("fn received %+v, want %+v", got, want)
	}
}

func TestToolCallPassesContext(t *testing.T) {
	t.Parallel()
	type key struct{}
	tool := agents.MustTool("ctx", "d", func(ctx context.Context, _ ttEmpty) (string, error) {
		v, _ := ctx.Value(key{}).(string)
		return v, nil
	})
	res, err := tool.Call(context.WithValue(context.Background(), key{}, "seen"), json.RawMessage(`{}`))
	if err != nil || res.Summary != "seen" {
		t.Errorf("Call = %q, %v; want the fn to see the caller's context", res.Summary, err)
	}
}

func TestToolCallInvalidArguments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		// loc is the JSON pointer (or "(root)") a problem must start with.
		loc string
		// mention must appear in that problem (e.g. the missing field).
		mention string
	}{
		{"missing required field", `{"limit":3}`, "/kind", "is required"},
		{"empty object, required missing", `{}`, "/kind", "is required"},
		{"wrong type", `{"kind":5}`, "/kind", ""},
		{"null for string", `{"kind":null}`, "/kind", ""},
		{"enum violation", `{"kind":"max"}`, "/kind", ""},
		{"below minimum", `{"kind":"sum","limit":0}`, "/limit", "1"},
		{"above maximum", `{"kind":"sum","limit":101}`, "/limit", "100"},
		{"float for integer", `{"kind":"sum","limit":2.5}`, "/limit", ""},
		{"too long", `{"kind":"sum","note":"this is far too long"}`, "/note", ""},
		{"unknown extra property", `{"kind":"sum","extra":1}`, "/extra", "not a known property"},
		{"differently cased property", `{"kind":"sum","KIND":"avg"}`, "/KIND", "not a known property"},
		{"nested array item wrong type", `{"kind":"sum","items":[{"name":3}]}`, "/items/0/name", ""},
		{"second nested item too long", `{"kind":"sum","items":[{"name":"ok"},{"name":"much too long"}]}`, "/items/1/name", ""},
		{"nested item missing field", `{"kind":"sum","items":[{"qty":2}]}`, "/items/0/name", "required"},
		{"nested item unknown field", `{"kind":"sum","items":[{"name":"a","x":1}]}`, "/items/0/x", "not a known property"},
		{"nested item below minimum", `{"kind":"sum","items":[{"name":"a","qty":0}]}`, "/items/0/qty", ""},
		{"nested object", `{"kind":"sum","sub":{"name":"a","qty":-1}}`, "/sub/qty", ""},
		{"items not an array", `{"kind":"sum","items":{}}`, "/items", ""},
		{"array", `[]`, "(root)", "object"},
		{"number", `3`, "(root)", "object"},
		{"string", `"x"`, "(root)", "object"},
		{"null", `null`, "(root)", "object"},
		{"bool", `true`, "(root)", "object"},
		{"truncated JSON", `{"kind":"sum"`, "(root)", "JSON"},
		{"not JSON", `kind=sum`, "(root)", ""},
		{"missing value", `{"kind":}`, "(root)", ""},
		{"trailing data", `{"kind":"sum"} {}`, "(root)", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, calls, _ := ttCounting(t)
			_, err := tool.Call(context.Background(), json.RawMessage(tc.args))
			ae := ttArgErr(t, err)
			if calls.Load() != 0 {
				t.Errorf("fn was called %d times with invalid arguments", calls.Load())
			}
			if ae.Tool != "aggregate" {
				t.Errorf("ArgumentError.Tool = %q", ae.Tool)
			}
			if len(ae.Problems) == 0 {
				t.Fatal("no problems reported")
			}
			found := false
			for _, p := range ae.Problems {
				if strings.HasPrefix(p, tc.loc+": ") && strings.Contains(p, tc.mention) {
					found = true
				}
			}
			if !found {
				t.Errorf("problems %q: none starts with %q and mentions %q", ae.Problems, tc.loc+": ", tc.mention)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "invalid arguments for aggregate: ") {
				t.Errorf("Error() = %q", msg)
			}
		})
	}
}

func TestToolCallReportsEveryProblemSorted(t *testing.T) {
	t.Parallel()
	tool, calls, _ := ttCounting(t)
	_, err := tool.Call(context.Background(), json.RawMessage(`{"kind":"max","limit":0,"items":[{"name":3}]}`))
	ae := ttArgErr(t, err)
	if calls.Load() != 0 {
		t.Error("fn was called")
	}
	var locs []string
	for _, p := range ae.Problems {
		loc, _, _ := strings.Cut(p, ": ")
		locs = append(locs, loc)
	}
	want := []string{"/items/0/name", "/kind", "/limit"}
	if !reflect.DeepEqual(locs, want) {
		t.Errorf("problem locations = %q, want %q (problems %q)", locs, want, ae.Problems)
	}
}

func TestToolCallEmptyArguments(t *testing.T) {
	t.Parallel()
	for _, args := range []json.RawMessage{nil, json.RawMessage(""), json.RawMessage("   "), json.RawMessage("\n\t ")} {
		t.Run(fmt.Sprintf("%q", args), func(t *testing.T) {
			t.Parallel()
			var got *ttOptional
			opt := agents.MustTool("opt", "Optional input.", func(_ context.Context, in ttOptional) (string, error) {
				got = &in
				return "done", nil
			})
			res, err := opt.Call(context.Background(), args)
			if err != nil {
				t.Fatalf("nothing required: %v", err)
			}
			if res.Summary != "done" || got == nil || *got != (ttOptional{}) {
				t.Errorf("summary %q, input %+v; want fn called with the zero input", res.Summary, got)
			}

			req, calls, _ := ttCounting(t)
			_, err = req.Call(context.Background(), args)
			ae := ttArgErr(t, err)
			if calls.Load() != 0 {
				t.Error("fn was called")
			}
			if len(ae.Problems) != 1 || ae.Problems[0] != "/kind: is required" {
				t.Errorf("problems = %q, want [\"/kind: is required\"]", ae.Problems)
			}
		})
	}
}

func TestToolResultConversion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	args := json.RawMessage(`{}`)
	full := agents.Result{Summary: "s", Payload: []int{1}, Datasets: []string{"sales"}}

	tests := []struct {
		name string
		tool agents.Tool
		want agents.Result
	}{
		{"Result as is", agents.MustTool("r", "d", func(context.Context, ttEmpty) (agents.Result, error) { return full, nil }), full},
		{"*Result", agents.MustTool("r", "d", func(context.Context, ttEmpty) (*agents.Result, error) { return &full, nil }), full},
		{"nil *Result", agents.MustTool("r", "d", func(context.Context, ttEmpty) (*agents.Result, error) { return nil, nil }), agents.Result{}},
		{"string", agents.MustTool("r", "d", func(context.Context, ttEmpty) (string, error) { return "42 rows", nil }),
			agents.Result{Summary: "42 rows"}},
		{"ToolSummarizer", agents.MustTool("r", "d", func(context.Context, ttEmpty) (ttSummarized, error) {
			return ttSummarized{Rows: 7}, nil
		}), agents.Result{Summary: "7 rows", Payload: ttSummarized{Rows: 7}}},
		{"struct", agents.MustTool("r", "d", func(context.Context, ttEmpty) (ttPlain, error) {
			return ttPlain{Total: 1.5, Unit: "EUR"}, nil
		}), agents.Result{Summary: `{"total":1.5,"unit":"EUR"}`, Payload: ttPlain{Total: 1.5, Unit: "EUR"}}},
		{"map", agents.MustTool("r", "d", func(context.Context, ttEmpty) (map[string]int, error) {
			return map[string]int{"b": 2, "a": 1}, nil
		}), agents.Result{Summary: `{"a":1,"b":2}`, Payload: map[string]int{"a": 1, "b": 2}}},
		{"int", agents.MustTool("r", "d", func(context.Context, ttEmpty) (int, error) { return 3, nil }),
			agents.Result{Summary: "3", Payload: 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.tool.Call(ctx, args)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("result = %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestToolOutputNotEncodable(t *testing.T) {
	t.Parallel()
	tool := agents.MustTool("r", "d", func(context.Context, ttEmpty) (chan int, error) { return make(chan int), nil })
	_, err := tool.Call(context.Background(), json.RawMessage(`{}`))
	if err == nil || errors.Is(err, agents.ErrInvalidArguments) {
		t.Errorf("err = %v, want an encoding error that is not an argument error", err)
	}
}

func TestToolFnErrorUnchanged(t *testing.T) {
	t.Parallel()
	sentinel := errors.New("warehouse offline")
	wrapped := fmt.Errorf("query: %w", sentinel)
	tool := agents.MustTool("r", "d", func(context.Context, ttEmpty) (ttPlain, error) { return ttPlain{Total: 1}, wrapped })
	res, err := tool.Call(context.Background(), json.RawMessage(`{}`))
	if err != wrapped || !errors.Is(err, sentinel) {
		t.Errorf("err = %v, want the fn's error unchanged", err)
	}
	if errors.Is(err, agents.ErrInvalidArguments) {
		t.Error("a fn error must not match ErrInvalidArguments")
	}
	if !reflect.DeepEqual(res, agents.Result{}) {
		t.Errorf("result with error = %#v, want zero", res)
	}
}

func TestToolOptions(t *testing.T) {
	t.Parallel()
	fn := func(context.Context, ttEmpty) (string, error) { return "", nil }
	tests := []struct {
		name         string
		opts         []agents.ToolOption
		wantPerm     agents.Permission
		wantTimeout  time.Duration
		wantParallel bool
	}{
		{"defaults", nil, agents.PermRead, 0, false},
		{"permission write", []agents.ToolOption{agents.WithPermission(agents.PermWrite)}, agents.PermWrite, 0, false},
		{"permission destructive", []agents.ToolOption{agents.WithPermission(agents.PermDestructive)}, agents.PermDestructive, 0, false},
		{"timeout", []agents.ToolOption{agents.WithTimeout(5 * time.Second)}, agents.PermRead, 5 * time.Second, false},
		{"parallel read", []agents.ToolOption{agents.WithParallel()}, agents.PermRead, 0, true},
		{"parallel explicit read", []agents.ToolOption{agents.WithPermission(agents.PermRead), agents.WithParallel()}, agents.PermRead, 0, true},
		{"parallel ignored for write", []agents.ToolOption{agents.WithParallel(), agents.WithPermission(agents.PermWrite)}, agents.PermWrite, 0, false},
		{"parallel ignored for write, other order", []agents.ToolOption{agents.WithPermission(agents.PermWrite), agents.WithParallel()}, agents.PermWrite, 0, false},
		{"parallel ignored for destructive", []agents.ToolOption{agents.WithParallel(), agents.WithPermission(agents.PermDestructive)}, agents.PermDestructive, 0, false},
		{"all", []agents.ToolOption{agents.WithParallel(), agents.WithTimeout(time.Minute)}, agents.PermRead, time.Minute, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := agents.NewTool("opt", "d", fn, tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			s := tool.Spec()
			if s.Permission != tc.wantPerm || s.Timeout != tc.wantTimeout || s.ParallelSafe != tc.wantParallel {
				t.Errorf("spec = perm %v timeout %v parallel %v; want %v %v %v",
					s.Permission, s.Timeout, s.ParallelSafe, tc.wantPerm, tc.wantTimeout, tc.wantParallel)
			}
		})
	}
}

func TestWithSchema(t *testing.T) {
	t.Parallel()
	// The custom schema accepts kinds starting with x, which the generated
	// enum (sum, avg) would reject, and rejects sum.
	custom := json.RawMessage(`{"type":"object","properties":{"kind":{"type":"string","pattern":"^x"},"limit":{"type":"integer"}},"required":["kind"],"additionalProperties":false}`)
	tool, calls, last := ttCounting(t, agents.WithSchema(custom))
	if got := tool.Spec().Schema; string(got) != string(custom) {
		t.Errorf("schema = %s, want the custom one", got)
	}
	if _, err := tool.Call(context.Background(), json.RawMessage(`{"kind":"xyz","limit":0}`)); err != nil {
		t.Fatalf("valid under the custom schema: %v", err)
	}
	if calls.Load() != 1 || last.Load().Kind != "xyz" || last.Load().Limit != 0 {
		t.Errorf("fn calls %d, input %+v; want the arguments decoded into In", calls.Load(), last.Load())
	}
	_, err := tool.Call(context.Background(), json.RawMessage(`{"kind":"sum"}`))
	ae := ttArgErr(t, err)
	if len(ae.Problems) != 1 || !strings.HasPrefix(ae.Problems[0], "/kind: ") {
		t.Errorf("problems = %q", ae.Problems)
	}
	if calls.Load() != 1 {
		t.Error("fn called with arguments the custom schema rejects")
	}
}

func TestNewRawTool(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	t.Run("validates against spec.Schema", func(t *testing.T) {
		t.Parallel()
		var got []json.RawMessage
		tool, err := agents.NewRawTool(agents.ToolSpec{
			Name: "sql", Description: "Runs SQL.",
			Schema: json.RawMessage(`{"type":"object","properties":{"query":{"type":"string","minLength":1}},"required":["query"],"additionalProperties":false}`),
		}, func(_ context.Context, args json.RawMessage) (agents.Result, error) {
			got = append(got, args)
			return agents.Result{Summary: "ran"}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		args := json.RawMessage(`{ "query" : "select 1" }`)
		res, err := tool.Call(ctx, args)
		if err != nil || res.Summary != "ran" {
			t.Fatalf("Call = %v, %v", res, err)
		}
		if len(got) != 1 || string(got[0]) != string(args) {
			t.Errorf("fn got %q, want the raw arguments unchanged", got)
		}
		for _, bad := range []string{`{}`, `{"query":""}`, `{"query":1}`, `{"query":"x","y":1}`, `[]`, `{`} {
			_, err := tool.Call(ctx, json.RawMessage(bad))
			ttArgErr(t, err)
		}
		if len(got) != 1 {
			t.Errorf("fn called %d times, want 1", len(got))
		}
	})
	t.Run("default empty-object schema", func(t *testing.T) {
		t.Parallel()
		var got []string
		tool, err := agents.NewRawTool(agents.ToolSpec{Name: "ping", Description: "Pings."},
			func(_ context.Context, args json.RawMessage) (agents.Result, error) {
				got = append(got, string(args))
				return agents.Result{}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false}
		if m := ttSchemaMap(t, tool.Spec().Schema); !reflect.DeepEqual(m, want) {
			t.Errorf("default schema = %s", tool.Spec().Schema)
		}
		for _, ok := range []string{`{}`, ``, `  `} {
			if _, err := tool.Call(ctx, json.RawMessage(ok)); err != nil {
				t.Errorf("Call(%q): %v", ok, err)
			}
		}
		if !reflect.DeepEqual(got, []string{"{}", "{}", "{}"}) {
			t.Errorf("fn got %q, want empty arguments as {}", got)
		}
		_, err = tool.Call(ctx, json.RawMessage(`{"a":1}`))
		ae := ttArgErr(t, err)
		if ae.Tool != "ping" {
			t.Errorf("Tool = %q", ae.Tool)
		}
	})
	t.Run("write is never parallel", func(t *testing.T) {
		t.Parallel()
		tool, err := agents.NewRawTool(agents.ToolSpec{Name: "del", Description: "Deletes.", Permission: agents.PermDestructive, ParallelSafe: true},
			func(context.Context, json.RawMessage) (agents.Result, error) { return agents.Result{}, nil })
		if err != nil {
			t.Fatal(err)
		}
		if tool.Spec().ParallelSafe {
			t.Error("a destructive raw tool is parallel-safe")
		}
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		fn := func(context.Context, json.RawMessage) (agents.Result, error) { return agents.Result{}, nil }
		bad := []struct {
			spec agents.ToolSpec
			fn   func(context.Context, json.RawMessage) (agents.Result, error)
		}{
			{agents.ToolSpec{Name: "ok", Description: "d"}, nil},
			{agents.ToolSpec{Name: "bad name", Description: "d"}, fn},
			{agents.ToolSpec{Name: "ok"}, fn},
			{agents.ToolSpec{Name: "ok", Description: "d", Schema: json.RawMessage(`[]`)}, fn},
			{agents.ToolSpec{Name: "ok", Description: "d", Schema: json.RawMessage(`{"type":"nonsense"}`)}, fn},
		}
		for _, b := range bad {
			if tool, err := agents.NewRawTool(b.spec, b.fn); err == nil {
				t.Errorf("NewRawTool(%+v) = %v, want an error", b.spec, tool.Spec())
			}
		}
	})
}

func TestToolSpecValidate(t *testing.T) {
	t.Parallel()
	valid := agents.ToolSpec{Name: "ok_tool-1", Description: "Does things.", Schema: json.RawMessage(`{"type":"object"}`)}
	with := func(f func(*agents.ToolSpec)) agents.ToolSpec {
		s := valid
		f(&s)
		return s
	}
	tests := []struct {
		name    string
		spec    agents.ToolSpec
		wantErr bool
	}{
		{"valid", valid, false},
		{"no schema", with(func(s *agents.ToolSpec) { s.Schema = nil }), false},
		{"destructive with timeout", with(func(s *agents.ToolSpec) { s.Permission = agents.PermDestructive; s.Timeout = time.Second }), false},
		{"64-char name", with(func(s *agents.ToolSpec) { s.Name = strings.Repeat("n", 64) }), false},
		{"empty name", with(func(s *agents.ToolSpec) { s.Name = "" }), true},
		{"65-char name", with(func(s *agents.ToolSpec) { s.Name = strings.Repeat("n", 65) }), true},
		{"name with space", with(func(s *agents.ToolSpec) { s.Name = "a b" }), true},
		{"unicode name", with(func(s *agents.ToolSpec) { s.Name = "zähler" }), true},
		{"empty description", with(func(s *agents.ToolSpec) { s.Description = "" }), true},
		{"blank description", with(func(s *agents.ToolSpec) { s.Description = "  " }), true},
		{"schema array", with(func(s *agents.ToolSpec) { s.Schema = json.RawMessage(`[]`) }), true},
		{"schema true", with(func(s *agents.ToolSpec) { s.Schema = json.RawMessage(`true`) }), true},
		{"schema invalid JSON", with(func(s *agents.ToolSpec) { s.Schema = json.RawMessage(`{`) }), true},
		{"unknown permission", with(func(s *agents.ToolSpec) { s.Permission = agents.PermDestructive + 1 }), true},
		{"negative timeout", with(func(s *agents.ToolSpec) { s.Timeout = -1 }), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.spec.Validate()
			if (err != nil) != tc.wantErr {
				t.Errorf("Validate() = %v, wantErr %v", err, tc.wantErr)
			}
		})
	}
}

func TestToolSpecValidateNullSchema(t *testing.T) {
	s := agents.ToolSpec{Name: "t", Description: "d", Schema: json.RawMessage(`null`)}
	if err := s.Validate(); err == nil {
		t.Error(`Validate accepted Schema "null", which is not a JSON object`)
	}
}

func TestPermission(t *testing.T) {
	t.Parallel()
	tests := []struct {
		p       agents.Permission
		name    string
		confirm bool
	}{
		{agents.PermRead, "read", false},
		{agents.PermWrite, "write", true},
		{agents.PermDestructive, "destructive", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := tc.p.String(); got != tc.name {
				t.Errorf("String() = %q", got)
			}
			b, err := tc.p.MarshalText()
			if err != nil || string(b) != tc.name {
				t.Errorf("MarshalText() = %q, %v", b, err)
			}
			var back agents.Permission = 99
			if err := back.UnmarshalText(b); err != nil || back != tc.p {
				t.Errorf("UnmarshalText(%q) = %v, %v", b, back, err)
			}
			if got := tc.p.NeedsConfirmation(); got != tc.confirm {
				t.Errorf("NeedsConfirmation() = %v", got)
			}
			// JSON round trip, as stored in specs and events.
			j, err := json.Marshal(agents.ToolSpec{Name: "x", Permission: tc.p})
			if err != nil || !strings.Contains(string(j), `"permission":"`+tc.name+`"`) {
				t.Errorf("json = %s, %v", j, err)
			}
			var spec agents.ToolSpec
			if err := json.Unmarshal(j, &spec); err != nil || spec.Permission != tc.p {
				t.Errorf("json round trip = %v, %v", spec.Permission, err)
			}
		})
	}
	if got := agents.Permission(7).String(); got != "Permission(7)" {
		t.Errorf("unknown String() = %q", got)
	}
	for _, bad := range []string{"", "Read", "admin", "0", "Permission(7)"} {
		p := agents.PermWrite
		if err := p.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("UnmarshalText(%q) = nil error", bad)
		}
		if p != agents.PermWrite {
			t.Errorf("UnmarshalText(%q) changed the value to %v", bad, p)
		}
	}
	var spec agents.ToolSpec
	if err := json.Unmarshal([]byte(`{"permission":"root"}`), &spec); err == nil {
		t.Error("decoding an unknown permission succeeded")
	}
}

func TestArgumentError(t *testing.T) {
	t.Parallel()
	e := &agents.ArgumentError{Tool: "sql", Problems: []string{"/limit: too big", "(root): missing property 'q'"}}
	if got, want := e.Error(), "invalid arguments for sql: /limit: too big; (root): missing property 'q'"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("call: %w", e)
	if !errors.Is(wrapped, agents.ErrInvalidArguments) {
		t.Error("wrapped ArgumentError does not match ErrInvalidArguments")
	}
	if errors.Is(e, errors.New("agents: invalid tool arguments")) {
		t.Error("ArgumentError matches an unrelated error with the same text")
	}
}

// ttExecutor returns an executor over a scripted model, for NewTaskTool.
func ttExecutor(t *testing.T) *agents.Executor {
	t.Helper()
	e, err := agents.NewExecutor(agents.Config{Model: &scripted.Model{}})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestNewTaskToolErrors(t *testing.T) {
	t.Parallel()
	ex := ttExecutor(t)
	tests := []struct {
		name string
		subs []agents.SubAgent
		want string
	}{
		{"no sub-agents", nil, "at least one"},
		{"bad name", []agents.SubAgent{{Name: "data analyst", Description: "d", Executor: ex}}, "must match"},
		{"empty name", []agents.SubAgent{{Name: "", Description: "d", Executor: ex}}, "must match"},
		{"nil executor", []agents.SubAgent{{Name: "analyst", Description: "d"}}, "no executor"},
		{"duplicate", []agents.SubAgent{{Name: "analyst", Description: "a", Executor: ex}, {Name: "analyst", Description: "b", Executor: ex}}, "duplicate"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tool, err := agents.NewTaskTool(tc.subs...)
			if err == nil {
				t.Fatalf("got %v, want an error", tool.Spec())
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func TestNewTaskToolSchema(t *testing.T) {
	t.Parallel()
	ex := ttExecutor(t)
	one, err := agents.NewTaskTool(agents.SubAgent{Name: "analyst", Description: "Analyses sales.", Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	two, err := agents.NewTaskTool(
		agents.SubAgent{Name: "analyst", Description: "Analyses sales.", Executor: ex},
		agents.SubAgent{Name: "writer", Description: " Writes reports. ", Executor: ex},
	)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []agents.Tool{one, two} {
		s := tool.Spec()
		if s.Name != agents.ToolTask || s.Permission != agents.PermRead {
			t.Errorf("spec = %+v", s)
		}
		if err := s.Validate(); err != nil {
			t.Errorf("spec does not validate: %v", err)
		}
		if !strings.Contains(s.Description, "- analyst: Analyses sales.") {
			t.Errorf("description does not list the sub-agent: %q", s.Description)
		}
	}
	if d := two.Spec().Description; !strings.Contains(d, "- writer: Writes reports.") {
		t.Errorf("description = %q", d)
	}

	m1 := ttSchemaMap(t, one.Spec().Schema)
	if got := ttPath(t, m1, "required"); !reflect.DeepEqual(got, []any{"task"}) {
		t.Errorf("single sub-agent: required = %v, want [task]", got)
	}
	if got := ttPath(t, m1, "properties", "agent", "enum"); !reflect.DeepEqual(got, []any{"analyst"}) {
		t.Errorf("single sub-agent: agent enum = %v", got)
	}
	if got := ttPath(t, m1, "additionalProperties"); got != false {
		t.Errorf("additionalProperties = %v", got)
	}
	m2 := ttSchemaMap(t, two.Spec().Schema)
	req, _ := ttPath(t, m2, "required").([]any)
	if !slices.Contains(req, any("agent")) || !slices.Contains(req, any("task")) || len(req) != 2 {
		t.Errorf("several sub-agents: required = %v, want task and agent", req)
	}
	if got := ttPath(t, m2, "properties", "agent", "enum"); !reflect.DeepEqual(got, []any{"analyst", "writer"}) {
		t.Errorf("several sub-agents: agent enum = %v", got)
	}
}

func TestTaskToolCallDirectly(t *testing.T) {
	t.Parallel()
	ex := ttExecutor(t)
	one, err := agents.NewTaskTool(agents.SubAgent{Name: "analyst", Description: "d", Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	two, err := agents.NewTaskTool(agents.SubAgent{Name: "analyst", Description: "d", Executor: ex},
		agents.SubAgent{Name: "writer", Description: "d", Executor: ex})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		tool agents.Tool
		args string
	}{
		{"single, agent omitted", one, `{"task":"sum sales"}`},
		{"single, agent named", one, `{"agent":"analyst","task":"sum sales"}`},
		{"several", two, `{"agent":"writer","task":"write it up"}`},
	} {
		_, err := tc.tool.Call(ctx, json.RawMessage(tc.args))
		if err == nil || errors.Is(err, agents.ErrInvalidArguments) || !strings.Contains(err.Error(), "cannot be called directly") {
			t.Errorf("%s: Call = %v, want the cannot-be-called-directly error", tc.name, err)
		}
	}
	for _, tc := range []struct {
		name string
		tool agents.Tool
		args string
	}{
		{"several, agent omitted", two, `{"task":"x"}`},
		{"unknown agent", one, `{"agent":"nobody","task":"x"}`},
		{"empty task", one, `{"task":""}`},
		{"extra property", one, `{"task":"x","priority":1}`},
	} {
		_, err := tc.tool.Call(ctx, json.RawMessage(tc.args))
		ttArgErr(t, err)
	}
}
