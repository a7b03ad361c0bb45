package gemini

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

const providerName = "gemini"

// SyntheticIDPrefix starts the tool-call ids this package makes up for
// function calls that arrive without an id (Gemini usually sends none).
// Such ids are never sent back to the API; results are matched to their
// calls by name and order instead.
const SyntheticIDPrefix = "gemini-call-"

var errEncode = errors.New("gemini: invalid request")

// foreignCallSignature is the thoughtSignature Gemini documents for
// function calls it did not produce itself.
const foreignCallSignature = "skip_thought_signature_validator"

// encodeRequest turns a provider-neutral request into a
// GenerateContentRequest.
func encodeRequest(req *agents.Request) (*wireRequest, error) {
	w := &wireRequest{Contents: []wireContent{}}
	var sys []wirePart
	if req.System != "" {
		s := req.System
		sys = append(sys, wirePart{Text: &s})
	}
	// callOrder maps call ids of the latest model turn to their position,
	// so function responses go back in call order.
	callName := map[string]string{}
	callOrder := map[string]int{}
	for i, m := range req.Messages {
		switch m.Role {
		case domain.RoleSystem:
			for _, p := range m.Parts {
				if p.Type == domain.PartText && p.Text != "" {
					t := p.Text
					sys = append(sys, wirePart{Text: &t})
				}
			}
			continue
		case domain.RoleAssistant:
			clear(callOrder)
			n := 0
			for _, p := range m.Parts {
				if p.Type == domain.PartToolCall && p.ToolCall != nil {
					callName[p.ToolCall.ID] = p.ToolCall.Name
					callOrder[p.ToolCall.ID] = n
					n++
				}
			}
		}
		role, parts, err := encodeMessage(m, callName)
		if err != nil {
			return nil, fmt.Errorf("%w: message %d: %v", errEncode, i, err)
		}
		if len(parts) == 0 {
			continue
		}
		if k := len(w.Contents); k > 0 && w.Contents[k-1].Role == role {
			w.Contents[k-1].Parts = append(w.Contents[k-1].Parts, parts...)
		} else {
			w.Contents = append(w.Contents, wireContent{Role: role, Parts: parts})
		}
		if m.Role == domain.RoleTool {
			// All answers to one model turn, in call order, before any
			// other user part.
			c := &w.Contents[len(w.Contents)-1]
			slices.SortStableFunc(c.Parts, func(a, b wirePart) int {
				return responseRank(a, callOrder) - responseRank(b, callOrder)
			})
		}
	}
	if len(sys) > 0 {
		w.SystemInstruction = &wireContent{Parts: sys}
	}

	if len(req.Tools) > 0 {
		decls := make([]wireFunctionDecl, 0, len(req.Tools))
		for _, t := range req.Tools {
			d := wireFunctionDecl{Name: t.Name, Description: t.Description}
			schema, err := ConvertSchema(t.Schema)
			if err != nil {
				return nil, fmt.Errorf("%w: tool %q: %v", errEncode, t.Name, err)
			}
			if !emptyObjectSchema(schema) {
				d.ParametersJSONSchema = schema
			}
			decls = append(decls, d)
		}
		w.Tools = []wireTool{{FunctionDeclarations: decls}}
		fc := wireFunctionCallingConfig{}
		switch req.Options.ToolChoice.Mode {
		case "", agents.ToolChoiceAuto:
			fc.Mode = "AUTO"
		case agents.ToolChoiceNone:
			fc.Mode = "NONE"
		case agents.ToolChoiceRequired:
			fc.Mode = "ANY"
		case agents.ToolChoiceTool:
			if req.Options.ToolChoice.Name == "" {
				return nil, fmt.Errorf("%w: tool choice %q needs a tool name", errEncode, req.Options.ToolChoice.Mode)
			}
			fc.Mode = "ANY"
			fc.AllowedFunctionNames = []string{req.Options.ToolChoice.Name}
		default:
			return nil, fmt.Errorf("%w: unknown tool choice %q", errEncode, req.Options.ToolChoice.Mode)
		}
		w.ToolConfig = &wireToolConfig{FunctionCallingConfig: fc}
	}

	gc := wireGenerationCf{Temperature: req.Options.Temperature, MaxOutputTokens: req.Options.MaxTokens}
	if req.Options.ReasoningBudget > 0 {
		gc.ThinkingConfig = &wireThinkingConfig{ThinkingBudget: req.Options.ReasoningBudget, IncludeThoughts: true}
	}
	if gc != (wireGenerationCf{}) {
		w.GenerationConfig = &gc
	}
	return w, nil
}

func responseRank(p wirePart, order map[string]int) int {
	if p.FunctionResponse == nil {
		return 1 << 20
	}
	if i, ok := order[p.FunctionResponse.ID]; ok {
		return i
	}
	if i, ok := order[p.FunctionResponse.origID]; ok {
		return i
	}
	return 1 << 19
}

// emptyObjectSchema reports whether a converted schema is an object with
// no properties: a zero-argument function, declared without parameters.
func emptyObjectSchema(s json.RawMessage) bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(s, &m) != nil {
		return false
	}
	for k, v := range m {
		switch k {
		case "type":
			if string(v) != `"object"` {
				return false
			}
		case "properties":
			if string(bytes.TrimSpace(v)) != "{}" {
				return false
			}
		case "additionalProperties", "description", "title", "required":
		default:
			return false
		}
	}
	return true
}

