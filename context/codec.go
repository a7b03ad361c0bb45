package context

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/canonjson"
	"github.com/bichat-go/bichat/internal/textutil"
	"github.com/bichat-go/bichat/tools"
)

// Codec validates, canonicalizes and renders one payload type. Implement it
// to add block types of your own and register it in a Codecs value.
type Codec interface {
	// ID names the codec ("recipe"); it is part of every block hash.
	ID() string
	// Version changes when canonicalization or rendering changes, so old
	// hashes (and cached token counts) are not reused.
	Version() int
	// Canonicalize validates payload (a value or pointer of the codec's
	// payload type) and returns the normalized value to store: its
	// canonical JSON is hashed, and Render and renderers read it.
	Canonicalize(payload any) (any, error)
	// Render returns the text the model reads for a canonical payload.
	Render(payload any) (string, error)
}

// Redactor is implemented by codecs that know how to redact their payload
// while keeping its structure (e.g. a message keeps its role and tool-call
// ids). Codecs without it are replaced by a "redacted" block.
type Redactor interface {
	Redact(payload any) (any, error)
}

// Built-in codec ids.
const (
	CodecRules       = "rules"
	CodecToolSchema  = "tool_schema"
	CodecDataset     = "dataset"
	CodecJoinHint    = "join_hint"
	CodecQueryResult = "query_result"
	CodecKBHit       = "kb_hit"
	CodecRecipe      = "recipe"
	CodecState       = "state"
	CodecMessage     = "message"
	CodecStep        = "step"
	CodecSummary     = "summary"
	CodecTurn        = "turn"
	CodecText        = "text"
	CodecRedacted    = "redacted"
)

// Codecs is a registry of codecs by id. NewCodecs returns one holding the
// built-ins; there is no global registry. Register codecs before sharing the
// value; lookups are safe for concurrent use.
type Codecs struct {
	mu sync.RWMutex
	m  map[string]Codec
}

// NewCodecs returns a registry with the built-in codecs, each replaced by
// the codec in overrides with the same id (e.g. a MessageCodec with other
// caps), plus any further codecs in overrides.
func NewCodecs(overrides ...Codec) *Codecs {
	c := &Codecs{m: map[string]Codec{}}
	for _, d := range DefaultCodecs() {
		c.m[d.ID()] = d
	}
	for _, o := range overrides {
		if o != nil {
			c.m[o.ID()] = o
		}
	}
	return c
}

// DefaultCodecs returns new instances of the built-in codecs.
func DefaultCodecs() []Codec {
	return []Codec{
		NewCodec(CodecRules, 1, canonRules, func(r Rules) (string, error) { return r.Text, nil }),
		NewCodec(CodecToolSchema, 1, canonToolSchema, renderToolSchema),
		NewCodec(CodecDataset, 1, canonDataset, func(d domain.Dataset) (string, error) { return d.YAML(), nil }),
		NewCodec(CodecJoinHint, 1, canonJoinHint, renderJoinHint),
		&QueryResultCodec{MaxRows: DefaultMaxResultRows, MaxChars: DefaultMaxResultChars},
		NewCodec(CodecKBHit, 1, canonKBHit, renderKBHit),
		NewCodec(CodecRecipe, 1, canonRecipe, renderRecipe),
		NewCodec(CodecState, 1, canonState, renderState),
		&MessageCodec{Name: CodecMessage, MaxToolArgs: DefaultMaxToolArgs, MaxToolResult: DefaultMaxToolResult},
		&MessageCodec{Name: CodecStep},
		NewCodec(CodecSummary, 1, canonSummary, renderSummary),
		turnCodec{},
		NewCodec(CodecText, 1, canonText, renderText),
		NewCodec(CodecRedacted, 1, func(r Redacted) (Redacted, error) { return r, nil }, renderRedacted),
	}
}

// ErrCodecExists is returned by Register for an id already registered.
var ErrCodecExists = errors.New("context: codec already registered")

