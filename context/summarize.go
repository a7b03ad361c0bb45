package context

import (
	stdctx "context"
	"errors"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/agents"
)

// SummaryRequest is what a Summarizer condenses.
type SummaryRequest struct {
	// Previous is the text of the earlier summary these messages extend;
	// the new summary replaces it, so it must carry its content forward.
	Previous string
	// Messages are the history messages to condense, oldest first (tool
	// arguments and results already cut by the history codec).
	Messages []agents.Message
	// Transcript is the same content as text, one block per paragraph.
	Transcript string
	// MaxTokens is the size the summary should stay under.
	MaxTokens int
}

// Summarizer condenses the oldest history for OverflowCompact. It must be
// deterministic enough for prompt caching: the Compiler calls it once per
// distinct request and reuses the result.
type Summarizer interface {
	Summarize(ctx stdctx.Context, req SummaryRequest) (string, error)
}

// SummarizerFunc adapts a function to a Summarizer.
type SummarizerFunc func(ctx stdctx.Context, req SummaryRequest) (string, error)

// Summarize calls f.
func (f SummarizerFunc) Summarize(ctx stdctx.Context, req SummaryRequest) (string, error) {
	return f(ctx, req)
}

// DefaultSummaryInstructions is ModelSummarizer's default system prompt.
const DefaultSummaryInstructions = "You condense the beginning of a conversation between a user and a data analysis assistant. " +
	"Keep the user's goals, the datasets, filters and definitions agreed on, the SQL that worked, key numbers found and open questions. " +
	"Drop greetings and failed attempts. Write plain prose, no preamble."

// ModelSummarizer summarizes with a model (typically a small, cheap one).
type ModelSummarizer struct {
	Model agents.Model
	// Instructions is the system prompt (default DefaultSummaryInstructions).
	Instructions string
}

// Summarize asks the model for the summary, with Options.MaxTokens set to
// req.MaxTokens and temperature 0.
func (s *ModelSummarizer) Summarize(ctx stdctx.Context, req SummaryRequest) (string, error) {
	if s.Model == nil {
		return "", errors.New("context: ModelSummarizer.Model is nil")
	}
	sys := s.Instructions
	if sys == "" {
		sys = DefaultSummaryInstructions
	}
	var b strings.Builder
	if req.Previous != "" {
		b.WriteString("Summary so far:\n" + req.Previous + "\n\n")
	}
	b.WriteString("Conversation to add:\n" + req.Transcript)
	zero := 0.0
	resp, err := agents.Generate(ctx, s.Model, &agents.Request{System: sys,
		Messages: []agents.Message{agents.UserMessage(b.String())},
		Options:  agents.Options{Temperature: &zero, MaxTokens: req.MaxTokens, ToolChoice: agents.ToolChoice{Mode: agents.ToolChoiceNone}}})
	if err != nil {
		return "", fmt.Errorf("context: summarize: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", errors.New("context: summarize: the model returned an empty summary")
	}
	return text, nil
}
