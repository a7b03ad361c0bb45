package agents

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
)

// Permission classifies what a tool does to the world.
type Permission uint8

const (
	// PermRead tools only read; the executor runs them on the model's word.
	PermRead Permission = iota
	// PermWrite tools change data. They never run on the model's word: the
	// run stops with a confirmation request that the host must approve.
	PermWrite
	// PermDestructive tools delete or irreversibly change data; they need
	// confirmation like PermWrite, and hosts should word the dialog
	// accordingly.
	PermDestructive
)

// String returns "read", "write" or "destructive".
func (p Permission) String() string {
	switch p {
	case PermRead:
		return "read"
	case PermWrite:
		return "write"
	case PermDestructive:
		return "destructive"
	}
	return fmt.Sprintf("Permission(%d)", uint8(p))
}

// MarshalText encodes the permission as its name.
func (p Permission) MarshalText() ([]byte, error) {
	if p > PermDestructive {
		return nil, fmt.Errorf("agents: unknown permission %d", uint8(p))
	}
	return []byte(p.String()), nil
}

// UnmarshalText decodes "read", "write" or "destructive".
func (p *Permission) UnmarshalText(b []byte) error {
	switch string(b) {
	case "read":
		*p = PermRead
	case "write":
		*p = PermWrite
	case "destructive":
		*p = PermDestructive
	default:
		return fmt.Errorf("agents: unknown permission %q", b)
	}
	return nil
}

// NeedsConfirmation reports whether tools with this permission need the
// host's approval before they run.
func (p Permission) NeedsConfirmation() bool { return p >= PermWrite }

// ToolSpec describes a tool to the model and to the executor.
type ToolSpec struct {
	// Name matches [a-zA-Z0-9_-]{1,64}, the rule every provider accepts.
	Name        string `json:"name"`
	Description string `json:"description"`
	// Schema is the JSON Schema of the arguments object.
	Schema     json.RawMessage `json:"schema"`
	Permission Permission      `json:"permission"`
	// Timeout bounds one call; 0 means the executor's default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// ParallelSafe tools may run concurrently with other parallel-safe
	// calls of the same turn.
	ParallelSafe bool `json:"parallel_safe,omitempty"`
}

var toolNameRE = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// Validate checks the name and that the schema is a JSON object.
func (s ToolSpec) Validate() error {
	if !toolNameRE.MatchString(s.Name) {
		return fmt.Errorf("agents: tool name %q must match [a-zA-Z0-9_-]{1,64}", s.Name)
	}
	if strings.TrimSpace(s.Description) == "" {
		return fmt.Errorf("agents: tool %s has no description; the model needs one to use it", s.Name)
	}
	if len(s.Schema) > 0 {
		var m map[string]any
		if err := json.Unmarshal(s.Schema, &m); err != nil || m == nil {
			return fmt.Errorf("agents: tool %s schema is not a JSON object", s.Name)
		}
	}
	if s.Permission > PermDestructive {
		return fmt.Errorf("agents: tool %s has unknown permission %d", s.Name, s.Permission)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("agents: tool %s has a negative timeout", s.Name)
	}
	return nil
}

// Tool is something the agent can call.
type Tool interface {
	// Spec describes the tool. It must return the same value every time.
	Spec() ToolSpec
	// Call runs the tool with the model's arguments (a JSON object). An
	// error goes back to the model as a tool error; it never aborts the
	// run. Call must honour ctx: the executor cancels it on timeout and
	// when the run stops.
	Call(ctx context.Context, args json.RawMessage) (Result, error)
}

// Result is the two-track outcome of a tool call.
type Result struct {
	// Summary is what the model sees: short, with shapes and aggregates
	// rather than raw rows when the host asks for data minimisation.
	Summary string
	// Payload is what the host renders (rows, a chart spec, a file
	// reference). It is delivered in the ToolCallFinished event and never
	// sent to the model.
	Payload any
	// Artifacts are files the call produced.
	Artifacts []domain.Artifact
	// Datasets names the datasets the call read, for the message metadata.
	Datasets []string
	// Citations are sources the call found, for the message.
	Citations []domain.Citation
}

// ToolSummarizer lets a tool's output type choose the summary the model
// sees. NewTool uses it when Out implements it; otherwise the summary is
// the JSON encoding of the output.
type ToolSummarizer interface {
	ToolSummary() string
}

// ArgumentError reports tool arguments that do not match the tool's
// schema. The executor sends its message to the model, which can repair
// the call; the tool function never sees the bad arguments.
type ArgumentError struct {
	Tool string
	// Problems lists each violation as "field: reason"; the field is a
	// JSON pointer such as /limit or /items/0/name ("(root)" for the
	// object itself).
	Problems []string
}

// Error lists the problems after the tool name.
func (e *ArgumentError) Error() string {
	return fmt.Sprintf("invalid arguments for %s: %s", e.Tool, strings.Join(e.Problems, "; "))
}

// ErrInvalidArguments matches every *ArgumentError with errors.Is.
var ErrInvalidArguments = errors.New("agents: invalid tool arguments")

// Is reports whether target is ErrInvalidArguments.
func (e *ArgumentError) Is(target error) bool { return target == ErrInvalidArguments }

// ToolOption configures NewTool.
type ToolOption func(*toolConfig)

type toolConfig struct {
	spec   ToolSpec
	schema json.RawMessage
}

// WithPermission sets the tool's permission (default PermRead).
func WithPermission(p Permission) ToolOption {
	return func(c *toolConfig) { c.spec.Permission = p }
}

// WithTimeout bounds each call of the tool.
func WithTimeout(d time.Duration) ToolOption {
	return func(c *toolConfig) { c.spec.Timeout = d }
}

