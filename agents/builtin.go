package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
)

// Names of the built-in tools.
const (
	ToolAskUserQuestion = "ask_user_question"
	ToolFinalAnswer     = "final_answer"
	ToolTask            = "task"
)

// builtin marks tools the executor handles itself.
type builtin interface {
	Tool
	builtinKind() builtinKind
}

type builtinKind uint8

const (
	builtinAsk builtinKind = iota + 1
	builtinFinal
	builtinTask
)

// AskUserQuestionArgs are the arguments of the built-in ask_user_question
// tool, as the model sends them (ToolCallStarted.Arguments of a call named
// ToolAskUserQuestion). AskUserQuestionSchema returns their JSON Schema.
// Hosts normally render Interrupted.Questions instead: the same questions
// after validation, with every id filled in (q1, q2, ... for questions the
// model gave no id).
//
// Arguments the model sends:
//
//	{
//	  "questions": [
//	    {
//	      "id": "region",
//	      "question": "Which region do you mean?",
//	      "options": [
//	        {"label": "EMEA", "description": "Europe, Middle East and Africa"},
//	        {"label": "APAC"}
//	      ],
//	      "allow_other": true
//	    },
//	    {"question": "Which period?"}
//	  ]
//	}
//
// Rules beyond the schema (checked before the run stops): 1 to 4
// questions; ids unique; a question has no options (free text) or two or
// more with unique, non-empty labels; multi_select allows several labels;
// allow_other allows free text besides the options.
//
// The answer the host sends back (Service.Resume or Executor.Resume) is an
// Answers value keyed by question id; as JSON:
//
//	{
//	  "region": {"selected": ["EMEA"]},
//	  "q2": {"text": "The last two quarters"}
//	}
//
// Every question must be answered: with selected option labels (exactly
// one unless multi_select), with text (questions without options, or with
// allow_other), or both. ValidateAnswers reports each problem by field
// ("answers.<id>").
type AskUserQuestionArgs struct {
	Questions []AskedQuestion `json:"questions" jsonschema:"minItems=1,maxItems=4,description=The questions to ask; one is usually enough."`
}

// AskedQuestion is one question of AskUserQuestionArgs as the model wrote
// it: ID may be empty. The executor validates it and turns it into a
// Question with its id filled in.
type AskedQuestion struct {
	ID          string           `json:"id,omitempty" jsonschema:"description=Optional short id such as region; defaults to q1 q2 ..."`
	Question    string           `json:"question" jsonschema:"minLength=1,maxLength=500,description=The question as the user will read it."`
	Options     []QuestionOption `json:"options,omitempty" jsonschema:"maxItems=8,description=Choices to offer when the plausible answers are known (two or more)."`
	MultiSelect bool             `json:"multi_select,omitempty" jsonschema:"description=Allow choosing several options."`
	AllowOther  bool             `json:"allow_other,omitempty" jsonschema:"description=Allow a free-text answer besides the options."`
}

// AskUserQuestionSchema returns the JSON Schema of the ask_user_question
// arguments (AskUserQuestionArgs), exactly as the model receives it. The
// caller owns the returned slice.
func AskUserQuestionSchema() json.RawMessage {
	return slices.Clone(askTool.spec.Schema)
}

type finalArgs struct {
	Answer string `json:"answer" jsonschema:"minLength=1,description=The complete answer for the user in Markdown."`
}

type builtinTool struct {
	kind      builtinKind
	spec      ToolSpec
	validator *argValidator
}

func (t *builtinTool) Spec() ToolSpec { return t.spec }

func (t *builtinTool) builtinKind() builtinKind { return t.kind }

// Call is never reached through the executor, which handles built-ins
// itself; it validates and reports misuse when called directly.
func (t *builtinTool) Call(_ context.Context, args json.RawMessage) (Result, error) {
	if _, err := t.validator.check(args); err != nil {
		return Result{}, err
	}
	return Result{}, fmt.Errorf("agents: %s is handled by the executor and cannot be called directly", t.spec.Name)
}

