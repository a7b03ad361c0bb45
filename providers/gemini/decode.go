package gemini

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/bichat-go/bichat/internal/llmhttp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/opaque"
)

// wireOpaque converts the base64 strings the API sends as opaque reasoning
// state to the bytes kept in domain values and back.
var wireOpaque = opaque.For(providerName)

// decoder turns GenerateContentResponse chunks into agents chunks. It is
// not safe for concurrent use.
type decoder struct {
	// calls counts function calls so far: their stream index and the
	// ordinal in synthesized ids.
	calls int
	// reasoning numbers reasoning blocks; inThought is true while
	// consecutive thought parts extend the current one.
	reasoning int
	inThought bool
	usage     wireUsage
	hasUsage  bool
	finish    string
	finishMsg string
	// nonce makes synthesized call ids unique when the response has no
	// responseId.
	nonce string
	// seen holds the metadata objects already reported.
	seen    map[string]bool
	resp    wireResponse
	scratch scratch
}

// Error types of the *llmhttp.APIError values this package returns for
// answers that came with HTTP 200 but are unusable.
const (
	// ErrTypeBlocked: the prompt was blocked (promptFeedback.blockReason,
	// in Code). Not retryable.
	ErrTypeBlocked = "prompt_blocked"
	// ErrTypeFinish: the response ended for a reason that produced no
	// usable answer (finishReason in Code: MALFORMED_FUNCTION_CALL or
	// UNEXPECTED_TOOL_CALL). Retryable: it is a sampling accident.
	ErrTypeFinish = "finish_reason"
)

// malformedError reports a chunk that is not a GenerateContentResponse.
type malformedError struct{ err error }

func (e *malformedError) Error() string { return "gemini: malformed stream chunk: " + e.err.Error() }
func (e *malformedError) Unwrap() error { return agents.ErrMalformedStream }

// statusError turns a google.rpc.Status received inside a 200 stream into
// an *llmhttp.APIError (StatusCode 0).
func statusError(st *wireStatus) *llmhttp.APIError {
	e := &llmhttp.APIError{Provider: providerName, Type: st.Status, Message: llmhttp.Redact(st.Message)}
	if st.Code != 0 {
		e.Code = strconv.Itoa(st.Code)
	}
	e.Transient = transientStatus(st.Status) || llmhttp.RetryableStatus(st.Code)
	e.RetryAfter = retryDelay(st)
	return e
}

func transientStatus(s string) bool {
	switch s {
	case "RESOURCE_EXHAUSTED", "UNAVAILABLE", "INTERNAL", "DEADLINE_EXCEEDED", "ABORTED":
		return true
	}
	return false
}

// retryDelay reads the RetryInfo detail ("21s").
func retryDelay(st *wireStatus) time.Duration {
	for _, d := range st.Details {
		if strings.HasSuffix(d.Type, "google.rpc.RetryInfo") && d.RetryDelay != "" {
			if v, err := time.ParseDuration(d.RetryDelay); err == nil && v > 0 {
				return v
			}
		}
	}
	return 0
}

// parseError reads a Gemini error body ({"error":{"code","message",
// "status","details"}}) into e (llmhttp.Client.ParseError), taking the
// retry delay from a RetryInfo detail.
func parseError(e *llmhttp.APIError, body []byte) {
	var b wireErrorBody
	if json.Unmarshal(body, &b) != nil || b.Error == nil {
		return
	}
	e.Type = b.Error.Status
	if b.Error.Message != "" {
		e.Message = b.Error.Message
	}
	if d := retryDelay(b.Error); d > 0 && e.RetryAfter == 0 {
		e.RetryAfter = d
	}
	switch e.Type {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "PERMISSION_DENIED", "NOT_FOUND", "UNAUTHENTICATED":
		e.Transient = false
	}
}

