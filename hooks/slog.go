package hooks

import (
	"context"
	"log/slog"
)

// SlogOptions configure the handler returned by NewSlogHandler.
type SlogOptions struct {
	// Level is the level of ordinary events; 0 value is slog.LevelInfo.
	// Failures (agent.error, tool.error, failed llm.response) are logged at
	// slog.LevelWarn or above regardless.
	Level slog.Level
}

// NewSlogHandler returns a Handler that logs each event as one record: the
// message is the event kind, the attributes are the event's ids and its
// type-specific fields. Tool arguments and results, message text and SQL
// are not logged (they may carry user data); their sizes are.
func NewSlogHandler(l *slog.Logger, opts SlogOptions) Handler {
	if l == nil {
		l = slog.Default()
	}
	return &slogHandler{l: l, level: opts.Level}
}

type slogHandler struct {
	l     *slog.Logger
	level slog.Level
}

func (h *slogHandler) Handle(ctx context.Context, e Event) error {
	level := h.level
	attrs := make([]slog.Attr, 0, 12)
	m := e.Header()
	attrs = appendNonEmpty(attrs, "tenant_id", m.TenantID)
	attrs = appendNonEmpty(attrs, "user_id", m.UserID)
	attrs = appendNonEmpty(attrs, "session_id", m.SessionID)
	attrs = appendNonEmpty(attrs, "message_id", m.MessageID)
	attrs = appendNonEmpty(attrs, "run_id", m.RunID)
	attrs = appendNonEmpty(attrs, "parent_run_id", m.ParentRunID)
	switch ev := e.(type) {
	case *AgentStart:
		attrs = append(attrs, slog.String("model", ev.Model), slog.Bool("resumed", ev.Resumed))
		attrs = appendNonEmpty(attrs, "agent", ev.Agent)
	case *AgentFinish:
		attrs = append(attrs, slog.String("reason", ev.Reason), slog.Int("turns", ev.Turns),
			slog.Int("tool_calls", ev.ToolCalls), slog.Int("total_tokens", ev.Usage.TotalTokens),
			slog.Duration("duration", ev.Duration))
	case *AgentError:
		level = max(level, slog.LevelError)
		attrs = append(attrs, slog.String("code", ev.Code), slog.Duration("duration", ev.Duration))
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
		}
	case *LLMRequest:
		attrs = append(attrs, slog.String("provider", ev.Provider), slog.String("model", ev.Model),
			slog.Int("turn", ev.Turn), slog.Int("attempt", ev.Attempt),
			slog.Int("messages", ev.Messages), slog.Int("tools", ev.Tools))
	case *LLMResponse:
		attrs = append(attrs, slog.String("provider", ev.Provider), slog.String("model", ev.Model),
			slog.Int("turn", ev.Turn), slog.Int("prompt_tokens", ev.Usage.PromptTokens),
			slog.Int("completion_tokens", ev.Usage.CompletionTokens), slog.Int("cached_tokens", ev.Usage.CachedTokens),
			slog.String("stop_reason", ev.StopReason), slog.Int("tool_calls", ev.ToolCalls),
			slog.Duration("duration", ev.Duration), slog.Float64("cost_usd", ev.CostUSD))
		if ev.TimeToFirstToken > 0 {
			attrs = append(attrs, slog.Duration("time_to_first_token", ev.TimeToFirstToken))
		}
		if ev.Err != nil {
			level = max(level, slog.LevelWarn)
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
		}
	case *ToolStart:
		attrs = append(attrs, slog.String("tool", ev.Tool), slog.String("call_id", ev.CallID),
			slog.Int("argument_bytes", len(ev.Arguments)))
	case *ToolFinish:
		attrs = append(attrs, slog.String("tool", ev.Tool), slog.String("call_id", ev.CallID),
			slog.Duration("duration", ev.Duration), slog.Int("summary_bytes", ev.SummaryBytes),
			slog.Bool("truncated", ev.Truncated), slog.Int("artifacts", ev.Artifacts))
	case *ToolError:
		level = max(level, slog.LevelWarn)
		attrs = append(attrs, slog.String("tool", ev.Tool), slog.String("call_id", ev.CallID),
			slog.String("code", ev.Code), slog.Duration("duration", ev.Duration))
		if ev.Err != nil {
			attrs = append(attrs, slog.String("error", ev.Err.Error()))
		}
	case *ContextCompile:
		attrs = append(attrs, slog.Int("tokens", ev.Tokens), slog.Int("budget", ev.Budget),
			slog.Int("dropped", ev.Dropped), slog.Int("compacted", ev.Compacted),
			slog.Int("redacted", ev.Redacted), slog.Int("cache_prefix_tokens", ev.CachePrefixTokens),
			slog.Duration("duration", ev.Duration))
	case *SessionCreate:
		attrs = append(attrs, slog.Int("title_len", len(ev.Title)))
	case *SessionUpdate:
		attrs = append(attrs, slog.Int("title_len", len(ev.Title)))
		attrs = appendNonEmpty(attrs, "model", ev.Model)
	case *MessageSave:
		attrs = append(attrs, slog.String("role", string(ev.Role)), slog.String("status", string(ev.Status)),
			slog.Int("total_tokens", ev.Usage.TotalTokens), slog.Int("text_len", len(ev.Text)))
		if ev.CostUSD != 0 {
			attrs = append(attrs, slog.Float64("cost_usd", ev.CostUSD))
		}
		attrs = appendNonEmpty(attrs, "error_code", ev.ErrorCode)
	case *SQLQuery:
		attrs = append(attrs, slog.String("tool", ev.Tool), slog.String("dialect", ev.Dialect),
			slog.Int("sql_len", len(ev.SQL)), slog.Int("rows", ev.Rows), slog.Bool("truncated", ev.Truncated),
			slog.Duration("duration", ev.Duration))
		if ev.Error != "" {
			level = max(level, slog.LevelWarn)
			attrs = append(attrs, slog.String("error", ev.Error))
		}
	case *SandboxRun:
		attrs = append(attrs, slog.String("outcome", ev.Outcome), slog.Int("exit_code", ev.ExitCode),
			slog.Duration("duration", ev.Duration), slog.Int("files", ev.Files))
		if len(ev.Unenforced) > 0 {
			level = max(level, slog.LevelWarn)
			attrs = append(attrs, slog.Any("unenforced", ev.Unenforced))
		}
	case *ArtifactSave:
		attrs = append(attrs, slog.String("artifact_id", ev.ArtifactID), slog.String("media_type", ev.MediaType),
			slog.Int64("size", ev.Size), slog.String("sha256", ev.SHA256))
	case *Decision:
		attrs = append(attrs, slog.String("policy", ev.Policy), slog.String("outcome", ev.Outcome))
		attrs = appendNonEmpty(attrs, "tool", ev.Tool)
	case *BudgetExceeded:
		level = max(level, slog.LevelWarn)
		attrs = append(attrs, slog.String("scope", ev.Scope), slog.Float64("limit_usd", ev.LimitUSD),
			slog.Float64("spent_usd", ev.SpentUSD))
	case *QuotaExceeded:
		level = max(level, slog.LevelWarn)
		attrs = append(attrs, slog.String("scope", ev.Scope), slog.String("limit", ev.Limit),
			slog.Duration("retry_after", ev.RetryAfter))
	case *Interrupt:
		attrs = append(attrs, slog.String("reason", ev.Reason), slog.String("tool", ev.Tool),
			slog.String("call_id", ev.CallID))
	}
	h.l.LogAttrs(ctx, level, string(e.Kind()), attrs...)
	return nil
}

func appendNonEmpty(attrs []slog.Attr, key, value string) []slog.Attr {
	if value == "" {
		return attrs
	}
	return append(attrs, slog.String(key, value))
}