func newBuiltin(kind builtinKind, name, desc string, in reflect.Type) *builtinTool {
	schema, err := schemaFor(in)
	if err != nil {
		panic(err) // fixed types: cannot fail at run time
	}
	v, err := compileSchema(name, schema)
	if err != nil {
		panic(err)
	}
	return &builtinTool{kind: kind, spec: ToolSpec{Name: name, Description: desc, Schema: schema}, validator: v}
}

var (
	askTool = newBuiltin(builtinAsk, ToolAskUserQuestion,
		"Ask the user up to four questions and pause until they answer. Use it only when the request is "+
			"ambiguous in a way the data cannot settle (which metric, which period, which definition) or when "+
			"an expensive analysis depends on the user's choice. Offer options when the plausible answers are "+
			"known. Do not ask what you can find out with the other tools.",
		reflect.TypeFor[AskUserQuestionArgs]())
	finalTool = newBuiltin(builtinFinal, ToolFinalAnswer,
		"Deliver the complete answer to the user and end the turn. Write it in Markdown, lead with the "+
			"result, and state the numbers you found. Call no other tool in the same turn.",
		reflect.TypeFor[finalArgs]())
)

// parseQuestions validates ask_user_question arguments and assigns ids.
func parseQuestions(args json.RawMessage) ([]Question, error) {
	if err := askTool.validator.validate(args); err != nil {
		return nil, err
	}
	var in AskUserQuestionArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return nil, &ArgumentError{Tool: ToolAskUserQuestion, Problems: []string{"(root): " + err.Error()}}
	}
	var problems []string
	seen := map[string]bool{}
	qs := make([]Question, len(in.Questions))
	for i, q := range in.Questions {
		id := strings.TrimSpace(q.ID)
		if id == "" {
			id = fmt.Sprintf("q%d", i+1)
		}
		if seen[id] {
			problems = append(problems, fmt.Sprintf("/questions/%d/id: duplicate id %q", i, id))
		}
		seen[id] = true
		if len(q.Options) == 1 {
			problems = append(problems, fmt.Sprintf("/questions/%d/options: give two or more options, or none for a free-text question", i))
		}
		labels := map[string]bool{}
		for j, o := range q.Options {
			if strings.TrimSpace(o.Label) == "" {
				problems = append(problems, fmt.Sprintf("/questions/%d/options/%d/label: must not be empty", i, j))
			}
			if labels[o.Label] {
				problems = append(problems, fmt.Sprintf("/questions/%d/options/%d/label: duplicate label %q", i, j, o.Label))
			}
			labels[o.Label] = true
		}
		qs[i] = Question{ID: id, Question: q.Question, Options: q.Options, MultiSelect: q.MultiSelect, AllowOther: q.AllowOther}
	}
	if len(problems) > 0 {
		return nil, &ArgumentError{Tool: ToolAskUserQuestion, Problems: problems}
	}
	return qs, nil
}

func parseFinalAnswer(args json.RawMessage) (string, error) {
	if err := finalTool.validator.validate(args); err != nil {
		return "", err
	}
	var in finalArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return "", &ArgumentError{Tool: ToolFinalAnswer, Problems: []string{"(root): " + err.Error()}}
	}
	if strings.TrimSpace(in.Answer) == "" {
		return "", &ArgumentError{Tool: ToolFinalAnswer, Problems: []string{"/answer: must not be blank"}}
	}
	return in.Answer, nil
}

// SubAgent is a child agent the parent can delegate to with the task tool.
type SubAgent struct {
	// Name identifies the sub-agent to the model ([a-z0-9_-], unique).
	Name string
	// Description tells the parent model when to delegate to it.
	Description string
	// Executor runs the sub-agent with its own model, system prompt and
	// tools. Its interrupts (questions, confirmations) are not passed to the
	// user: they come back to the parent as a tool error.
	Executor *Executor
}

type taskTool struct {
	spec      ToolSpec
	validator *argValidator
	agents    map[string]SubAgent
	only      string
}

