package openai

import (
	"encoding/json"
	"slices"
)

// StrictSchema rewrites a JSON Schema for OpenAI's strict function calling
// (structured outputs): every object gets additionalProperties:false and
// lists all its properties as required; properties that were optional
// become nullable ("type":["string","null"], or anyOf with {"type":"null"}
// when the property has no plain type), with null added to their enum.
// It recurses into properties, items, anyOf, allOf, $defs and definitions.
//
// ok is false when the schema cannot be expressed strictly (an object
// that allows arbitrary extra properties, oneOf, or invalid JSON); send
// the original schema with strict off then. The output is deterministic
// (keys sorted).
func StrictSchema(schema json.RawMessage) (out json.RawMessage, ok bool) {
	var v any
	if err := json.Unmarshal(schema, &v); err != nil {
		return nil, false
	}
	m, isObj := v.(map[string]any)
	if !isObj {
		return nil, false
	}
	if !strictify(m) {
		return nil, false
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, false
	}
	return b, true
}

func strictify(s map[string]any) bool {
	if _, bad := s["oneOf"]; bad {
		return false
	}
	delete(s, "$schema")
	props, hasProps := s["properties"].(map[string]any)
	if isObjectType(s["type"]) || hasProps {
		if ap, has := s["additionalProperties"]; has && ap != false {
			return false
		}
		if !hasProps {
			props = map[string]any{}
			s["properties"] = props
		}
		s["additionalProperties"] = false
		required := map[string]bool{}
		if list, ok := s["required"].([]any); ok {
			for _, r := range list {
				if name, ok := r.(string); ok {
					required[name] = true
				}
			}
		}
		names := make([]string, 0, len(props))
		for name, p := range props {
			names = append(names, name)
			pm, ok := p.(map[string]any)
			if !ok {
				return false
			}
			if !strictify(pm) {
				return false
			}
			if !required[name] {
				props[name] = nullable(pm)
			}
		}
		slices.Sort(names)
		req := make([]any, len(names))
		for i, n := range names {
			req[i] = n
		}
		s["required"] = req
	}
	if items, ok := s["items"].(map[string]any); ok && !strictify(items) {
		return false
	}
	for _, k := range []string{"anyOf", "allOf"} {
		if list, ok := s[k].([]any); ok {
			for _, x := range list {
				if xm, ok := x.(map[string]any); ok && !strictify(xm) {
					return false
				}
			}
		}
	}
	for _, k := range []string{"$defs", "definitions"} {
		if defs, ok := s[k].(map[string]any); ok {
			for _, d := range defs {
				if dm, ok := d.(map[string]any); ok && !strictify(dm) {
					return false
				}
			}
		}
	}
	return true
}

func isObjectType(t any) bool {
	switch t := t.(type) {
	case string:
		return t == "object"
	case []any:
		return slices.Contains(t, any("object"))
	}
	return false
}

// nullable returns p allowing null as well.
func nullable(p map[string]any) map[string]any {
	switch t := p["type"].(type) {
	case string:
		if t != "null" {
			p["type"] = []any{t, "null"}
		}
	case []any:
		if !slices.Contains(t, any("null")) {
			p["type"] = append(t, "null")
		}
	default:
		return map[string]any{"anyOf": []any{p, map[string]any{"type": "null"}}}
	}
	if enum, ok := p["enum"].([]any); ok && !slices.Contains(enum, nil) {
		p["enum"] = append(enum, nil)
	}
	return p
}