// decode folds one response chunk into the state and appends chunks to out.
func (d *decoder) decode(data []byte, out []agents.Chunk) ([]agents.Chunk, error) {
	r := &d.resp
	*r = wireResponse{}
	if !scanResponse(data, r, &d.scratch) {
		*r = wireResponse{}
		if err := json.Unmarshal(data, r); err != nil {
			return out, &malformedError{err}
		}
	}
	if r.Error != nil {
		return out, statusError(r.Error)
	}
	if r.UsageMetadata != nil {
		d.usage, d.hasUsage = *r.UsageMetadata, true
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			pf := r.PromptFeedback
			msg := "the prompt was blocked (" + pf.BlockReason + ")"
			if pf.BlockReasonMessage != "" {
				msg += ": " + llmhttp.Redact(pf.BlockReasonMessage)
			}
			return out, &llmhttp.APIError{Provider: providerName, Type: ErrTypeBlocked, Code: pf.BlockReason, Message: msg}
		}
		return out, nil
	}
	c := &r.Candidates[0]
	if c.Content != nil {
		var raws []json.RawMessage
		for i := range c.Content.Parts {
			p := &c.Content.Parts[i]
			if p.Text != nil || p.Thought || p.FunctionCall != nil || (p.ThoughtSignature != "" && !p.carried()) {
				out = d.part(p, r.ResponseID, out)
				continue
			}
			// Parts carried as provider items, with their JSON verbatim.
			if raws == nil {
				raws = rawParts(data)
			}
			var raw json.RawMessage
			if i < len(raws) {
				raw = raws[i]
			}
			d.inThought = false
			if it := carriedPart(p, raw); it != nil {
				out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: it})
			}
		}
	}
	out = d.metadata(r, c, out)
	if c.FinishReason != "" {
		d.finish, d.finishMsg = c.FinishReason, c.FinishMessage
	}
	return out, nil
}

func (d *decoder) part(p *wirePart, responseID string, out []agents.Chunk) []agents.Chunk {
	switch {
	case p.FunctionCall != nil:
		d.inThought = false
		fc := p.FunctionCall
		id := fc.ID
		if id == "" {
			id = d.syntheticID(responseID)
		}
		args := string(fc.Args)
		if args == "null" {
			args = ""
		}
		delta := agents.ToolCallDelta{Index: d.calls, ID: id, Name: fc.Name, Arguments: args, Provider: providerName}
		if p.ThoughtSignature != "" {
			delta.Opaque, delta.Provider = wireOpaque.FromWire(p.ThoughtSignature)
		}
		d.calls++
		out = append(out, agents.Chunk{Type: agents.ChunkToolCall, ToolCall: delta})
	case p.Thought:
		if !d.inThought {
			d.reasoning++
			d.inThought = true
		}
		c := agents.Chunk{Type: agents.ChunkReasoning, Index: d.reasoning, Provider: providerName}
		if p.Text != nil {
			c.Text = *p.Text
		}
		if p.ThoughtSignature != "" {
			c.Opaque, c.Provider = wireOpaque.FromWire(p.ThoughtSignature)
		}
		out = append(out, c)
	case p.Text == nil && p.ThoughtSignature != "":
		// A part with only a thought signature: a signature-only
		// reasoning block, as after a text part.
		d.inThought = false
		d.reasoning++
		state, prov := wireOpaque.FromWire(p.ThoughtSignature)
		out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: d.reasoning, Provider: prov, Opaque: state})
	case p.Text != nil:
		d.inThought = false
		if *p.Text != "" {
			out = append(out, agents.Chunk{Type: agents.ChunkText, Text: *p.Text})
		}
		if p.ThoughtSignature != "" {
			// A signature on a text part: kept as a signature-only
			// reasoning block right after the text.
			d.reasoning++
			state, prov := wireOpaque.FromWire(p.ThoughtSignature)
			out = append(out, agents.Chunk{Type: agents.ChunkReasoning, Index: d.reasoning,
				Provider: prov, Opaque: state})
		}
	}
	return out
}

// carriedPart returns the provider item for a part that is not text, a
// thought or a function call: executed code and its result, inline data
// (decoded), a file reference, or a kind this package does not know
// (unsupported). An empty part ({}) gives nil.
func carriedPart(p *wirePart, raw json.RawMessage) *agents.ProviderItem {
	it := &agents.ProviderItem{Provider: providerName, Raw: bytes.Clone(raw)}
	switch {
	case p.ExecutableCode != nil:
		it.Kind, it.Type, it.Text, it.Language = agents.ItemCode, "executableCode", p.ExecutableCode.Code, p.ExecutableCode.Language
	case p.CodeExecutionResult != nil:
		it.Kind, it.Type = agents.ItemCodeResult, "codeExecutionResult"
		it.Text, it.Outcome = p.CodeExecutionResult.Output, p.CodeExecutionResult.Outcome
	case p.InlineData != nil:
		it.Kind, it.Type, it.MediaType = agents.ItemMedia, "inlineData", p.InlineData.MimeType
		if b, err := base64.StdEncoding.DecodeString(p.InlineData.Data); err == nil {
			it.Data = b
		}
	case p.FileData != nil:
		it.Kind, it.Type, it.MediaType, it.URI = agents.ItemMedia, "fileData", p.FileData.MimeType, p.FileData.FileURI
	case emptyObject(raw):
		return nil
	default: // functionResponse (never sent by a model) and newer kinds
		it.Kind, it.Type = agents.ItemUnsupported, "part"
	}
	return it
}