type taskArgs struct {
	Agent string `json:"agent,omitempty"`
	Task  string `json:"task"`
}

func (t *taskTool) Spec() ToolSpec { return t.spec }

func (t *taskTool) builtinKind() builtinKind { return builtinTask }

func (t *taskTool) Call(_ context.Context, args json.RawMessage) (Result, error) {
	if _, err := t.validator.check(args); err != nil {
		return Result{}, err
	}
	return Result{}, errors.New("agents: the task tool runs inside an executor and cannot be called directly")
}

func (t *taskTool) parse(args json.RawMessage) (SubAgent, string, error) {
	if err := t.validator.validate(args); err != nil {
		return SubAgent{}, "", err
	}
	var in taskArgs
	if err := json.Unmarshal(args, &in); err != nil {
		return SubAgent{}, "", &ArgumentError{Tool: t.spec.Name, Problems: []string{"(root): " + err.Error()}}
	}
	name := in.Agent
	if name == "" {
		name = t.only
	}
	sa, ok := t.agents[name]
	if !ok {
		return SubAgent{}, "", &ArgumentError{Tool: t.spec.Name, Problems: []string{fmt.Sprintf("/agent: unknown agent %q", in.Agent)}}
	}
	if strings.TrimSpace(in.Task) == "" {
		return SubAgent{}, "", &ArgumentError{Tool: t.spec.Name, Problems: []string{"/task: must not be blank"}}
	}
	return sa, in.Task, nil
}

// NewTaskTool returns the built-in task tool, which delegates a
// self-contained piece of work to one of the given sub-agents. The child
// runs with its own system prompt, model and tools; its events are
// forwarded into the parent's stream tagged with the parent run id, and its
// final answer becomes the tool result the parent model sees.
func NewTaskTool(subagents ...SubAgent) (Tool, error) {
	if len(subagents) == 0 {
		return nil, errors.New("agents: NewTaskTool needs at least one sub-agent")
	}
	byName := make(map[string]SubAgent, len(subagents))
	names := make([]any, 0, len(subagents))
	var desc strings.Builder
	desc.WriteString("Delegate a self-contained task to a specialist agent and get its answer back. " +
		"Describe the task fully: the agent does not see this conversation. Agents:")
	for _, sa := range subagents {
		if !toolNameRE.MatchString(sa.Name) {
			return nil, fmt.Errorf("agents: sub-agent name %q must match [a-zA-Z0-9_-]{1,64}", sa.Name)
		}
		if sa.Executor == nil {
			return nil, fmt.Errorf("agents: sub-agent %s has no executor", sa.Name)
		}
		if _, dup := byName[sa.Name]; dup {
			return nil, fmt.Errorf("agents: duplicate sub-agent %s", sa.Name)
		}
		byName[sa.Name] = sa
		names = append(names, sa.Name)
		fmt.Fprintf(&desc, "\n- %s: %s", sa.Name, strings.TrimSpace(sa.Description))
	}
	props := map[string]any{
		"task": map[string]any{"type": "string", "minLength": 1,
			"description": "The complete task, with every fact the agent needs."},
	}
	required := []string{"task"}
	only := ""
	if len(subagents) == 1 {
		only = subagents[0].Name
		props["agent"] = map[string]any{"type": "string", "enum": names,
			"description": "The agent to use (optional: there is only one)."}
	} else {
		props["agent"] = map[string]any{"type": "string", "enum": names, "description": "The agent to use."}
		required = append(required, "agent")
	}
	schema, err := json.Marshal(map[string]any{"type": "object", "properties": props,
		"required": required, "additionalProperties": false})
	if err != nil {
		return nil, err
	}
	spec := ToolSpec{Name: ToolTask, Description: desc.String(), Schema: schema}
	v, err := compileSchema(ToolTask, schema)
	if err != nil {
		return nil, err
	}
	return &taskTool{spec: spec, validator: v, agents: byName, only: only}, nil
}
