package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/textutil"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/quota"
)

// Defaults of ServerOptions and Limits.
const (
	// DefaultName is the server name announced to clients.
	DefaultName = "bichat"
	// DefaultMaxStructuredBytes caps the JSON of one call's structured
	// content (the tool's Payload).
	DefaultMaxStructuredBytes = 1 << 20
	// ConfirmationTokenArgument is the extra argument write tools take in
	// WriteConfirm mode.
	ConfirmationTokenArgument = "confirmation_token"
)

// WriteMode says what the server does with tools whose permission needs
// confirmation (agents.Permission.NeedsConfirmation: write and
// destructive tools).
type WriteMode uint8

const (
	// WriteHide leaves write tools out: clients neither see nor can call
	// them. It is the default.
	WriteHide WriteMode = iota
	// WriteConfirm exposes write tools behind a two-step confirmation: a
	// call without a confirmation token does not run the tool and returns
	// a token bound to tenant, user, tool, arguments and expiry; the same
	// call repeated with that token (argument confirmation_token) runs the
	// tool only when ServerOptions.Approve approves it. Each token works
	// once. As in the service, only a principal with domain.PermWrite may
	// approve: others get no token.
	WriteConfirm
)

// String returns "hide" or "confirm".
func (m WriteMode) String() string {
	switch m {
	case WriteHide:
		return "hide"
	case WriteConfirm:
		return "confirm"
	}
	return fmt.Sprintf("WriteMode(%d)", uint8(m))
}

// Limits bound each tool call the server runs.
type Limits struct {
	// ToolTimeout bounds a call whose tool spec sets no timeout (default
	// agents.DefaultToolTimeout). A tool's own ToolSpec.Timeout wins.
	ToolTimeout time.Duration
	// MaxTextBytes caps the text content of a result, the tool's Summary
	// (default agents.DefaultMaxToolOutputBytes); a longer summary is cut
	// with a note saying how much was left out.
	MaxTextBytes int
	// MaxStructuredBytes caps the JSON of the structured content, the
	// tool's Payload (default DefaultMaxStructuredBytes). A larger payload
	// is left out and the text says so. Negative: never send structured
	// content.
	MaxStructuredBytes int
}

// Approval is what ServerOptions.Approve decides on: one confirmed call of
// a write tool.
type Approval struct {
	// Principal is the caller the session belongs to.
	Principal domain.Principal
	// Tool and Permission name the tool and what it does.
	Tool       string
	Permission agents.Permission
	// Arguments are the call's arguments without the confirmation token,
	// the ones the token was issued for.
	Arguments json.RawMessage
	// Token is the confirmation token the client sent back; hosts that let
	// the user approve in their own UI look it up in their approvals.
	Token string
	// SessionID identifies the MCP connection (CallInfo.SessionID of its
	// calls).
	SessionID string
}