// metadata appends the items for a chunk's citation, grounding, URL
// context and safety metadata. A streamed answer repeats the same
// metadata object in several chunks: each distinct one is reported once.
func (d *decoder) metadata(r *wireResponse, c *wireCandidate, out []agents.Chunk) []agents.Chunk {
	if len(c.CitationMetadata) == 0 && len(c.GroundingMetadata) == 0 && len(c.URLContextMetadata) == 0 &&
		len(c.SafetyRatings) == 0 && r.PromptFeedback == nil {
		return out // the common case: a chunk of parts only
	}
	if d.seen == nil && (len(c.CitationMetadata) > 0 || len(c.GroundingMetadata) > 0 || len(c.URLContextMetadata) > 0) {
		d.seen = map[string]bool{}
	}
	fresh := func(kind string, raw json.RawMessage) bool {
		if len(raw) == 0 || string(raw) == "null" || d.seen[kind+string(raw)] {
			return false
		}
		d.seen[kind+string(raw)] = true
		return true
	}
	if fresh("citation", c.CitationMetadata) {
		var cm struct {
			Citations       []json.RawMessage `json:"citations"`
			CitationSources []json.RawMessage `json:"citationSources"`
		}
		if json.Unmarshal(c.CitationMetadata, &cm) != nil {
			out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
				Kind: agents.ItemUnsupported, Type: "citationMetadata", Raw: bytes.Clone(c.CitationMetadata)}})
		}
		for _, raw := range append(cm.Citations, cm.CitationSources...) {
			var ct wireCitation
			_ = json.Unmarshal(raw, &ct) // unreadable: carried raw
			src := "document"
			if ct.URI != "" {
				src = "web"
			}
			out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
				Kind: agents.ItemCitation, Type: "citationMetadata",
				Citation: &domain.Citation{Source: src, Title: ct.Title, URL: ct.URI}, Raw: bytes.Clone(raw)}})
		}
	}
	if fresh("grounding", c.GroundingMetadata) {
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
			Kind: agents.ItemGrounding, Type: "groundingMetadata", Raw: bytes.Clone(c.GroundingMetadata)}})
		var gm struct {
			GroundingChunks []json.RawMessage `json:"groundingChunks"`
		}
		_ = json.Unmarshal(c.GroundingMetadata, &gm) // unreadable: carried raw above
		for _, raw := range gm.GroundingChunks {
			var gc map[string]struct {
				URI   string `json:"uri"`
				Title string `json:"title"`
				Text  string `json:"text"`
			}
			_ = json.Unmarshal(raw, &gc) // unreadable: no citation to map
			for kind, src := range gc {  // one of web, maps, retrievedContext
				out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
					Kind: agents.ItemCitation, Type: "groundingChunk", Text: src.Text,
					Citation: &domain.Citation{Source: kind, Title: src.Title, URL: src.URI, Snippet: src.Text}, Raw: bytes.Clone(raw)}})
			}
		}
	}
	if fresh("urlcontext", c.URLContextMetadata) {
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
			Kind: agents.ItemGrounding, Type: "urlContextMetadata", Raw: bytes.Clone(c.URLContextMetadata)}})
	}
	if it := safetyItem("safetyRatings", c.SafetyRatings, ""); it != nil {
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: it})
	}
	if pf := r.PromptFeedback; pf != nil {
		if it := safetyItem("promptFeedback", pf.SafetyRatings, pf.BlockReason); it != nil {
			out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: it})
		}
	}
	return out
}

// safetyItem reports ratings that blocked content (and a block reason),
// or nil when nothing was blocked.
func safetyItem(typ string, ratings []wireSafetyRating, blockReason string) *agents.ProviderItem {
	var blocked []string
	for _, r := range ratings {
		if r.Blocked {
			blocked = append(blocked, r.Category+" ("+r.Probability+")")
		}
	}
	if len(blocked) == 0 && blockReason == "" {
		return nil
	}
	text := ""
	if blockReason != "" {
		text = "blocked: " + blockReason
	}
	if len(blocked) > 0 {
		text = strings.TrimPrefix(text+"; ", "; ") + "blocked by safety rating: " + strings.Join(blocked, ", ")
	}
	raw, _ := json.Marshal(ratings)
	return &agents.ProviderItem{Provider: providerName, Kind: agents.ItemSafety, Type: typ, Text: text, Raw: raw}
}