// Register adds codec; it fails when its id is taken or empty.
func (c *Codecs) Register(codec Codec) error {
	if codec == nil || codec.ID() == "" {
		return errors.New("context: Register: codec without id")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[codec.ID()]; ok {
		return fmt.Errorf("%w: %s", ErrCodecExists, codec.ID())
	}
	c.m[codec.ID()] = codec
	return nil
}

// Lookup returns the codec registered as id.
func (c *Codecs) Lookup(id string) (Codec, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	codec, ok := c.m[id]
	return codec, ok
}

// IDs returns the registered ids, sorted.
func (c *Codecs) IDs() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return slices.Sorted(maps.Keys(c.m))
}

// NewBlock makes a block with the codec registered as codecID.
func (c *Codecs) NewBlock(kind Kind, codecID string, payload any, opts ...BlockOption) (Block, error) {
	codec, ok := c.Lookup(codecID)
	if !ok {
		return Block{}, fmt.Errorf("%w: no codec %q is registered", ErrInvalidBlock, codecID)
	}
	return NewBlock(codec, kind, payload, opts...)
}

// NewCodec returns a Codec for payload type T from two functions:
// canonicalize validates and normalizes a payload, render turns it into
// text. The codec accepts T and *T.
func NewCodec[T any](id string, version int, canonicalize func(T) (T, error), render func(T) (string, error)) Codec {
	return &funcCodec[T]{id: id, version: version, canon: canonicalize, render: render}
}

type funcCodec[T any] struct {
	id      string
	version int
	canon   func(T) (T, error)
	render  func(T) (string, error)
}

func (c *funcCodec[T]) ID() string   { return c.id }
func (c *funcCodec[T]) Version() int { return c.version }

func (c *funcCodec[T]) Canonicalize(p any) (any, error) {
	v, err := payloadAs[T](p)
	if err != nil {
		return nil, err
	}
	return c.canon(v)
}

func (c *funcCodec[T]) Render(p any) (string, error) {
	v, err := payloadAs[T](p)
	if err != nil {
		return "", err
	}
	return c.render(v)
}

func payloadAs[T any](p any) (T, error) {
	switch v := p.(type) {
	case T:
		return v, nil
	case *T:
		if v != nil {
			return *v, nil
		}
	}
	var zero T
	return zero, fmt.Errorf("payload is %T, want %T", p, zero)
}

func required(field, v string) error {
	if strings.TrimSpace(v) == "" {
		return fmt.Errorf("%s is empty", field)
	}
	return nil
}

func canonRules(r Rules) (Rules, error) {
	r.Text = strings.TrimSpace(r.Text)
	return r, required("rules text", r.Text)
}

func canonToolSchema(s ToolSchema) (ToolSchema, error) {
	if err := required("tool name", s.Name); err != nil {
		return s, err
	}
	if len(s.Schema) == 0 {
		s.Schema = json.RawMessage(`{"type":"object"}`)
	}
	c, err := canonjson.Canonicalize(s.Schema)
	if err != nil {
		return s, fmt.Errorf("tool %s schema: %w", s.Name, err)
	}
	s.Schema = c
	return s, nil
}

func renderToolSchema(s ToolSchema) (string, error) {
	return s.Name + "\n" + s.Description + "\n" + string(s.Schema), nil
}

func canonDataset(d domain.Dataset) (domain.Dataset, error) { return d, d.Validate() }

func canonJoinHint(r domain.Relationship) (domain.Relationship, error) {
	if err := required("join hint from", r.From); err != nil {
		return r, err
	}
	if err := required("join hint to", r.To); err != nil {
		return r, err
	}
	if len(r.FromColumns) == 0 || len(r.FromColumns) != len(r.ToColumns) {
		return r, fmt.Errorf("join hint %s→%s needs the same non-zero number of columns on both sides", r.From, r.To)
	}
	return r, nil
}

func renderJoinHint(r domain.Relationship) (string, error) {
	s := "Join hint: " + r.JoinCondition()
	if r.Description != "" {
		s += " (" + r.Description + ")"
	}
	return s, nil
}

