package agents

import (
	"bytes"
	"encoding/json"
	"errors"
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
	if err := checkFields(t, "", map[reflect.Type]bool{}); err != nil {
		return nil, fmt.Errorf("input type %s: %w", t, err)
	}
	s, err := reflectSchema(t)
	if err != nil {
		return nil, err
	}
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

// reflectSchema runs the schema generator, turning a panic (which it uses
// for types it cannot describe) into an error.
func reflectSchema(t reflect.Type) (s *jsonschema.Schema, err error) {
	defer func() {
		if p := recover(); p != nil {
			s, err = nil, fmt.Errorf("input type %s: cannot generate its JSON Schema: %v", t, p)
		}
	}()
	r := jsonschema.Reflector{
		Anonymous:      true,
		DoNotReference: true,
		ExpandedStruct: true,
	}
	return r.ReflectFromType(t), nil
}

// tagKeywords are the keywords of the jsonschema struct tag that
// github.com/invopop/jsonschema understands (key=value), and tagFlags the
// bare words. Anything else in a tag is silently ignored by the generator,
// which is how an unescaped comma inside a value (a regex pattern, a
// description) used to cut the value short without a word.
var (
	tagKeywords = map[string]bool{
		"title": true, "description": true, "type": true, "anchor": true,
		"oneof_required": true, "anyof_required": true, "oneof_ref": true, "oneof_type": true,
		"anyof_ref": true, "anyof_type": true,
		"minLength": true, "maxLength": true, "pattern": true, "format": true,
		"readOnly": true, "writeOnly": true, "default": true, "example": true, "enum": true,
		"multipleOf": true, "minimum": true, "maximum": true, "exclusiveMaximum": true, "exclusiveMinimum": true,
		"minItems": true, "maxItems": true, "uniqueItems": true,
	}
	tagFlags = map[string]bool{"required": true, "nullable": true}
)

// checkFields checks the jsonschema tags and field types of struct t (and
// of the structs its fields reach) before the generator runs, so that a
// tag it would misread or a type it cannot describe is reported as an
// error naming the field, never a panic or a silently wrong schema.
func checkFields(t reflect.Type, path string, seen map[reflect.Type]bool) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return nil
	}
	seen[t] = true
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name == "-" {
			continue
		}
		field := f.Name
		if path != "" {
			field = path + "." + f.Name
		}
		if tag, ok := f.Tag.Lookup("jsonschema"); ok {
			if err := checkSchemaTag(field, tag); err != nil {
				return err
			}
			if strings.HasPrefix(tag, "-") && (len(tag) == 1 || tag[1] == ',') {
				continue // left out of the schema
			}
		}
		if tag, ok := f.Tag.Lookup("jsonschema_extras"); ok {
			for _, part := range splitTag(tag) {
				if part != "" && !strings.Contains(part, "=") {
					return tagError(field, "jsonschema_extras", tag, part)
				}
			}
		}
		et := f.Type
		for et.Kind() == reflect.Pointer || et.Kind() == reflect.Slice || et.Kind() == reflect.Array || et.Kind() == reflect.Map {
			et = et.Elem()
		}
		switch et.Kind() {
		case reflect.Chan, reflect.Func, reflect.Complex64, reflect.Complex128, reflect.UnsafePointer, reflect.Uintptr:
			return fmt.Errorf("field %s has type %s, which JSON cannot carry; leave it out of the input type or tag it json:\"-\"", field, f.Type)
		}
		if err := checkFields(f.Type, field, seen); err != nil {
			return err
		}
	}
	return nil
}

// checkSchemaTag reports a jsonschema tag part the generator would ignore:
// a bare word other than required or nullable, or an unknown keyword.
func checkSchemaTag(field, tag string) error {
	parts := splitTag(tag)
	for i, part := range parts {
		if part == "" || (i == 0 && part == "-") {
			continue
		}
		name, _, hasValue := strings.Cut(part, "=")
		if hasValue && tagKeywords[name] || !hasValue && tagFlags[name] {
			continue
		}
		return tagError(field, "jsonschema", tag, part)
	}
	return nil
}

// tagError explains a misread tag part and shows the tag with the comma
// before it escaped, as it must be written in Go source.
func tagError(field, key, tag, part string) error {
	msg := fmt.Sprintf("field %s: %s tag %q: %q is not a keyword=value pair the schema generator knows", field, key, tag, part)
	if i := strings.Index(tag, ","+part); i >= 0 {
		fixed := tag[:i] + `\,` + tag[i+1:]
		src := strings.ReplaceAll(fixed, `\`, `\\`)
		msg += fmt.Sprintf("; if the comma before it belongs to the previous value (a regex pattern, a description), "+
			"escape it as \\\\, in the Go source: `%s:\"%s\"`", key, src)
	}
	return fmt.Errorf("%w: %s", ErrBadTag, msg)
}

// ErrBadTag matches the error NewTool returns for a jsonschema (or
// jsonschema_extras) struct tag the schema generator would misread; the
// message names the field and the tag and shows the fix.
var ErrBadTag = errors.New("bad struct tag")

// splitTag splits a tag on commas not preceded by a backslash, as the
// schema generator does (the backslash is dropped).
func splitTag(tag string) []string {
	var out []string
	var cur strings.Builder
	for i := 0; i < len(tag); i++ {
		switch {
		case tag[i] == '\\' && i+1 < len(tag) && tag[i+1] == ',':
			cur.WriteByte(',')
			i++
		case tag[i] == ',':
			out = append(out, cur.String())
			cur.Reset()
		default:
			cur.WriteByte(tag[i])
		}
	}
	return append(out, cur.String())
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