// ServerOptions configures a Server. Tools is required; zero values of the
// other fields mean the documented defaults.
type ServerOptions struct {
	// Name and Version are announced to clients (default "bichat" and
	// "dev").
	Name, Version string
	// Instructions are optional hints for the client's model.
	Instructions string
	// Tools are the tools to expose, typically list_datasets,
	// get_dataset_details (tools/catalog), query_database and
	// describe_table (tools/sqldb), draw_chart (tools/chart), export_excel
	// (tools/export) and kb_search (tools/knowledge), built exactly as for
	// an agent: without a fixed scope, so each call is scoped by the
	// CallInfo the server attaches. Names must be unique.
	Tools []agents.Tool
	// Catalog, when set, exposes the datasets of the caller's scope as
	// resources bichat://datasets/{name} whose content is the dataset's
	// YAML definition (domain.Dataset.YAML).
	Catalog kb.Catalog
	// Scope maps a principal to its catalog scope for the resources
	// (default: the principal's tenant, no ontology). Use the same
	// ontology as the catalog tools.
	Scope func(p domain.Principal) kb.Scope
	// Attributes maps a principal to its data-scoping attributes, which
	// every call carries in agents.CallInfo.Attributes (row-level security,
	// SQLite bichat_attr views). Pass bichat.DefaultAttributes (or the
	// service's Config.Attributes) so MCP calls are scoped exactly like
	// agent runs. Nil means no attributes: data tools that need them refuse
	// the call. An error refuses the call.
	Attributes func(ctx context.Context, p domain.Principal) (map[string]string, error)
	// WriteTools is what happens to write and destructive tools (default
	// WriteHide).
	WriteTools WriteMode
	// Approve decides on a confirmed write call (WriteConfirm only, where
	// it is required): true runs the tool, false or an error refuses it.
	// It runs after the token was verified and used up.
	Approve func(ctx context.Context, a Approval) (bool, error)
	// ConfirmationKey signs confirmation tokens (HMAC-SHA256, 16 bytes or
	// more). Empty means a random per-process key: tokens then do not
	// survive a restart or reach another replica.
	ConfirmationKey []byte
	// ConfirmationTTL is how long a token is valid (default
	// agents.DefaultConfirmationTTL).
	ConfirmationTTL time.Duration
	// ReplayGuard makes each token work once (default: in memory, per
	// process; share one across replicas).
	ReplayGuard agents.ReplayGuard
	// Limits bound each call.
	Limits Limits
	// Quota, when set, applies the service's per-tenant and per-user
	// limits (package quota, the same Limiter as bichat.Config.Quota) to
	// tool calls: each call is a request and holds a concurrent-run slot
	// while it runs. A refused call returns an error result saying which
	// limit and when to retry; nothing runs.
	Quota quota.Limiter
	// Redact, when set, scrubs the text content and error messages sent
	// to the client (structured content is sent as the tool produced it).
	Redact func(string) string
	// Logger receives the SDK's and the server's diagnostics (default:
	// discarded).
	Logger *slog.Logger
	// Now returns the current time (default time.Now).
	Now func() time.Time
}

// Server exposes bichat tools and datasets to MCP clients. Each connection
// belongs to one principal: Serve and Connect take it from the host, and
// HTTPHandler maps it from each HTTP request. A Server is safe for
// concurrent use by many connections.
type Server struct {
	opts   ServerOptions
	tools  []*exposed
	signer *agents.TokenSigner
	// sessions binds streamable HTTP session ids to their principal.
	sessions sessionMap
}

// exposed is one tool as clients see it.
type exposed struct {
	tool    agents.Tool
	spec    agents.ToolSpec
	mcp     *sdk.Tool
	confirm bool
}

// NewServer checks opts and returns the server. It fails when a tool's
// spec is invalid, two tools share a name, a schema is not an object
// schema, or WriteConfirm is set without Approve.
func NewServer(opts ServerOptions) (*Server, error) {
	if len(opts.Tools) == 0 {
		return nil, errors.New("mcp: ServerOptions.Tools is empty; give the server the tools to expose")
	}
	if opts.WriteTools > WriteConfirm {
		return nil, fmt.Errorf("mcp: unknown WriteTools mode %d", opts.WriteTools)
	}
	if opts.WriteTools == WriteConfirm && opts.Approve == nil {
		return nil, errors.New("mcp: WriteTools is WriteConfirm but Approve is nil; a write tool never runs on the client's word alone")
	}
	if opts.ConfirmationTTL < 0 || opts.Limits.ToolTimeout < 0 || opts.Limits.MaxTextBytes < 0 {
		return nil, errors.New("mcp: ConfirmationTTL, Limits.ToolTimeout and Limits.MaxTextBytes must not be negative")
	}
	setDefault(&opts.Name, DefaultName)
	setDefault(&opts.Version, "dev")
	setDefault(&opts.ConfirmationTTL, agents.DefaultConfirmationTTL)
	setDefault(&opts.Limits.ToolTimeout, agents.DefaultToolTimeout)
	setDefault(&opts.Limits.MaxTextBytes, agents.DefaultMaxToolOutputBytes)
	setDefault(&opts.Limits.MaxStructuredBytes, DefaultMaxStructuredBytes)
	if opts.ReplayGuard == nil {
		opts.ReplayGuard = &agents.MemoryReplayGuard{}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Scope == nil {
		opts.Scope = func(p domain.Principal) kb.Scope { return kb.Scope{TenantID: p.TenantID} }
	}
	sg, err := agents.NewTokenSigner(opts.ConfirmationKey, tokenPurpose)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, signer: sg}
	seen := map[string]bool{}
	for i, t := range opts.Tools {
		if t == nil {
			return nil, fmt.Errorf("mcp: ServerOptions.Tools[%d] is nil", i)
		}
		spec := t.Spec()
		if err := spec.Validate(); err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		if seen[spec.Name] {
			return nil, fmt.Errorf("mcp: two tools are named %s", spec.Name)
		}
		seen[spec.Name] = true
		confirm := spec.Permission.NeedsConfirmation()
		if confirm && opts.WriteTools == WriteHide {
			continue
		}
		mt, err := mcpTool(spec, confirm)
		if err != nil {
			return nil, err
		}
		s.tools = append(s.tools, &exposed{tool: t, spec: spec, mcp: mt, confirm: confirm})
	}
	if len(s.tools) == 0 {
		return nil, errors.New("mcp: every tool needs confirmation and WriteTools is WriteHide, so nothing would be exposed")
	}
	return s, nil
}