// wireCitation is one citationMetadata source.
type wireCitation struct {
	StartIndex      int             `json:"startIndex,omitempty"`
	EndIndex        int             `json:"endIndex,omitempty"`
	URI             string          `json:"uri,omitempty"`
	Title           string          `json:"title,omitempty"`
	License         string          `json:"license,omitempty"`
	PublicationDate json.RawMessage `json:"publicationDate,omitempty"`
}

// rawParts returns the raw parts of the first candidate of data.
func rawParts(data []byte) []json.RawMessage {
	var r struct {
		Candidates []struct {
			Content struct {
				Parts []json.RawMessage `json:"parts"`
			} `json:"content"`
		} `json:"candidates"`
	}
	if json.Unmarshal(data, &r) != nil || len(r.Candidates) == 0 {
		return []json.RawMessage{}
	}
	return r.Candidates[0].Content.Parts
}

// emptyObject reports whether raw is {} (whitespace allowed).
func emptyObject(raw json.RawMessage) bool {
	var m map[string]json.RawMessage
	return json.Unmarshal(raw, &m) == nil && len(m) == 0
}

// syntheticID makes a stable id for the n-th call of a response.
func (d *decoder) syntheticID(responseID string) string {
	if responseID == "" {
		if d.nonce == "" {
			var b [6]byte
			_, _ = rand.Read(b[:])
			d.nonce = hex.EncodeToString(b[:])
		}
		responseID = d.nonce
	}
	// Keep to [a-zA-Z0-9_-], the id alphabet every provider accepts (the
	// conversation may move to another provider in a fallback chain).
	safe := []byte(responseID)
	for i, c := range safe {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			safe[i] = '_'
		}
	}
	return SyntheticIDPrefix + string(safe) + "-" + strconv.Itoa(d.calls)
}

// end is called at the clean end of the stream (Gemini has no
// terminator): it reports truncation or blocked answers, or appends the
// final usage and stop reason.
func (d *decoder) end(out []agents.Chunk) ([]agents.Chunk, error) {
	if d.finish == "" {
		// Gemini has no end marker: a stream that ends before any
		// finishReason was cut.
		return out, &llmhttp.ConnError{Provider: providerName, Op: "read response",
			Err: fmt.Errorf("%w: no candidate carried a finishReason (%w)", llmhttp.ErrIncomplete, io.ErrUnexpectedEOF)}
	}
	if d.finishMsg != "" && d.finish != "MALFORMED_FUNCTION_CALL" && d.finish != "UNEXPECTED_TOOL_CALL" {
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: &agents.ProviderItem{Provider: providerName,
			Kind: agents.ItemNotice, Type: "finishMessage", Text: llmhttp.Redact(d.finishMsg)}})
	}
	var stop agents.StopReason
	switch d.finish {
	case "STOP", "FINISH_REASON_UNSPECIFIED":
		stop = agents.StopEndTurn
		if d.calls > 0 {
			stop = agents.StopToolUse
		}
	case "MAX_TOKENS":
		stop = agents.StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		stop = agents.StopContentFilter
	case "MALFORMED_FUNCTION_CALL", "UNEXPECTED_TOOL_CALL":
		msg := "the response ended with " + d.finish
		if d.finishMsg != "" {
			msg += ": " + llmhttp.Redact(d.finishMsg)
		}
		return out, &llmhttp.APIError{Provider: providerName, Type: ErrTypeFinish, Code: d.finish, Message: msg, Transient: true}
	default: // TOO_MANY_TOOL_CALLS, OTHER, and newer reasons
		stop = agents.StopOther
	}
	return append(out, agents.Chunk{Type: agents.ChunkUsage, Usage: d.Usage()},
		agents.Chunk{Type: agents.ChunkStop, Stop: stop}), nil
}

// Usage maps the last usageMetadata to domain terms: the prompt includes
// cached and tool-use prompt tokens, the completion includes thoughts.
func (d *decoder) Usage() domain.Usage {
	if !d.hasUsage {
		return domain.Usage{}
	}
	u := &d.usage
	prompt := u.PromptTokenCount + u.ToolUsePromptTokenCount
	completion := u.CandidatesTokenCount + u.ThoughtsTokenCount
	total := u.TotalTokenCount
	if total == 0 {
		total = prompt + completion
	}
	return domain.Usage{PromptTokens: prompt, CompletionTokens: completion, CachedTokens: u.CachedContentTokenCount,
		ReasoningTokens: u.ThoughtsTokenCount, TotalTokens: total}
}
