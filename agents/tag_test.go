package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

type patternUnescaped struct {
	Code string `json:"code" jsonschema:"pattern=^[a-z]{1,3}$"`
}

type patternEscaped struct {
	Code string `json:"code" jsonschema:"pattern=^[a-z]{1\\,3}$,description=One to three letters\\, lower case."`
}

type patternInSlice struct {
	Codes []string `json:"codes" jsonschema:"minItems=1,pattern=^[A-Z]{2,3}$"`
}

type innerFilter struct {
	Column string `json:"column" jsonschema:"description=Column to filter: a name, or an expression"`
}

type nestedUnescaped struct {
	Filters []innerFilter `json:"filters"`
}

type unknownKeyword struct {
	Name string `json:"name" jsonschema:"minlength=1"`
}

type extrasUnescaped struct {
	Name string `json:"name" jsonschema_extras:"x-unit=EUR,USD"`
}

type ignoredFieldTag struct {
	Name  string   `json:"name" jsonschema:"required,nullable,minLength=1"`
	Skip  string   `json:"skip,omitempty" jsonschema:"-"`
	Drop  chan int `json:"-"`
	Later func()   `json:"-"`
}

type chanField struct {
	Name    string   `json:"name"`
	Updates chan int `json:"updates"`
}

type funcInNested struct {
	Inner struct {
		Callback func() `json:"callback"`
	} `json:"inner"`
}

func noop[In any](context.Context, In) (string, error) { return "", nil }

// A jsonschema tag the generator would misread (an unescaped comma in a
// value, an unknown keyword) and a field type JSON cannot carry make
// NewTool return an error naming the field and the tag, with the fix;
// nothing panics and no schema is silently cut.
func TestNewToolRejectsMisreadTags(t *testing.T) {
	t.Parallel()
	build := map[string]func() (agents.Tool, error){
		"pattern":      func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[patternUnescaped]) },
		"slice":        func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[patternInSlice]) },
		"nested":       func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[nestedUnescaped]) },
		"keyword":      func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[unknownKeyword]) },
		"extras":       func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[extrasUnescaped]) },
		"chan":         func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[chanField]) },
		"nested func":  func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[funcInNested]) },
		"pointer type": func() (agents.Tool, error) { return agents.NewTool("t", "d", noop[*patternUnescaped]) },
	}
	for _, tc := range []struct {
		name   string
		badTag bool
		want   []string
	}{
		{"pattern", true, []string{"field Code", `"pattern=^[a-z]{1,3}$"`, `"3}$"`, "escape it as \\\\,", "`jsonschema:\"pattern=^[a-z]{1\\\\,3}$\"`"}},
		{"slice", true, []string{"field Codes", `"3}$"`, "`jsonschema:\"minItems=1,pattern=^[A-Z]{2\\\\,3}$\"`"}},
		{"nested", true, []string{"field Filters.Column", `" or an expression"`, `a name\\, or an expression`}},
		{"keyword", true, []string{"field Name", `"minlength=1"`}},
		{"extras", true, []string{"field Name", "jsonschema_extras", `"USD"`}},
		{"chan", false, []string{"field Updates", "chan int", `json:"-"`}},
		{"nested func", false, []string{"field Inner.Callback", "func()"}},
		{"pointer type", true, []string{"field Code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var (
				tool agents.Tool
				err  error
			)
			func() {
				defer func() {
					if p := recover(); p != nil {
						t.Fatalf("NewTool panicked: %v", p)
					}
				}()
				tool, err = build[tc.name]()
			}()
			if err == nil {
				t.Fatalf("NewTool accepted it; schema %s", tool.Spec().Schema)
			}
			if errors.Is(err, agents.ErrBadTag) != tc.badTag {
				t.Errorf("errors.Is(err, ErrBadTag) = %v, want %v: %v", !tc.badTag, tc.badTag, err)
			}
			for _, w := range append([]string{"agents: tool t: "}, tc.want...) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\ndoes not contain %q", err, w)
				}
			}
		})
	}
	t.Run("MustTool panics with the same message", func(t *testing.T) {
		t.Parallel()
		defer func() {
			if p := recover(); p == nil || !strings.Contains(p.(error).Error(), "field Code") {
				t.Errorf("MustTool panic = %v", p)
			}
		}()
		agents.MustTool("t", "d", noop[patternUnescaped])
	})
}

// The escaped form from the error message works: the whole pattern and the
// whole description reach the schema, and the validator applies them.
func TestNewToolEscapedCommas(t *testing.T) {
	t.Parallel()
	tool, err := agents.NewTool("codes", "Looks up a code.", noop[patternEscaped])
	if err != nil {
		t.Fatal(err)
	}
	var schema struct {
		Properties map[string]struct {
			Pattern     string `json:"pattern"`
			Description string `json:"description"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tool.Spec().Schema, &schema); err != nil {
		t.Fatal(err)
	}
	if p := schema.Properties["code"]; p.Pattern != "^[a-z]{1,3}$" || p.Description != "One to three letters, lower case." {
		t.Errorf("schema property = %+v", p)
	}
	for args, ok := range map[string]bool{`{"code":"abc"}`: true, `{"code":"abcd"}`: false, `{"code":"a"}`: true} {
		_, err := tool.Call(t.Context(), json.RawMessage(args))
		if (err == nil) != ok {
			t.Errorf("Call(%s) = %v, want ok=%v", args, err, ok)
		}
	}
	// Bare flags, "-" and fields JSON skips are fine.
	ignored, err := agents.NewTool("t", "d", noop[ignoredFieldTag])
	if err != nil {
		t.Fatalf("NewTool(required,nullable,-, json:\"-\"): %v", err)
	}
	if s := string(ignored.Spec().Schema); strings.Contains(s, "skip") || !strings.Contains(s, `"name"`) {
		t.Errorf("schema %s", s)
	}
}

// AskUserQuestionSchema is the schema the model gets for the built-in tool,
// handed out as a copy.
func TestAskUserQuestionSchema(t *testing.T) {
	t.Parallel()
	e := newExec(t, agents.Config{Model: &scripted.Model{}})
	i := slices.IndexFunc(e.Tools(), func(s agents.ToolSpec) bool { return s.Name == agents.ToolAskUserQuestion })
	if i < 0 {
		t.Fatal("no ask_user_question tool")
	}
	got := agents.AskUserQuestionSchema()
	if string(got) != string(e.Tools()[i].Schema) {
		t.Errorf("AskUserQuestionSchema() = %s\nexecutor's spec = %s", got, e.Tools()[i].Schema)
	}
	got[0] = 'X'
	if again := agents.AskUserQuestionSchema(); again[0] != '{' {
		t.Error("AskUserQuestionSchema returned the built-in's own slice")
	}
	var args agents.AskUserQuestionArgs
	if err := json.Unmarshal([]byte(`{"questions":[{"id":"r","question":"Which region?","options":[{"label":"EU"},{"label":"US","description":"United States"}],"multi_select":true,"allow_other":true}]}`), &args); err != nil {
		t.Fatal(err)
	}
	q := args.Questions[0]
	if q.ID != "r" || q.Question != "Which region?" || len(q.Options) != 2 || q.Options[1].Description != "United States" || !q.MultiSelect || !q.AllowOther {
		t.Errorf("decoded %+v", args)
	}
}