func setDefault[T comparable](p *T, def T) {
	var zero T
	if *p == zero {
		*p = def
	}
}

// ToolNames returns the names of the tools clients see, in order.
func (s *Server) ToolNames() []string {
	names := make([]string, len(s.tools))
	for i, e := range s.tools {
		names[i] = e.spec.Name
	}
	return names
}

// mcpTool describes spec to MCP clients: the same name, description and
// JSON Schema, annotations from the permission, and in confirm mode the
// extra confirmation_token argument.
func mcpTool(spec agents.ToolSpec, confirm bool) (*sdk.Tool, error) {
	schema := spec.Schema
	if len(schema) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	var m map[string]any
	if err := json.Unmarshal(schema, &m); err != nil {
		return nil, fmt.Errorf("mcp: tool %s: schema: %w", spec.Name, err)
	}
	if m["type"] != "object" {
		return nil, fmt.Errorf(`mcp: tool %s: MCP needs an input schema of "type": "object", got %v`, spec.Name, m["type"])
	}
	desc := spec.Description
	if confirm {
		props, _ := m["properties"].(map[string]any)
		if props == nil {
			props = map[string]any{}
		}
		if _, clash := props[ConfirmationTokenArgument]; clash {
			return nil, fmt.Errorf("mcp: tool %s already has an argument named %s, which confirm mode needs", spec.Name, ConfirmationTokenArgument)
		}
		props[ConfirmationTokenArgument] = map[string]any{
			"type": "string",
			"description": "The token a first call without it returned. Leave it out on the first call; " +
				"send the same arguments again with it once the user has approved.",
		}
		m["properties"] = props
		b, err := json.Marshal(m)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s: schema: %w", spec.Name, err)
		}
		schema = b
		desc += fmt.Sprintf(" This tool is %s: a call without %s does not run it but returns a confirmation token; "+
			"call it again with the same arguments and that token after the user approved.", spec.Permission, ConfirmationTokenArgument)
	}
	destructive := spec.Permission == agents.PermDestructive
	return &sdk.Tool{
		Name:        spec.Name,
		Description: desc,
		InputSchema: schema,
		Annotations: &sdk.ToolAnnotations{
			ReadOnlyHint:    !spec.Permission.NeedsConfirmation(),
			DestructiveHint: &destructive,
		},
	}, nil
}

// conn is one client connection: its principal and session id.
type conn struct {
	s         *Server
	principal domain.Principal
	sessionID string
}

