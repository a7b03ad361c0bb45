package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// Limits of a ModelDescriber answer and prompt.
const (
	// DefaultDescribeValues is how many sampled values per column the
	// prompt shows when ModelDescriber.MaxValues is 0.
	DefaultDescribeValues = 5
	// MaxTableDescription caps, in characters, the table description
	// kept from the model's answer (a longer one is cut).
	MaxTableDescription = 400
	// MaxFieldDescription caps, in characters, each column description
	// kept from the model's answer (a longer one is cut).
	MaxFieldDescription = 200
	// maxPromptValue caps each sampled value shown in the prompt.
	maxPromptValue = 40
	// maxAnswerExcerpt caps the part of an unusable answer quoted in the
	// error.
	maxAnswerExcerpt = 120
)

// describeSystem is the system prompt of ModelDescriber.
const describeSystem = `You document database tables for business analysts.
Given a table's name, columns (with types and a few sample values) and joins, write what the table holds and what each column means, expanding abbreviations.
Answer with only a JSON object, no prose and no code fence:
{"description": "<one sentence about the table>", "fields": {"<column>": "<one short sentence>"}}
Use the column names exactly as given. Describe only the columns listed as needing a description; leave out a column you cannot tell, rather than guessing. Do not invent columns.`

// ModelDescriber is a kb.Describer that asks Model, in one request per
// dataset, to describe a table and its undescribed columns. The prompt
// holds the table's name, its columns with their types and up to
// MaxValues sampled values each (never for a Sensitive column), existing
// descriptions as context, and its relationships; the answer must be the
// JSON object {"description": "...", "fields": {"column": "..."}}.
//
// The answer is parsed strictly: anything but that object (an optional
// ```json fence aside) is an error naming the table; unknown columns and
// empty strings are dropped, whitespace is collapsed and descriptions are
// cut at MaxTableDescription and MaxFieldDescription characters.
//
// Use it with kb.Propose, which asks only about cryptic datasets, caches
// answers by schema fingerprint and returns proposals for the host to
// review before kb.Apply.
type ModelDescriber struct {
	// Model answers the request; required.
	Model agents.Model
	// MaxValues caps the sampled values shown per column: 0 means
	// DefaultDescribeValues, a negative value shows none.
	MaxValues int
}

var _ kb.Describer = ModelDescriber{}

// Describe asks the model to describe d; see ModelDescriber.
func (m ModelDescriber) Describe(ctx context.Context, d domain.Dataset) (kb.Description, error) {
	if m.Model == nil {
		return kb.Description{}, fmt.Errorf("catalog: describe %q: nil Model", d.Name)
	}
	zero := 0.0
	req := &agents.Request{
		System:   describeSystem,
		Messages: []agents.Message{agents.UserMessage(m.Prompt(d))},
		Options:  agents.Options{Temperature: &zero, ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceNone}},
	}
	resp, err := agents.Generate(ctx, m.Model, req)
	if err != nil {
		return kb.Description{}, fmt.Errorf("catalog: describe %q: %w", d.Name, err)
	}
	desc, err := parseDescription(d, resp.Message.Text())
	if err != nil {
		return kb.Description{}, fmt.Errorf("catalog: describe %q: unusable model answer: %w", d.Name, err)
	}
	return desc, nil
}

// Prompt returns the user message Describe sends for d: compact lines a
// host can log or inspect. Sensitive columns appear with their name and
// type only.
func (m ModelDescriber) Prompt(d domain.Dataset) string {
	maxValues := m.MaxValues
	if maxValues == 0 {
		maxValues = DefaultDescribeValues
	}
	var b strings.Builder
	b.WriteString("table: " + d.Name + "\n")
	if d.Source != "" && d.Source != d.Name {
		b.WriteString("source: " + d.Source + "\n")
	}
	if d.Description != "" {
		b.WriteString("description (keep): " + describeLine(d.Description) + "\n")
	}
	b.WriteString("columns:\n")
	for _, f := range d.Fields {
		b.WriteString("- " + f.Name + " " + f.Type)
		if f.PrimaryKey {
			b.WriteString(" primary key")
		}
		if !f.Sensitive && maxValues > 0 && len(f.Values) > 0 {
			vs := f.Values[:min(len(f.Values), maxValues)]
			quoted := make([]string, len(vs))
			for i, v := range vs {
				quoted[i] = describeQuote(cutRunes(describeLine(v), maxPromptValue))
			}
			b.WriteString(" values: " + strings.Join(quoted, ", "))
		}
		if f.Description != "" {
			b.WriteString(" | described: " + describeLine(f.Description))
		} else {
			b.WriteString(" | needs a description")
		}
		b.WriteByte('\n')
	}
	if len(d.Relationships) > 0 {
		b.WriteString("joins:\n")
		for _, r := range d.Relationships {
			b.WriteString("- " + r.JoinCondition() + " -> " + r.To)
			if r.Cardinality != "" {
				b.WriteString(" (" + r.Cardinality + ")")
			}
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// describeAnswer is the JSON object the model must answer with.
type describeAnswer struct {
	Description string            `json:"description"`
	Fields      map[string]string `json:"fields"`
}

// parseDescription reads the model's answer for d strictly.
func parseDescription(d domain.Dataset, text string) (kb.Description, error) {
	body := strings.TrimSpace(text)
	if rest, ok := strings.CutPrefix(body, "```"); ok {
		rest = strings.TrimPrefix(rest, "json")
		if inner, ok := strings.CutSuffix(strings.TrimSpace(rest), "```"); ok {
			body = strings.TrimSpace(inner)
		}
	}
	if body == "" {
		return kb.Description{}, errors.New("empty answer")
	}
	if !strings.HasPrefix(body, "{") {
		return kb.Description{}, fmt.Errorf("want a JSON object (answer %s)", describeQuote(cutRunes(body, maxAnswerExcerpt)))
	}
	dec := json.NewDecoder(strings.NewReader(body))
	dec.DisallowUnknownFields()
	var a describeAnswer
	if err := dec.Decode(&a); err != nil {
		return kb.Description{}, fmt.Errorf("want a JSON object {\"description\", \"fields\"}: %w (answer %s)", err, describeQuote(cutRunes(body, maxAnswerExcerpt)))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return kb.Description{}, fmt.Errorf("text after the JSON object (answer %s)", describeQuote(cutRunes(body, maxAnswerExcerpt)))
	}
	out := kb.Description{Dataset: d.Name, Text: cutRunes(describeLine(a.Description), MaxTableDescription)}
	for _, f := range d.Fields {
		if t := cutRunes(describeLine(a.Fields[f.Name]), MaxFieldDescription); t != "" {
			if out.Fields == nil {
				out.Fields = make(map[string]string)
			}
			out.Fields[f.Name] = t
		}
	}
	if out.Text == "" && len(out.Fields) == 0 {
		return kb.Description{}, fmt.Errorf("no description of the table or of any of its columns (answer %s)", describeQuote(cutRunes(body, maxAnswerExcerpt)))
	}
	return out, nil
}

// describeLine collapses runs of white space, newlines included, to one space.
func describeLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cutRunes returns s cut to at most n characters, marking a cut with "…".
func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n-1])) + "…"
}

// describeQuote quotes s as a JSON string.
func describeQuote(s string) string {
	b, err := json.Marshal(s)
	if err != nil {
		return fmt.Sprintf("%q", s)
	}
	return string(b)
}