// encodeMessage returns the Gemini role and parts of m.
func encodeMessage(m agents.Message, callName map[string]string) (string, []wirePart, error) {
	var role string
	switch m.Role {
	case domain.RoleUser, domain.RoleTool:
		role = "user"
	case domain.RoleAssistant:
		role = "model"
	default:
		return "", nil, fmt.Errorf("unknown role %q", m.Role)
	}
	parts := make([]wirePart, 0, len(m.Parts))
	firstCall := true
	for _, p := range m.Parts {
		switch p.Type {
		case domain.PartText:
			if p.Text == "" {
				continue
			}
			t := p.Text
			parts = append(parts, wirePart{Text: &t})
		case domain.PartReasoning:
			r := p.Reasoning
			if role != "model" || r == nil || !wireOpaque.Owns(r.Provider) {
				continue // other providers' reasoning means nothing to Gemini
			}
			var sig string
			if len(r.Opaque) > 0 {
				sig = wireOpaque.ToWire(r.Opaque, r.Provider)
			}
			if r.Text == "" {
				if sig == "" {
					continue
				}
				// A signature that came on a text part: put it back on the
				// text part before it, or alone on an empty part.
				if k := len(parts); k > 0 && parts[k-1].Text != nil && !parts[k-1].Thought &&
					parts[k-1].ThoughtSignature == "" {
					parts[k-1].ThoughtSignature = sig
					continue
				}
				empty := ""
				parts = append(parts, wirePart{Text: &empty, ThoughtSignature: sig})
				continue
			}
			t := r.Text
			parts = append(parts, wirePart{Text: &t, Thought: true, ThoughtSignature: sig})
		case domain.PartToolCall:
			tc := p.ToolCall
			if tc == nil {
				continue
			}
			if role != "model" {
				return "", nil, fmt.Errorf("function call %q outside a model message", tc.Name)
			}
			args := bytes.TrimSpace(tc.Arguments)
			if len(args) == 0 || args[0] != '{' || !json.Valid(args) {
				args = []byte("{}")
			}
			fc := &wireFunctionCall{ID: wireID(tc.ID), Name: tc.Name, Args: args}
			wp := wirePart{FunctionCall: fc}
			ours := wireOpaque.Owns(tc.Provider)
			switch {
			case len(tc.Opaque) > 0 && (ours || tc.Provider == ""):
				wp.ThoughtSignature = wireOpaque.ToWire(tc.Opaque, tc.Provider)
			case firstCall && !ours:
				// A call another model made (a fallback chain, a switched
				// session model): Gemini 3 rejects a model turn whose first
				// call lacks a signature; this documented value skips the
				// check.
				wp.ThoughtSignature = foreignCallSignature
			}
			firstCall = false
			parts = append(parts, wp)
		case domain.PartToolResult:
			tr := p.ToolResult
			if tr == nil {
				continue
			}
			if role != "user" {
				return "", nil, fmt.Errorf("function response %q in a model message", tr.CallID)
			}
			name := tr.Name
			if name == "" {
				name = callName[tr.CallID]
			}
			if name == "" {
				return "", nil, fmt.Errorf("function response for call %q has no name and matches no earlier call", tr.CallID)
			}
			parts = append(parts, wirePart{FunctionResponse: &wireFunctionResponse{
				ID: wireID(tr.CallID), origID: tr.CallID, Name: name, Response: responseObject(tr)}})
		case domain.PartImage, domain.PartFile:
			if p.File != nil {
				parts = append(parts, encodeFile(p.File))
			}
		default:
			return "", nil, fmt.Errorf("unknown part type %q", p.Type)
		}
	}
	return role, parts, nil
}

// wireID returns the id to send for a call: provider ids go back, the ids
// this package made up do not.
func wireID(id string) string {
	if strings.HasPrefix(id, SyntheticIDPrefix) {
		return ""
	}
	return id
}

// responseObject wraps a tool result as the JSON object Gemini requires:
// {"result": ...} or {"error": ...}, the content embedded as JSON when it
// is a JSON object or array and as a string otherwise.
func responseObject(tr *domain.ToolResult) json.RawMessage {
	key := "result"
	if tr.IsError {
		key = "error"
	}
	var val json.RawMessage
	c := bytes.TrimSpace([]byte(tr.Content))
	if len(c) > 0 && (c[0] == '{' || c[0] == '[') && json.Valid(c) {
		val = c
	} else {
		val, _ = json.Marshal(tr.Content)
	}
	k, _ := json.Marshal(key)
	out := make([]byte, 0, len(val)+len(k)+3)
	out = append(out, '{')
	out = append(out, k...)
	out = append(out, ':')
	out = append(out, val...)
	return append(out, '}')
}

func encodeFile(f *domain.FileRef) wirePart {
	if rest, ok := strings.CutPrefix(f.URI, "data:"); ok {
		if meta, data, ok := strings.Cut(rest, ","); ok && strings.HasSuffix(meta, ";base64") {
			mt := strings.TrimSuffix(meta, ";base64")
			if mt == "" {
				mt = f.MediaType
			}
			return wirePart{InlineData: &wireBlob{MimeType: mt, Data: data}}
		}
	}
	if strings.HasPrefix(f.URI, "https://") || strings.HasPrefix(f.URI, "gs://") {
		return wirePart{FileData: &wireFileData{MimeType: f.MediaType, FileURI: f.URI}}
	}
	ref := f.Name
	if ref == "" {
		ref = f.ArtifactID
	}
	t := fmt.Sprintf("[attached file %s (%s)]", ref, f.MediaType)
	return wirePart{Text: &t}
}