// sdkServer builds the SDK server of one connection, whose handlers know
// its principal.
func (s *Server) sdkServer(p domain.Principal, onSession func(*sdk.ServerSession)) *sdk.Server {
	c := &conn{s: s, principal: p, sessionID: "mcp-" + domain.NewID()}
	opts := &sdk.ServerOptions{
		Instructions: s.opts.Instructions,
		Logger:       s.opts.Logger,
		Capabilities: &sdk.ServerCapabilities{},
	}
	if onSession != nil {
		opts.InitializedHandler = func(_ context.Context, r *sdk.InitializedRequest) { onSession(r.Session) }
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: s.opts.Name, Version: s.opts.Version}, opts)
	for _, e := range s.tools {
		srv.AddTool(e.mcp, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			return c.call(ctx, e, req.Params.Arguments), nil
		})
	}
	if s.opts.Catalog != nil {
		c.addResources(srv)
	}
	return srv
}

// Connect serves one connection over t for principal p and returns the
// session at once; the session ends when the client disconnects or
// ss.Close is called. Use it with sdk.NewInMemoryTransports to run a
// server in process.
func (s *Server) Connect(ctx context.Context, t sdk.Transport, p domain.Principal) (*sdk.ServerSession, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("mcp: principal: %w", err)
	}
	ss, err := s.sdkServer(p, nil).Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("mcp: connect: %w", err)
	}
	return ss, nil
}

// Serve serves one connection over t for principal p until the client
// disconnects or ctx ends.
func (s *Server) Serve(ctx context.Context, t sdk.Transport, p domain.Principal) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("mcp: principal: %w", err)
	}
	return s.sdkServer(p, nil).Run(ctx, t)
}

// RunStdio serves one client over standard input and output for principal
// p (the user a desktop MCP client runs the server as) until the client
// closes stdin or ctx ends. Nothing else may write to stdout meanwhile.
func (s *Server) RunStdio(ctx context.Context, p domain.Principal) error {
	return s.Serve(ctx, &sdk.StdioTransport{}, p)
}

// call runs one tool call and always returns a result: tool failures,
// bad arguments and refusals are IsError results the client's model can
// read, never protocol errors.
func (c *conn) call(ctx context.Context, e *exposed, raw json.RawMessage) *sdk.CallToolResult {
	s := c.s
	name := e.spec.Name
	args, token, err := splitArgs(raw, e.confirm)
	if err != nil {
		return c.errorResult(fmt.Sprintf("invalid arguments for %s: %v", name, err))
	}
	if v, ok := e.tool.(agents.ArgumentValidator); ok {
		if err := v.ValidateArguments(args); err != nil {
			return c.errorResult(err.Error() + ". Fix the arguments and call it again.")
		}
	}
	if e.confirm {
		if refused := c.confirm(ctx, e, args, token); refused != nil {
			return refused
		}
	}
	if s.opts.Quota != nil {
		release, err := s.opts.Quota.Admit(ctx, c.principal.TenantID, c.principal.UserID, "mcp-"+domain.NewID())
		if err != nil {
			var ex *quota.ExceededError
			if errors.As(err, &ex) {
				return c.errorResult(fmt.Sprintf("%s was not run: %v; try again in %s", name, ex, ex.RetryAfter.Round(time.Second)))
			}
			s.opts.Logger.Warn("mcp: quota", "tenant", c.principal.TenantID, "user", c.principal.UserID, "error", err)
			return c.errorResult(fmt.Sprintf("%s was not run: the rate limiter is unavailable", name))
		}
		defer release()
	}
	var attrs map[string]string
	if s.opts.Attributes != nil {
		attrs, err = s.opts.Attributes(ctx, c.principal)
		if err != nil {
			s.opts.Logger.Warn("mcp: data-scoping attributes", "tenant", c.principal.TenantID, "user", c.principal.UserID, "error", err)
			return c.errorResult(fmt.Sprintf("%s was not run: the caller's data-scoping attributes are unavailable", name))
		}
	}
	timeout := e.spec.Timeout
	if timeout <= 0 {
		timeout = s.opts.Limits.ToolTimeout
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cctx = agents.WithCallInfo(cctx, agents.CallInfo{
		RunID:      c.sessionID,
		TenantID:   c.principal.TenantID,
		UserID:     c.principal.UserID,
		SessionID:  c.sessionID,
		CallID:     "call-" + domain.NewID(),
		Tool:       name,
		Attributes: attrs,
	})
	type outcome struct {
		res agents.Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("mcp: tool panicked", "tool", name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
				done <- outcome{err: errPanic}
			}
		}()
		res, err := e.tool.Call(cctx, args)
		done <- outcome{res, err}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-cctx.Done():
		// A tool that ignores its context is abandoned at the deadline.
		o = outcome{err: cctx.Err()}
	}
	if o.err != nil {
		switch {
		case errors.Is(o.err, errPanic):
			return c.errorResult(fmt.Sprintf("%s failed with an internal error", name))
		case errors.Is(o.err, agents.ErrInvalidArguments):
			return c.errorResult(o.err.Error() + ". Fix the arguments and call it again.")
		case cctx.Err() != nil && ctx.Err() == nil:
			return c.errorResult(fmt.Sprintf("%s did not finish within %s and was stopped; try a smaller or simpler request", name, timeout))
		case ctx.Err() != nil:
			return c.errorResult(fmt.Sprintf("%s was cancelled", name))
		}
		return c.errorResult(fmt.Sprintf("%s failed: %v", name, o.err))
	}
	return c.result(o.res)
}