// WithParallel marks the tool safe to run concurrently with other
// parallel-safe calls of the same turn. Only read tools can be parallel;
// the option is ignored for write and destructive tools.
func WithParallel() ToolOption {
	return func(c *toolConfig) { c.spec.ParallelSafe = true }
}

// WithSchema replaces the schema generated from the input type. Arguments
// are validated against it and then decoded into the input type.
func WithSchema(schema json.RawMessage) ToolOption {
	return func(c *toolConfig) { c.schema = schema }
}

// NewTool builds a Tool from a typed function. The JSON Schema of In is
// generated once, here, with github.com/invopop/jsonschema (struct tags
// `json` and `jsonschema` apply: fields without omitempty are required,
// unknown properties are rejected). Each call validates the model's
// arguments against the schema with a real JSON Schema validator before
// decoding them into In, so fn only ever sees valid input.
//
// The result: if Out is Result it is used as is; if Out implements
// ToolSummarizer, Summary is its ToolSummary and Payload the value; if Out
// is a string it is the Summary; otherwise Summary is the JSON encoding of
// the value and Payload the value.
//
// In a `jsonschema` tag, commas separate keywords, so a comma inside a
// value (a regex pattern, a description) must be escaped as \\, in the Go
// source:
//
//	Code string `json:"code" jsonschema:"pattern=^[a-z]{1\\,3}$,description=One to three letters\\, lower case"`
//
// NewTool checks every jsonschema and jsonschema_extras tag of In (nested
// structs included) before generating the schema: a part the generator
// would silently misread (an unescaped comma, an unknown keyword such as
// minlength) is an error matching ErrBadTag that names the field and the
// tag and shows the escaped form. A field whose type JSON cannot carry
// (chan, func, complex) is an error naming the field too.
//
// NewTool returns an error when the name or description is invalid or the
// schema cannot be built; use MustTool in package-level declarations.
func NewTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...ToolOption) (Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("agents: tool %s has a nil function", name)
	}
	cfg := toolConfig{spec: ToolSpec{Name: name, Description: description}}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.spec.Permission.NeedsConfirmation() {
		cfg.spec.ParallelSafe = false
	}
	var (
		schema []byte
		err    error
	)
	if cfg.schema != nil {
		schema = cfg.schema
	} else {
		schema, err = schemaFor(reflect.TypeFor[In]())
		if err != nil {
			return nil, fmt.Errorf("agents: tool %s: %w", name, err)
		}
	}
	cfg.spec.Schema = schema
	if err := cfg.spec.Validate(); err != nil {
		return nil, err
	}
	v, err := compileSchema(name, schema)
	if err != nil {
		return nil, fmt.Errorf("agents: tool %s: %w", name, err)
	}
	return &funcTool[In, Out]{spec: cfg.spec, validator: v, fn: fn}, nil
}

// MustTool is NewTool that panics on error, for package-level tool
// declarations whose inputs are fixed at compile time.
func MustTool[In, Out any](name, description string, fn func(context.Context, In) (Out, error), opts ...ToolOption) Tool {
	t, err := NewTool(name, description, fn, opts...)
	if err != nil {
		panic(err)
	}
	return t
}

type funcTool[In, Out any] struct {
	spec      ToolSpec
	validator *argValidator
	fn        func(context.Context, In) (Out, error)
}

func (t *funcTool[In, Out]) Spec() ToolSpec { return t.spec }

func (t *funcTool[In, Out]) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	args, err := t.validator.check(args)
	if err != nil {
		return Result{}, err
	}
	var in In
	if err := json.Unmarshal(args, &in); err != nil {
		return Result{}, &ArgumentError{Tool: t.spec.Name, Problems: []string{"(root): " + err.Error()}}
	}
	out, err := t.fn(ctx, in)
	if err != nil {
		return Result{}, err
	}
	return toResult(out)
}

func toResult(out any) (Result, error) {
	switch v := out.(type) {
	case Result:
		return v, nil
	case *Result:
		if v == nil {
			return Result{}, nil
		}
		return *v, nil
	case ToolSummarizer:
		return Result{Summary: v.ToolSummary(), Payload: out}, nil
	case string:
		return Result{Summary: v}, nil
	}
	b, err := json.Marshal(out)
	if err != nil {
		return Result{}, fmt.Errorf("encode tool output: %w", err)
	}
	return Result{Summary: string(b), Payload: out}, nil
}

// NewRawTool builds a Tool from a spec and a function that receives the
// raw JSON arguments. The arguments are validated against spec.Schema (when
// set) before fn runs.
func NewRawTool(spec ToolSpec, fn func(ctx context.Context, args json.RawMessage) (Result, error)) (Tool, error) {
	if fn == nil {
		return nil, fmt.Errorf("agents: tool %s has a nil function", spec.Name)
	}
	if len(spec.Schema) == 0 {
		spec.Schema = json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`)
	}
	if spec.Permission.NeedsConfirmation() {
		spec.ParallelSafe = false
	}
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	v, err := compileSchema(spec.Name, spec.Schema)
	if err != nil {
		return nil, fmt.Errorf("agents: tool %s: %w", spec.Name, err)
	}
	return &rawTool{spec: spec, validator: v, fn: fn}, nil
}

type rawTool struct {
	spec      ToolSpec
	validator *argValidator
	fn        func(context.Context, json.RawMessage) (Result, error)
}

func (t *rawTool) Spec() ToolSpec { return t.spec }

func (t *rawTool) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	args, err := t.validator.check(args)
	if err != nil {
		return Result{}, err
	}
	return t.fn(ctx, args)
}
