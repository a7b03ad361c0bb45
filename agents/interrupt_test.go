package agents

// Internal test: parseQuestions, parseFinalAnswer and Checkpoint.check are
// unexported. Helpers of this file are prefixed with it.

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

func itQuestions() []Question {
	opts := func(labels ...string) []QuestionOption {
		out := make([]QuestionOption, len(labels))
		for i, l := range labels {
			out[i] = QuestionOption{Label: l}
		}
		return out
	}
	return []Question{
		{ID: "metric", Question: "Which metric?", Options: opts("revenue", "margin")},
		{ID: "regions", Question: "Which regions?", Options: opts("EU", "US", "APAC"), MultiSelect: true},
		{ID: "period", Question: "Which period?", Options: opts("2024", "2025"), AllowOther: true},
		{ID: "notes", Question: "Anything else?"},
	}
}

func itValid() Answers {
	return Answers{
		"metric":  {Selected: []string{"revenue"}},
		"regions": {Selected: []string{"EU", "APAC"}},
		"period":  {Selected: []string{"2025"}},
		"notes":   {Text: "Exclude returns."},
	}
}

func TestValidateAnswers(t *testing.T) {
	t.Parallel()
	with := func(f func(Answers)) Answers {
		a := itValid()
		f(a)
		return a
	}
	tests := []struct {
		name    string
		answers Answers
		// wantFields are the field names of the errors, in order; nil
		// means valid.
		wantFields []string
		reason     string // substring of the first reason
	}{
		{"all valid", itValid(), nil, ""},
		{"valid multi-select of one", with(func(a Answers) { a["regions"] = QuestionAnswer{Selected: []string{"US"}} }), nil, ""},
		{"valid multi-select of all", with(func(a Answers) { a["regions"] = QuestionAnswer{Selected: []string{"APAC", "US", "EU"}} }), nil, ""},
		{"free text allowed with AllowOther", with(func(a Answers) { a["period"] = QuestionAnswer{Text: "Q3 2023"} }), nil, ""},
		{"option and free text with AllowOther", with(func(a Answers) { a["period"] = QuestionAnswer{Selected: []string{"2024"}, Text: "and Q1 2025"} }), nil, ""},
		{"blank text beside an option", with(func(a Answers) { a["metric"] = QuestionAnswer{Selected: []string{"margin"}, Text: "  "} }), nil, ""},
		{"missing answer", with(func(a Answers) { delete(a, "metric") }), []string{"answers.metric"}, "required"},
		{"empty answer", with(func(a Answers) { a["notes"] = QuestionAnswer{} }), []string{"answers.notes"}, "required"},
		{"blank answer", with(func(a Answers) { a["notes"] = QuestionAnswer{Text: " \n\t "} }), []string{"answers.notes"}, "required"},
		{"unknown option", with(func(a Answers) { a["metric"] = QuestionAnswer{Selected: []string{"profit"}} }), []string{"answers.metric"}, "profit"},
		{"option of another question", with(func(a Answers) { a["metric"] = QuestionAnswer{Selected: []string{"EU"}} }), []string{"answers.metric"}, "not one of the options"},
		{"option label case matters", with(func(a Answers) { a["metric"] = QuestionAnswer{Selected: []string{"Revenue"}} }), []string{"answers.metric"}, "not one of the options"},
		{"two options on single-select", with(func(a Answers) { a["metric"] = QuestionAnswer{Selected: []string{"revenue", "margin"}} }), []string{"answers.metric"}, "exactly one"},
		{"duplicate option on multi-select", with(func(a Answers) { a["regions"] = QuestionAnswer{Selected: []string{"EU", "US", "EU"}} }), []string{"answers.regions"}, "twice"},
		{"free text where not allowed", with(func(a Answers) { a["metric"] = QuestionAnswer{Text: "profit"} }), []string{"answers.metric"}, "free text"},
		{"free text beside option where not allowed", with(func(a Answers) { a["regions"] = QuestionAnswer{Selected: []string{"EU"}, Text: "and LATAM"} }), []string{"answers.regions"}, "free text"},
		{"text-only question answered with Selected", with(func(a Answers) { a["notes"] = QuestionAnswer{Selected: []string{"yes"}} }), []string{"answers.notes"}, "no options"},
		{"text-only question with Selected and text", with(func(a Answers) { a["notes"] = QuestionAnswer{Selected: []string{"yes"}, Text: "x"} }), []string{"answers.notes"}, "no options"},
		{"unknown question id", with(func(a Answers) { a["zzz"] = QuestionAnswer{Text: "?"} }), []string{"answers.zzz"}, "no such question"},
		{"too long text", with(func(a Answers) { a["notes"] = QuestionAnswer{Text: strings.Repeat("é", domain.MaxMessageLen+1)} }), []string{"answers.notes"}, "at most"},
		{"several problems sorted by field", Answers{
			"zeta":    {Text: "?"},
			"regions": {Selected: []string{"EU", "EU"}},
			"alpha":   {Text: "?"},
			"period":  {Selected: []string{"1999"}},
			"notes":   {Text: "fine"},
		}, []string{"answers.alpha", "answers.metric", "answers.period", "answers.regions", "answers.zeta"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := ValidateAnswers(itQuestions(), tc.answers)
			if tc.wantFields == nil {
				if err != nil {
					t.Fatalf("ValidateAnswers = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("ValidateAnswers = nil, want an error")
			}
			if !errors.Is(err, ErrInvalidAnswer) {
				t.Errorf("errors.Is(err, ErrInvalidAnswer) = false for %v", err)
			}
			if !errors.Is(err, domain.ErrInvalid) {
				t.Errorf("errors.Is(err, domain.ErrInvalid) = false for %v", err)
			}
			fes := domain.FieldErrors(err)
			var fields []string
			for _, fe := range fes {
				fields = append(fields, fe.Field)
			}
			if !reflect.DeepEqual(fields, tc.wantFields) {
				t.Errorf("fields = %q, want %q (%v)", fields, tc.wantFields, err)
			}
			if tc.reason != "" && (len(fes) == 0 || !strings.Contains(fes[0].Reason, tc.reason)) {
				t.Errorf("reasons %+v: first does not mention %q", fes, tc.reason)
			}
		})
	}
}

func TestValidateAnswersEdgeCases(t *testing.T) {
	t.Parallel()
	if err := ValidateAnswers(nil, nil); err != nil {
		t.Errorf("no questions, no answers: %v", err)
	}
	err := ValidateAnswers(nil, Answers{"q1": {Text: "x"}})
	if fes := domain.FieldErrors(err); len(fes) != 1 || fes[0].Field != "answers.q1" {
		t.Errorf("answer without questions: %v", err)
	}
	err = ValidateAnswers(itQuestions(), nil)
	if fes := domain.FieldErrors(err); len(fes) != 4 {
		t.Errorf("nil answers: %d field errors, want 4: %v", len(fes), err)
	}
	// The error message names the fields, for logs and API responses.
	if err == nil || !strings.Contains(err.Error(), "answers.metric: is required") {
		t.Errorf("Error() = %v", err)
	}
}

func TestParseQuestions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    string
		want    []Question
		problem string // substring of a problem; "" for valid input
	}{
		{
			name: "ids assigned in order",
			args: `{"questions":[{"question":"A?"},{"question":"B?","options":[{"label":"x"},{"label":"y","description":"why"}],"multi_select":true,"allow_other":true}]}`,
			want: []Question{
				{ID: "q1", Question: "A?"},
				{ID: "q2", Question: "B?", Options: []QuestionOption{{Label: "x"}, {Label: "y", Description: "why"}}, MultiSelect: true, AllowOther: true},
			},
		},
		{
			name: "given ids kept and trimmed, others numbered by position",
			args: `{"questions":[{"question":"A?"},{"id":" region ","question":"B?"},{"question":"C?"}]}`,
			want: []Question{{ID: "q1", Question: "A?"}, {ID: "region", Question: "B?"}, {ID: "q3", Question: "C?"}},
		},
		{
			name: "four questions",
			args: `{"questions":[{"question":"1"},{"question":"2"},{"question":"3"},{"question":"4"}]}`,
			want: []Question{{ID: "q1", Question: "1"}, {ID: "q2", Question: "2"}, {ID: "q3", Question: "3"}, {ID: "q4", Question: "4"}},
		},
		{name: "duplicate ids", args: `{"questions":[{"id":"a","question":"A?"},{"id":"a","question":"B?"}]}`, problem: "/questions/1/id: duplicate id"},
		{name: "given id clashes with a default", args: `{"questions":[{"id":"q2","question":"A?"},{"question":"B?"}]}`, problem: "/questions/1/id: duplicate id"},
		{name: "single option", args: `{"questions":[{"question":"A?","options":[{"label":"only"}]}]}`, problem: "/questions/0/options: give two or more"},
		{name: "empty label", args: `{"questions":[{"question":"A?","options":[{"label":"x"},{"label":""}]}]}`, problem: "/questions/0/options/1/label: must not be empty"},
		{name: "blank label", args: `{"questions":[{"question":"A?","options":[{"label":"  "},{"label":"x"}]}]}`, problem: "/questions/0/options/0/label: must not be empty"},
		{name: "duplicate labels", args: `{"questions":[{"question":"A?"},{"question":"B?","options":[{"label":"x"},{"label":"x"}]}]}`, problem: "/questions/1/options/1/label: duplicate label"},
		{name: "more than four questions", args: `{"questions":[{"question":"1"},{"question":"2"},{"question":"3"},{"question":"4"},{"question":"5"}]}`, problem: "/questions"},
		{name: "zero questions", args: `{"questions":[]}`, problem: "/questions"},
		{name: "no questions member", args: `{}`, problem: "questions"},
		{name: "empty question text", args: `{"questions":[{"question":""}]}`, problem: "/questions/0/question"},
		{name: "more than eight options", args: `{"questions":[{"question":"A?","options":[{"label":"1"},{"label":"2"},{"label":"3"},{"label":"4"},{"label":"5"},{"label":"6"},{"label":"7"},{"label":"8"},{"label":"9"}]}]}`, problem: "/questions/0/options"},
		{name: "unknown member", args: `{"questions":[{"question":"A?","priority":1}]}`, problem: "/questions/0"},
		{name: "not an object", args: `[]`, problem: "(root)"},
		{name: "invalid JSON", args: `{"questions":`, problem: "(root)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			qs, err := parseQuestions(json.RawMessage(tc.args))
			if tc.problem == "" {
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(qs, tc.want) {
					t.Errorf("questions = %+v\nwant %+v", qs, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("parseQuestions = %+v, want an error", qs)
			}
			var ae *ArgumentError
			if !errors.As(err, &ae) || !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("error %T %v is not an ArgumentError", err, err)
			}
			if ae.Tool != ToolAskUserQuestion {
				t.Errorf("Tool = %q", ae.Tool)
			}
			if !strings.Contains(strings.Join(ae.Problems, "\n"), tc.problem) {
				t.Errorf("problems %q do not mention %q", ae.Problems, tc.problem)
			}
		})
	}
}

func TestParseFinalAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args    string
		want    string
		problem string
	}{
		{`{"answer":"Revenue was **1.2 M€**."}`, "Revenue was **1.2 M€**.", ""},
		{`{"answer":"  padded  "}`, "  padded  ", ""},
		{`{}`, "", "answer"},
		{`{"answer":""}`, "", "/answer"},
		{`{"answer":"  \n "}`, "", "/answer: must not be blank"},
		{`{"answer":5}`, "", "/answer"},
		{`{"answer":"x","extra":1}`, "", "extra"},
		{`"just text"`, "", "(root)"},
		{`{`, "", "(root)"},
	}
	for _, tc := range tests {
		got, err := parseFinalAnswer(json.RawMessage(tc.args))
		if tc.problem == "" {
			if err != nil || got != tc.want {
				t.Errorf("parseFinalAnswer(%s) = %q, %v; want %q", tc.args, got, err, tc.want)
			}
			continue
		}
		var ae *ArgumentError
		if !errors.As(err, &ae) {
			t.Errorf("parseFinalAnswer(%s) = %q, %v; want an ArgumentError", tc.args, got, err)
			continue
		}
		if ae.Tool != ToolFinalAnswer || !strings.Contains(strings.Join(ae.Problems, "\n"), tc.problem) {
			t.Errorf("parseFinalAnswer(%s): %+v does not mention %q", tc.args, ae, tc.problem)
		}
	}
}