func canonKBHit(h KBHit) (KBHit, error) {
	if strings.TrimSpace(h.Title) == "" && strings.TrimSpace(h.Snippet) == "" {
		return h, errors.New("knowledge-base hit has neither title nor snippet")
	}
	return h, nil
}

func renderKBHit(h KBHit) (string, error) {
	var b strings.Builder
	b.WriteString("Knowledge base: ")
	b.WriteString(h.Title)
	if h.Score != 0 {
		b.WriteString(" (score ")
		b.WriteString(strconv.FormatFloat(h.Score, 'f', 2, 64))
		b.WriteString(")")
	}
	if h.Snippet != "" {
		b.WriteString("\n")
		b.WriteString(strings.TrimSpace(h.Snippet))
	}
	c := h.Citation
	var src []string
	for _, s := range []string{c.Source, c.DocumentID, c.URL} {
		if s != "" {
			src = append(src, s)
		}
	}
	if len(src) > 0 {
		b.WriteString("\nSource: ")
		b.WriteString(strings.Join(src, " "))
	}
	return b.String(), nil
}

func canonRecipe(r Recipe) (Recipe, error) {
	if err := required("recipe question", r.Question); err != nil {
		return r, err
	}
	if len(r.SQL) == 0 {
		return r, errors.New("recipe has no SQL")
	}
	r.SQL = slices.Clone(r.SQL)
	for i, s := range r.SQL {
		r.SQL[i] = strings.TrimSpace(s)
		if r.SQL[i] == "" {
			return r, errors.New("recipe has an empty SQL statement")
		}
	}
	r.Datasets = slices.Sorted(slices.Values(r.Datasets))
	return r, nil
}

func renderRecipe(r Recipe) (string, error) {
	var b strings.Builder
	b.WriteString("Recipe")
	switch {
	case r.Verified && r.Successes > 0:
		fmt.Fprintf(&b, " (verified query, worked %d times)", r.Successes)
	case r.Verified:
		b.WriteString(" (verified query)")
	case r.Successes > 0:
		fmt.Fprintf(&b, " (worked %d times)", r.Successes)
	}
	b.WriteString(": ")
	b.WriteString(r.Question)
	if len(r.Datasets) > 0 {
		b.WriteString("\nDatasets: " + strings.Join(r.Datasets, ", "))
	}
	b.WriteString("\n```sql\n")
	for _, s := range r.SQL {
		b.WriteString(strings.TrimSuffix(s, ";"))
		b.WriteString(";\n")
	}
	b.WriteString("```")
	return b.String(), nil
}

func canonState(s State) (State, error) {
	if s.Page == "" && s.Dataset == "" && len(s.Visible) == 0 && len(s.Facts) == 0 {
		return s, errors.New("state snapshot is empty")
	}
	return s, nil
}

func renderState(s State) (string, error) {
	var b strings.Builder
	b.WriteString("Current situation in the application:")
	if s.Page != "" {
		b.WriteString("\n- page: " + s.Page)
	}
	if s.Dataset != "" {
		b.WriteString("\n- selected dataset: " + s.Dataset)
	}
	if len(s.Visible) > 0 {
		b.WriteString("\n- visible: " + strings.Join(s.Visible, "; "))
	}
	for _, k := range slices.Sorted(maps.Keys(s.Facts)) {
		b.WriteString("\n- " + k + ": " + s.Facts[k])
	}
	return b.String(), nil
}

func canonSummary(s Summary) (Summary, error) {
	s.Text = strings.TrimSpace(s.Text)
	return s, required("summary text", s.Text)
}

func renderSummary(s Summary) (string, error) {
	return fmt.Sprintf("Summary of the earlier conversation (%d messages):\n%s", s.Messages, s.Text), nil
}

func canonText(t Text) (Text, error) {
	t.Body = strings.TrimSpace(t.Body)
	return t, required("text body", t.Body)
}

