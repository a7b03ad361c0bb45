package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"
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
	if t.Kind() != reflect.Struct && t.Kind() != reflect.Map {
		return nil, fmt.Errorf("input type %s must be a struct (tool arguments are a JSON object)", t)
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
	if len(e.Causes) == 0 {
		loc := "(root)"
		if len(e.InstanceLocation) > 0 {
			loc = "/" + strings.Join(e.InstanceLocation, "/")
		}
		*out = append(*out, loc+": "+e.ErrorKind.LocalizedString(printer))
		return
	}
	for _, c := range e.Causes {
		collectLeaves(c, out)
	}
}