func TestBuiltinSpecs(t *testing.T) {
	t.Parallel()
	for _, b := range []*builtinTool{askTool, finalTool} {
		s := b.Spec()
		if err := s.Validate(); err != nil {
			t.Errorf("%s: %v", s.Name, err)
		}
		if s.Permission != PermRead {
			t.Errorf("%s permission = %v", s.Name, s.Permission)
		}
		if strings.Contains(string(s.Schema), "$ref") || strings.Contains(string(s.Schema), "$schema") {
			t.Errorf("%s schema not inlined: %s", s.Name, s.Schema)
		}
	}
	if askTool.Spec().Name != ToolAskUserQuestion || finalTool.Spec().Name != ToolFinalAnswer {
		t.Error("built-in names")
	}
	// Calling a built-in directly is refused, with or without valid input.
	if _, err := finalTool.Call(t.Context(), json.RawMessage(`{"answer":"x"}`)); err == nil || errors.Is(err, ErrInvalidArguments) {
		t.Errorf("final_answer Call = %v, want a misuse error", err)
	}
	if _, err := askTool.Call(t.Context(), json.RawMessage(`{}`)); !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("ask_user_question Call with bad input = %v", err)
	}
}

// itCheckpoint returns a checkpoint that passes check for kind.
func itCheckpoint(kind domain.CheckpointKind) *Checkpoint {
	cp := &Checkpoint{
		Version: CheckpointVersion, ID: "cp", RunID: "run", Kind: kind,
		Messages: []Message{
			UserMessage("hi"),
			{Role: domain.RoleAssistant, Parts: []domain.Part{{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c1", Name: "x", Arguments: json.RawMessage(`{}`)}}}},
			{Role: domain.RoleTool, Parts: []domain.Part{{Type: domain.PartToolResult, ToolResult: &domain.ToolResult{CallID: "c1", Name: "x"}}}},
		},
		Pending: PendingCall{CallID: "c1", Tool: "x", Arguments: json.RawMessage(`{}`), Part: 0},
	}
	if kind == domain.CheckpointConfirmation {
		cp.Confirmation = &ConfirmationRequest{Token: "t", CallID: "c1", Tool: "x"}
	}
	return cp
}

func TestCheckpointCheck(t *testing.T) {
	t.Parallel()
	q, c := domain.CheckpointQuestion, domain.CheckpointConfirmation
	tests := []struct {
		name   string
		kind   domain.CheckpointKind
		cp     func() *Checkpoint
		wantOK bool
	}{
		{"valid question", q, func() *Checkpoint { return itCheckpoint(q) }, true},
		{"valid confirmation", c, func() *Checkpoint { return itCheckpoint(c) }, true},
		{"survives JSON", q, func() *Checkpoint {
			b, _ := json.Marshal(itCheckpoint(q))
			var cp Checkpoint
			if err := json.Unmarshal(b, &cp); err != nil {
				panic(err)
			}
			return &cp
		}, true},
		{"nil", q, func() *Checkpoint { return nil }, false},
		{"wrong version", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Version = 2; return cp }, false},
		{"zero version", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Version = 0; return cp }, false},
		{"wrong kind", c, func() *Checkpoint { return itCheckpoint(q) }, false},
		{"no messages", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Messages = nil; return cp }, false},
		{"last message not a tool message", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Messages = cp.Messages[:2]; return cp }, false},
		{"pending part out of range", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Pending.Part = 1; return cp }, false},
		{"negative pending part", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Pending.Part = -1; return cp }, false},
		{"slot is not a tool result", q, func() *Checkpoint {
			cp := itCheckpoint(q)
			cp.Messages[2].Parts[0] = domain.TextPart("x")
			return cp
		}, false},
		{"slot for another call", q, func() *Checkpoint { cp := itCheckpoint(q); cp.Pending.CallID = "c2"; return cp }, false},
		{"confirmation without request", c, func() *Checkpoint { cp := itCheckpoint(c); cp.Confirmation = nil; return cp }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := tc.cp().check(tc.kind)
			if tc.wantOK {
				if err != nil {
					t.Errorf("check = %v", err)
				}
				return
			}
			if !errors.Is(err, ErrBadCheckpoint) {
				t.Errorf("check = %v, want ErrBadCheckpoint", err)
			}
		})
	}
}

func TestFormatAnswers(t *testing.T) {
	t.Parallel()
	got := formatAnswers(itQuestions(), Answers{
		"metric":  {Selected: []string{"revenue"}},
		"regions": {Selected: []string{"EU", "APAC"}},
		"period":  {Selected: []string{"2025"}, Text: "  and Q4 2024 "},
		"notes":   {Text: "none"},
	})
	want := "The user answered:\n- Which metric? → revenue\n- Which regions? → EU; APAC\n" +
		"- Which period? → 2025; and Q4 2024\n- Anything else? → none"
	if got != want {
		t.Errorf("formatAnswers =\n%s\nwant\n%s", got, want)
	}
}