func renderText(t Text) (string, error) {
	if t.Title == "" {
		return t.Body, nil
	}
	return t.Title + ":\n" + t.Body, nil
}

func renderRedacted(r Redacted) (string, error) {
	return fmt.Sprintf("[%s content redacted: above the allowed sensitivity]", r.Kind), nil
}

// Default caps of the built-in codecs.
const (
	DefaultMaxResultRows  = 50
	DefaultMaxResultChars = 8000
	DefaultMaxToolArgs    = 2000
	DefaultMaxToolResult  = 4000
)

// QueryResultCodec renders query results as markdown tables: at most
// MaxRows rows and about MaxChars characters, with an explicit note of what
// was left out, the row count and the timing. Register a configured one
// with NewCodecs(&QueryResultCodec{...}) to change the caps.
type QueryResultCodec struct {
	// MaxRows caps the rows kept (0: DefaultMaxResultRows).
	MaxRows int
	// MaxChars caps the rendered table (0: DefaultMaxResultChars).
	MaxChars int
}

// ID returns "query_result".
func (c *QueryResultCodec) ID() string { return CodecQueryResult }

// Version returns the codec version.
func (c *QueryResultCodec) Version() int { return 1 }

// Canonicalize checks the shape, stores cells as text and cuts the rows
// to MaxRows.
func (c *QueryResultCodec) Canonicalize(p any) (any, error) {
	q, err := payloadAs[QueryResult](p)
	if err != nil {
		return nil, err
	}
	if len(q.Columns) == 0 {
		return nil, errors.New("query result has no columns")
	}
	maxRows := c.MaxRows
	if maxRows <= 0 {
		maxRows = DefaultMaxResultRows
	}
	if q.TotalRows < len(q.Rows) {
		q.TotalRows = len(q.Rows)
	}
	keep := min(len(q.Rows), maxRows)
	rows := make([][]any, keep)
	for i := range keep {
		if len(q.Rows[i]) != len(q.Columns) {
			return nil, fmt.Errorf("query result row %d has %d cells for %d columns", i, len(q.Rows[i]), len(q.Columns))
		}
		row := make([]any, len(q.Rows[i]))
		for j, v := range q.Rows[i] {
			row[j] = tools.FormatCell(v)
		}
		rows[i] = row
	}
	q.Rows = rows
	q.Columns = slices.Clone(q.Columns)
	q.Duration = q.Duration.Round(time.Millisecond)
	return q, nil
}

// Render writes the markdown table.
func (c *QueryResultCodec) Render(p any) (string, error) {
	q, err := payloadAs[QueryResult](p)
	if err != nil {
		return "", err
	}
	maxChars := c.MaxChars
	if maxChars <= 0 {
		maxChars = DefaultMaxResultChars
	}
	var b strings.Builder
	b.WriteString("Query result")
	if q.Name != "" {
		b.WriteString(" " + q.Name)
	}
	fmt.Fprintf(&b, ": %d rows", q.TotalRows)
	if q.Truncated {
		b.WriteString(" (more in the source)")
	}
	if q.Duration > 0 {
		fmt.Fprintf(&b, ", %d ms", q.Duration.Milliseconds())
	}
	if q.SQL != "" {
		b.WriteString("\nSQL: " + strings.TrimSpace(q.SQL))
	}
	b.WriteString("\n|")
	for _, col := range q.Columns {
		b.WriteString(" " + mdCell(col.Name) + " |")
	}
	b.WriteString("\n|")
	for range q.Columns {
		b.WriteString("---|")
	}
	shown := 0
	for _, row := range q.Rows {
		var rb strings.Builder
		rb.WriteString("\n|")
		for _, v := range row {
			s, _ := v.(string)
			rb.WriteString(" " + mdCell(s) + " |")
		}
		if b.Len()+rb.Len() > maxChars && shown > 0 {
			break
		}
		b.WriteString(rb.String())
		shown++
	}
	if shown < q.TotalRows {
		fmt.Fprintf(&b, "\n[showing %d of %d rows; %d rows omitted]", shown, q.TotalRows, q.TotalRows-shown)
	}
	return b.String(), nil
}

