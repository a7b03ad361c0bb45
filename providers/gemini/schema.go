package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
)

// keptKeywords are the JSON Schema keywords Gemini's function declarations
// accept (parametersJsonSchema); every other keyword is dropped.
var keptKeywords = map[string]bool{
	"type": true, "format": true, "title": true, "description": true, "nullable": true,
	"enum": true, "minItems": true, "maxItems": true, "minimum": true, "maximum": true,
	"minLength": true, "maxLength": true, "pattern": true, "required": true,
	"minProperties": true, "maxProperties": true, "default": true, "propertyOrdering": true,
}

// maxSchemaDepth bounds nesting (and $ref expansion) of a converted schema.
const maxSchemaDepth = 48

// ConvertSchema rewrites a JSON Schema into the subset Gemini's function
// declarations accept: $ref pointers into $defs/definitions are inlined
// (recursive references are an error), oneOf becomes anyOf, a single-entry
// or object-only allOf is merged into its parent, const becomes a one-value
// enum, and keywords Gemini rejects ($schema, $id, $defs, $comment,
// examples, not, if/then/else, patternProperties, prefixItems, ...) are
// dropped. Keys come out sorted, so the result is deterministic. An empty
// schema becomes an object with no properties.
func ConvertSchema(schema json.RawMessage) (json.RawMessage, error) {
	s := bytes.TrimSpace(schema)
	if len(s) == 0 {
		return json.RawMessage(`{"properties":{},"type":"object"}`), nil
	}
	dec := json.NewDecoder(bytes.NewReader(s))
	dec.UseNumber()
	var root any
	if err := dec.Decode(&root); err != nil {
		return nil, fmt.Errorf("gemini: tool schema is not valid JSON: %w", err)
	}
	c := converter{root: root}
	out, err := c.walk(root, 0, nil)
	if err != nil {
		return nil, err
	}
	return json.Marshal(out)
}

type converter struct {
	root any
}

func (c *converter) walk(node any, depth int, refs []string) (any, error) {
	if depth > maxSchemaDepth {
		return nil, fmt.Errorf("gemini: tool schema nests deeper than %d levels", maxSchemaDepth)
	}
	switch n := node.(type) {
	case bool:
		return map[string]any{}, nil // true (anything) / false: no constraint Gemini can express
	case map[string]any:
		if ref, ok := n["$ref"].(string); ok {
			for _, r := range refs {
				if r == ref {
					return nil, fmt.Errorf("gemini: tool schema is recursive through %q, which Gemini cannot express", ref)
				}
			}
			target, err := c.resolve(ref)
			if err != nil {
				return nil, err
			}
			merged := map[string]any{}
			if tm, ok := target.(map[string]any); ok {
				for k, v := range tm {
					merged[k] = v
				}
			}
			for k, v := range n {
				if k != "$ref" {
					merged[k] = v // siblings (e.g. description) win
				}
			}
			return c.walk(merged, depth+1, append(refs, ref))
		}
		out := map[string]any{}
		for k, v := range n {
			switch k {
			case "properties":
				props, ok := v.(map[string]any)
				if !ok {
					continue
				}
				po := make(map[string]any, len(props))
				for name, sub := range props {
					w, err := c.walk(sub, depth+1, refs)
					if err != nil {
						return nil, err
					}
					po[name] = w
				}
				out["properties"] = po
			case "items":
				if _, tuple := v.([]any); tuple {
					continue
				}
				w, err := c.walk(v, depth+1, refs)
				if err != nil {
					return nil, err
				}
				out["items"] = w
			case "additionalProperties":
				if b, ok := v.(bool); ok {
					out[k] = b
					continue
				}
				w, err := c.walk(v, depth+1, refs)
				if err != nil {
					return nil, err
				}
				out[k] = w
			case "anyOf", "oneOf":
				list, ok := v.([]any)
				if !ok {
					continue
				}
				lo := make([]any, 0, len(list))
				for _, sub := range list {
					w, err := c.walk(sub, depth+1, refs)
					if err != nil {
						return nil, err
					}
					lo = append(lo, w)
				}
				out["anyOf"] = append(anyList(out["anyOf"]), lo...)
			case "const":
				out["enum"] = []any{v}
			default:
				if keptKeywords[k] {
					out[k] = v
				}
			}
		}
		if all, ok := n["allOf"].([]any); ok {
			for _, sub := range all {
				w, err := c.walk(sub, depth+1, refs)
				if err != nil {
					return nil, err
				}
				mergeInto(out, w)
			}
		}
		return out, nil
	default:
		return map[string]any{}, nil
	}
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

// mergeInto folds an allOf member into dst: properties and required are
// unioned, other keywords already in dst win.
func mergeInto(dst map[string]any, src any) {
	sm, ok := src.(map[string]any)
	if !ok {
		return
	}
	for k, v := range sm {
		switch k {
		case "properties":
			dp, _ := dst["properties"].(map[string]any)
			if dp == nil {
				dp = map[string]any{}
				dst["properties"] = dp
			}
			if vp, ok := v.(map[string]any); ok {
				for name, s := range vp {
					if _, exists := dp[name]; !exists {
						dp[name] = s
					}
				}
			}
		case "required":
			have := map[any]bool{}
			req := anyList(dst["required"])
			for _, r := range req {
				have[r] = true
			}
			for _, r := range anyList(v) {
				if !have[r] {
					req = append(req, r)
					have[r] = true
				}
			}
			dst["required"] = req
		default:
			if _, exists := dst[k]; !exists {
				dst[k] = v
			}
		}
	}
}

// resolve follows a local JSON pointer ("#", "#/$defs/Name",
// "#/definitions/Name", or any "#/a/b" path) in the root schema.
func (c *converter) resolve(ref string) (any, error) {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, fmt.Errorf("gemini: tool schema $ref %q is not a local reference; only #/... references can be inlined", ref)
	}
	node := c.root
	if ptr == "" {
		return node, nil
	}
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		m, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("gemini: tool schema $ref %q does not resolve", ref)
		}
		node, ok = m[tok]
		if !ok {
			return nil, fmt.Errorf("gemini: tool schema $ref %q does not resolve", ref)
		}
	}
	return node, nil
}
