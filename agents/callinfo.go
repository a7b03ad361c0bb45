package agents

import "context"

// CallInfo identifies the run and the tool call a Tool.Call belongs to. The
// executor puts it on the context of every tool call; tools that keep
// per-session state (the last query results, say) read it with
// CallInfoFromContext.
type CallInfo struct {
	RunID       string
	ParentRunID string
	TenantID    string
	UserID      string
	SessionID   string
	MessageID   string
	// CallID is the model's id of this tool call.
	CallID string
	// Tool is the called tool's name.
	Tool string
	// Attributes are the caller's data-scoping attributes (Input.Attributes:
	// tenant, user, roles, region, ... as the host maps its principal).
	// Data tools pass them to the database, e.g. as transaction-local
	// settings that row-level security policies read. Do not modify.
	Attributes map[string]string
}

type callInfoKey struct{}

// WithCallInfo returns a context carrying info. The executor calls it; tests
// and hosts that call a Tool directly may too.
func WithCallInfo(ctx context.Context, info CallInfo) context.Context {
	return context.WithValue(ctx, callInfoKey{}, info)
}

// CallInfoFromContext returns the CallInfo the executor attached, and false
// when ctx carries none (a tool called outside a run).
func CallInfoFromContext(ctx context.Context) (CallInfo, bool) {
	info, ok := ctx.Value(callInfoKey{}).(CallInfo)
	return info, ok
}