func mdCell(s string) string {
	s, _ = textutil.TruncateRunes(s, 200)
	return strings.NewReplacer("|", `\|`, "\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}

// MessageCodec handles conversation messages. In history (id "message")
// each tool call's arguments and each tool result are cut to MaxToolArgs
// and MaxToolResult bytes; this run's steps (id "step") are kept whole.
// Tool-call arguments are stored in canonical JSON (invalid JSON is wrapped
// as {"_invalid_json": text}).
type MessageCodec struct {
	// Name is the codec id (CodecMessage or CodecStep, or your own).
	Name string
	// MaxToolArgs and MaxToolResult cap each tool call's arguments and
	// each tool result in bytes; 0 keeps them whole.
	MaxToolArgs   int
	MaxToolResult int
}

// ID returns Name.
func (c *MessageCodec) ID() string { return c.Name }

// Version returns the codec version. The caps need no version: they act
// in Canonicalize, so a message they cut hashes differently anyway.
func (c *MessageCodec) Version() int { return 1 }

// Canonicalize validates the message and applies the caps.
func (c *MessageCodec) Canonicalize(p any) (any, error) {
	m, err := payloadAs[HistoryMessage](p)
	if err != nil {
		return nil, err
	}
	if !m.Role.Valid() {
		return nil, fmt.Errorf("message role %q is not valid", m.Role)
	}
	if len(m.Parts) == 0 {
		return nil, errors.New("message has no parts")
	}
	parts := make([]domain.Part, len(m.Parts))
	for i, part := range m.Parts {
		switch part.Type {
		case domain.PartToolCall:
			if part.ToolCall == nil {
				return nil, fmt.Errorf("part %d is a tool call without call", i)
			}
			tc := *part.ToolCall
			tc.Arguments = canonicalArgs(tc.Arguments, c.MaxToolArgs)
			part.ToolCall = &tc
		case domain.PartToolResult:
			if part.ToolResult == nil {
				return nil, fmt.Errorf("part %d is a tool result without result", i)
			}
			tr := *part.ToolResult
			tr.Content, _ = textutil.Truncate(tr.Content, c.MaxToolResult)
			part.ToolResult = &tr
		case domain.PartReasoning:
			if part.Reasoning == nil {
				return nil, fmt.Errorf("part %d is reasoning without content", i)
			}
		case domain.PartFile, domain.PartImage:
			if part.File == nil {
				return nil, fmt.Errorf("part %d is a file without reference", i)
			}
		case domain.PartText:
		default:
			return nil, fmt.Errorf("part %d has unknown type %q", i, part.Type)
		}
		parts[i] = part
	}
	m.Parts = parts
	return m, nil
}

func canonicalArgs(args json.RawMessage, max int) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage(`{}`)
	}
	c, err := canonjson.Canonicalize(args)
	if err != nil || len(c) == 0 || c[0] != '{' {
		w, _ := canonjson.Marshal(map[string]string{"_invalid_json": string(args)})
		c = w
	}
	if max > 0 && len(c) > max {
		cut, _ := textutil.Truncate(string(c), max)
		w, _ := canonjson.Marshal(map[string]string{"_truncated": cut})
		c = w
	}
	return c
}

// Render writes the message as text: text parts, tool calls as
// name(arguments), tool results as name → content.
func (c *MessageCodec) Render(p any) (string, error) {
	m, err := payloadAs[HistoryMessage](p)
	if err != nil {
		return "", err
	}
	return renderParts(m.Parts), nil
}

// Redact keeps the role, tool-call ids and names, and blanks everything
// else; reasoning is dropped.
func (c *MessageCodec) Redact(p any) (any, error) {
	m, err := payloadAs[HistoryMessage](p)
	if err != nil {
		return nil, err
	}
	m.Parts = redactParts(m.Parts)
	return m, nil
}

