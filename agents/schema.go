package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schemaFor generates the JSON Schema of a tool's input type: inlined (no
// $ref, which several providers reject), without $schema and $id, unknown
// properties rejected.
func schemaFor(t reflect.Type) (json.RawMessage, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("input type %s must be a struct (tool arguments are a JSON object)", t)
	}
	if path := recursion(t, nil); path != "" {
		return nil, fmt.Errorf("input type %s is recursive (%s); describe it with WithSchema instead", t, path)
	}
	r := jsonschema.Reflector{
		Anonymous:      true,
		DoNotReference: true,
		ExpandedStruct: true,
	}
	s := r.ReflectFromType(t)
	s.Version = ""
	s.ID = ""
	b, err := json.Marshal(s)
	if err != nil {
		return nil, fmt.Errorf("encode schema of %s: %w", t, err)
	}
	// An empty struct reflects to {"type":"object","additionalProperties":false};
	// give it an explicit empty properties object, which OpenAI's strict
	// mode requires.
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	if m["type"] == "object" {
		if _, ok := m["properties"]; !ok {
			m["properties"] = map[string]any{}
			b, err = json.Marshal(m)
			if err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// recursion returns a description of the first struct type that contains
// itself (which the schema generator cannot inline), or "".
func recursion(t reflect.Type, stack []reflect.Type) string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return ""
	}
	for i, s := range stack {
		if s == t {
			names := make([]string, 0, len(stack)-i+1)
			for _, x := range stack[i:] {
				names = append(names, x.String())
			}
			return strings.Join(append(names, t.String()), " -> ")
		}
	}
	stack = append(stack, t)
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if p := recursion(f.Type, stack); p != "" {
			return p
		}
	}
	return ""
}

type argValidator struct {
	tool   string
	schema *validator.Schema
}

var printer = message.NewPrinter(language.English)

// compileSchema compiles a tool's schema once. Meta-schemas are embedded in
// the validator; nothing is fetched from the network.
func compileSchema(tool string, schema json.RawMessage) (*argValidator, error) {
	doc, err := validator.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	c := validator.NewCompiler()
	c.UseLoader(noLoader{})
	url := "bichat:///tools/" + tool + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	s, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &argValidator{tool: tool, schema: s}, nil
}

// noLoader refuses remote references: tool schemas must be self-contained.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema references %s; tool schemas must be self-contained", url)
}

// check treats empty arguments as {} (models send nothing for tools without
// parameters), validates them, and returns what was validated.
func (v *argValidator) check(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage("{}")
	}
	return args, v.validate(args)
}

func (v *argValidator) validate(args json.RawMessage) error {
	inst, err := validator.UnmarshalJSON(bytes.NewReader(args))
	if err != nil {
		return &ArgumentError{Tool: v.tool, Problems: []string{"(root): arguments are not valid JSON: " + err.Error()}}
	}
	if _, ok := inst.(map[string]any); !ok {
		return &ArgumentError{Tool: v.tool, Problems: []string{"(root): arguments must be a JSON object"}}
	}
	err = v.schema.Validate(inst)
	if err == nil {
		return nil
	}
	ve, ok := err.(*validator.ValidationError)
	if !ok {
		return &ArgumentError{Tool: v.tool, Problems: []string{"(root): " + err.Error()}}
	}
	var problems []string
	collectLeaves(ve, &problems)
	slices.Sort(problems)
	problems = slices.Compact(problems)
	if len(problems) == 0 {
		problems = []string{"(root): " + ve.Error()}
	}
	return &ArgumentError{Tool: v.tool, Problems: problems}
}

func collectLeaves(e *validator.ValidationError, out *[]string) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collectLeaves(c, out)
		}
		return
	}
	loc := "/" + strings.Join(e.InstanceLocation, "/")
	at := func(l, msg string) {
		if l == "/" {
			l = "(root)"
		}
		*out = append(*out, l+": "+msg)
	}
	child := func(name string) string {
		if loc == "/" {
			return "/" + name
		}
		return loc + "/" + name
	}
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			at(child(m), "is required")
		}
	case *kind.AdditionalProperties:
		for _, p := range k.Properties {
			at(child(p), "is not a known property")
		}
	case *kind.Type:
		at(loc, fmt.Sprintf("must be %s, not %s", strings.Join(k.Want, " or "), k.Got))
	case *kind.Minimum:
		at(loc, fmt.Sprintf("must be at least %s (got %s)", ratString(k.Want), ratString(k.Got)))
	case *kind.Maximum:
		at(loc, fmt.Sprintf("must be at most %s (got %s)", ratString(k.Want), ratString(k.Got)))
	case *kind.ExclusiveMinimum:
		at(loc, fmt.Sprintf("must be greater than %s (got %s)", ratString(k.Want), ratString(k.Got)))
	case *kind.ExclusiveMaximum:
		at(loc, fmt.Sprintf("must be less than %s (got %s)", ratString(k.Want), ratString(k.Got)))
	case *kind.MinLength:
		at(loc, fmt.Sprintf("must be at least %d characters long (got %d)", k.Want, k.Got))
	case *kind.MaxLength:
		at(loc, fmt.Sprintf("must be at most %d characters long (got %d)", k.Want, k.Got))
	case *kind.MinItems:
		at(loc, fmt.Sprintf("must have at least %d items (got %d)", k.Want, k.Got))
	case *kind.MaxItems:
		at(loc, fmt.Sprintf("must have at most %d items (got %d)", k.Want, k.Got))
	case *kind.Enum:
		want := make([]string, len(k.Want))
		for i, w := range k.Want {
			b, _ := json.Marshal(w)
			want[i] = string(b)
		}
		at(loc, "must be one of "+strings.Join(want, ", "))
	default:
		at(loc, e.ErrorKind.LocalizedString(printer))
	}
}

// ratString formats a schema number without grouping separators.
func ratString(r *big.Rat) string {
	if r == nil {
		return "?"
	}
	if r.IsInt() {
		return r.Num().String()
	}
	return strings.TrimRight(strings.TrimRight(r.FloatString(6), "0"), ".")
}