var errPanic = errors.New("tool panicked")

// splitArgs checks that raw is a JSON object and, in confirm mode, takes
// the confirmation token out of it.
func splitArgs(raw json.RawMessage, confirm bool) (args json.RawMessage, token string, err error) {
	if len(strings.TrimSpace(string(raw))) == 0 || string(raw) == "null" {
		raw = json.RawMessage(`{}`)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, "", errors.New("the arguments must be a JSON object")
	}
	if !confirm {
		return raw, "", nil
	}
	if t, ok := m[ConfirmationTokenArgument]; ok {
		if err := json.Unmarshal(t, &token); err != nil {
			return nil, "", fmt.Errorf("%s must be a string", ConfirmationTokenArgument)
		}
		delete(m, ConfirmationTokenArgument)
		b, err := json.Marshal(m)
		if err != nil {
			return nil, "", err
		}
		return b, token, nil
	}
	return raw, "", nil
}

// result turns a tool result into the MCP result: the summary as text,
// the payload as structured content, artifacts and datasets in _meta.
func (c *conn) result(res agents.Result) *sdk.CallToolResult {
	lim := c.s.opts.Limits
	text := res.Summary
	if text == "" {
		text = "(the tool returned no summary)"
	}
	text = c.redact(text)
	text, _ = textutil.Truncate(text, lim.MaxTextBytes)
	out := &sdk.CallToolResult{}
	if res.Payload != nil && lim.MaxStructuredBytes >= 0 {
		b, err := json.Marshal(res.Payload)
		switch {
		case err != nil:
			c.s.opts.Logger.Warn("mcp: payload is not JSON-encodable; sent as text only", "error", err)
		case len(b) > lim.MaxStructuredBytes:
			text += fmt.Sprintf("\n\n(The structured result of %d bytes was left out: the limit is %d bytes.)", len(b), lim.MaxStructuredBytes)
		default:
			if len(b) == 0 || b[0] != '{' {
				// Clients of older protocol versions accept only objects.
				b = append(append([]byte(`{"value":`), b...), '}')
			}
			out.StructuredContent = json.RawMessage(b)
		}
	}
	out.Content = []sdk.Content{&sdk.TextContent{Text: text}}
	meta := sdk.Meta{}
	if len(res.Artifacts) > 0 {
		meta["bichat/artifacts"] = res.Artifacts
	}
	if len(res.Datasets) > 0 {
		meta["bichat/datasets"] = res.Datasets
	}
	if len(res.Citations) > 0 {
		meta["bichat/citations"] = res.Citations
	}
	if len(meta) > 0 {
		out.Meta = meta
	}
	return out
}

func (c *conn) errorResult(msg string) *sdk.CallToolResult {
	msg, _ = textutil.Truncate(c.redact(msg), c.s.opts.Limits.MaxTextBytes)
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: msg}}}
}

func (c *conn) redact(s string) string {
	if c.s.opts.Redact != nil {
		return c.s.opts.Redact(s)
	}
	return s
}
