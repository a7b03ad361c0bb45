package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
)

// ClientOptions configures the agents.Tool adapters of an external MCP
// server's tools.
type ClientOptions struct {
	// Prefix is put before every tool name the agent sees (for example
	// "crm_"), so tools of several servers cannot clash with each other or
	// with bichat's own. The server is still called by its own name.
	Prefix string
	// Permission is the permission of every adapted tool unless
	// Permissions names it (default agents.PermRead). The host decides:
	// MCP tool annotations such as readOnlyHint are hints from the server
	// and are not trusted. Write and destructive tools then need the
	// user's confirmation in agent runs like any other.
	Permission agents.Permission
	// Permissions overrides Permission per tool, keyed by the server's
	// tool name (without Prefix).
	Permissions map[string]agents.Permission
	// Timeout bounds each call (ToolSpec.Timeout; 0 means the executor's
	// default).
	Timeout time.Duration
	// Include, when non-empty, keeps only these tools (server names); a
	// name the server does not offer is an error. Exclude drops tools.
	Include, Exclude []string
}

// Tools lists the tools of the server behind session and returns them as
// agents.Tool values the host hands to an executor (agents.Config.Tools).
// Each keeps the server's description and input JSON Schema verbatim (the
// arguments are validated against it before the server is called) and
// gets the permission and timeout the host assigns.
//
// A call returns the text contents joined as the Summary and the
// structured content as the Payload; a result with isError, a protocol
// error or a timeout is the call's error, which the agent sees. The tools
// use session for every call: keep it open while they are in use.
func Tools(ctx context.Context, session *sdk.ClientSession, opts ClientOptions) ([]agents.Tool, error) {
	if session == nil {
		return nil, errors.New("mcp: Tools needs a connected client session")
	}
	if opts.Timeout < 0 {
		return nil, errors.New("mcp: ClientOptions.Timeout must not be negative")
	}
	server := "the MCP server"
	if ir := session.InitializeResult(); ir != nil && ir.ServerInfo != nil && ir.ServerInfo.Name != "" {
		server = "MCP server " + ir.ServerInfo.Name
	}
	var out []agents.Tool
	found := map[string]bool{}
	for t, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("mcp: list tools of %s: %w", server, err)
		}
		if len(opts.Include) > 0 && !slices.Contains(opts.Include, t.Name) || slices.Contains(opts.Exclude, t.Name) {
			continue
		}
		found[t.Name] = true
		a, err := adapt(session, server, t, opts)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	for _, name := range opts.Include {
		if !found[name] {
			return nil, fmt.Errorf("mcp: ClientOptions.Include names %q, which %s does not offer", name, server)
		}
	}
	for name := range opts.Permissions {
		if !found[name] && !slices.Contains(opts.Exclude, name) {
			return nil, fmt.Errorf("mcp: ClientOptions.Permissions names %q, which %s does not offer", name, server)
		}
	}
	return out, nil
}

// adapt builds the agents.Tool of one server tool.
func adapt(session *sdk.ClientSession, server string, t *sdk.Tool, opts ClientOptions) (agents.Tool, error) {
	schema, err := json.Marshal(t.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("mcp: tool %s of %s: input schema: %w", t.Name, server, err)
	}
	if string(schema) == "null" {
		schema = nil
	}
	desc := t.Description
	if strings.TrimSpace(desc) == "" {
		desc = t.Title
	}
	if strings.TrimSpace(desc) == "" {
		desc = fmt.Sprintf("Tool %s of %s (it gives no description).", t.Name, server)
	}
	perm := opts.Permission
	if p, ok := opts.Permissions[t.Name]; ok {
		perm = p
	}
	spec := agents.ToolSpec{
		Name:        opts.Prefix + t.Name,
		Description: desc,
		Schema:      schema,
		Permission:  perm,
		Timeout:     opts.Timeout,
	}
	remote := t.Name
	tool, err := agents.NewRawTool(spec, func(ctx context.Context, args json.RawMessage) (agents.Result, error) {
		if opts.Timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, opts.Timeout)
			defer cancel()
		}
		res, err := session.CallTool(ctx, &sdk.CallToolParams{Name: remote, Arguments: args})
		if err != nil {
			if ctx.Err() != nil {
				return agents.Result{}, fmt.Errorf("%s of %s: %w", remote, server, ctx.Err())
			}
			return agents.Result{}, fmt.Errorf("%s of %s: %w", remote, server, err)
		}
		text := contentText(res.Content)
		if res.IsError {
			if text == "" {
				text = "the tool reported an error without a message"
			}
			return agents.Result{}, fmt.Errorf("%s of %s: %s", remote, server, text)
		}
		if text == "" && res.StructuredContent != nil {
			b, err := json.Marshal(res.StructuredContent)
			if err == nil {
				text = string(b)
			}
		}
		return agents.Result{Summary: text, Payload: res.StructuredContent}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("mcp: tool %s of %s: %w", t.Name, server, err)
	}
	return tool, nil
}

// contentText joins what a model can read of a result's contents: texts
// verbatim, other kinds as a short note.
func contentText(cs []sdk.Content) string {
	parts := make([]string, 0, len(cs))
	for _, c := range cs {
		switch v := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, v.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", v.MIMEType, len(v.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s: %s]", v.Name, v.URI))
		case *sdk.EmbeddedResource:
			if v.Resource != nil && v.Resource.Text != "" {
				parts = append(parts, v.Resource.Text)
			} else if v.Resource != nil {
				parts = append(parts, fmt.Sprintf("[resource %s, %d bytes]", v.Resource.URI, len(v.Resource.Blob)))
			}
		}
	}
	return strings.Join(parts, "\n")
}