const redactedText = "[redacted]"

func redactParts(in []domain.Part) []domain.Part {
	out := make([]domain.Part, 0, len(in))
	for _, part := range in {
		switch part.Type {
		case domain.PartReasoning:
			continue
		case domain.PartToolCall:
			tc := domain.ToolCall{ID: part.ToolCall.ID, Name: part.ToolCall.Name, Arguments: json.RawMessage(`{}`)}
			out = append(out, domain.Part{Type: domain.PartToolCall, ToolCall: &tc})
		case domain.PartToolResult:
			tr := domain.ToolResult{CallID: part.ToolResult.CallID, Name: part.ToolResult.Name, Content: redactedText, IsError: part.ToolResult.IsError}
			out = append(out, domain.Part{Type: domain.PartToolResult, ToolResult: &tr})
		default:
			out = append(out, domain.TextPart(redactedText))
		}
	}
	if len(out) == 0 {
		out = append(out, domain.TextPart(redactedText))
	}
	return out
}

func renderParts(parts []domain.Part) string {
	var b strings.Builder
	for _, part := range parts {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		writePart(&b, part)
	}
	return b.String()
}

// countParts counts each part on its own: on the wire every part is a
// separate field (content, tool call, tool result message).
func countParts(c Counter, parts []domain.Part) int {
	n := 0
	var b strings.Builder
	for _, part := range parts {
		b.Reset()
		writePart(&b, part)
		n += c.Count(b.String())
	}
	return n
}

// countBlock returns the text tokens of a block: message blocks part by
// part, others on their text.
func countBlock(c Counter, b *Block) int {
	switch p := b.Payload.(type) {
	case HistoryMessage:
		return countParts(c, p.Parts)
	case Turn:
		return countParts(c, p.Parts)
	}
	return c.Count(b.Text())
}

func writePart(b *strings.Builder, part domain.Part) {
	{
		switch part.Type {
		case domain.PartText:
			b.WriteString(part.Text)
		case domain.PartReasoning:
			b.WriteString(part.Reasoning.Text)
		case domain.PartToolCall:
			b.WriteString(part.ToolCall.Name)
			b.WriteString("(")
			b.Write(part.ToolCall.Arguments)
			b.WriteString(")")
		case domain.PartToolResult:
			b.WriteString(part.ToolResult.Name)
			if part.ToolResult.IsError {
				b.WriteString(" error")
			}
			b.WriteString(" → ")
			b.WriteString(part.ToolResult.Content)
		case domain.PartFile, domain.PartImage:
			fmt.Fprintf(b, "[%s: %s %s]", part.Type, part.File.Name, part.File.MediaType)
		}
	}
}

type turnCodec struct{}

func (turnCodec) ID() string   { return CodecTurn }
func (turnCodec) Version() int { return 1 }

func (turnCodec) Canonicalize(p any) (any, error) {
	t, err := payloadAs[Turn](p)
	if err != nil {
		return nil, err
	}
	if len(t.Parts) == 0 {
		return nil, errors.New("turn has no parts")
	}
	for i, part := range t.Parts {
		switch part.Type {
		case domain.PartText:
		case domain.PartFile, domain.PartImage:
			if part.File == nil {
				return nil, fmt.Errorf("turn part %d is a file without reference", i)
			}
		default:
			return nil, fmt.Errorf("turn part %d has type %q; a user turn holds text and files", i, part.Type)
		}
	}
	t.Parts = slices.Clone(t.Parts)
	return t, nil
}

func (turnCodec) Render(p any) (string, error) {
	t, err := payloadAs[Turn](p)
	if err != nil {
		return "", err
	}
	return renderParts(t.Parts), nil
}

func (turnCodec) Redact(p any) (any, error) {
	t, err := payloadAs[Turn](p)
	if err != nil {
		return nil, err
	}
	return Turn{Parts: redactParts(t.Parts)}, nil
}
