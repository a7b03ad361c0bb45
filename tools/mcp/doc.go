// Package mcp connects bichat to the Model Context Protocol through the
// official Go SDK (github.com/modelcontextprotocol/go-sdk/mcp, imported here
// as sdk): a Server that exposes bichat's data tools and datasets to MCP
// clients (desktop assistants, IDEs, other agents), and Tools, which hands
// an agent the tools of external MCP servers.
//
// # Serving bichat's tools
//
// Build the tools exactly as for an agent (list_datasets and
// get_dataset_details from tools/catalog, query_database and describe_table
// from tools/sqldb, draw_chart, export_excel, kb_search, ...), without a
// fixed scope, and give them to NewServer:
//
//	srv, err := mcp.NewServer(mcp.ServerOptions{
//		Tools:      append(data.All(), list, details, drawChart, excel, search),
//		Catalog:    cat,                      // datasets as resources bichat://datasets/{name}
//		Attributes: bichat.DefaultAttributes, // row-level security, as in agent runs
//	})
//	err = srv.RunStdio(ctx, domain.Principal{TenantID: "acme", UserID: "ana"})
//
// Every connection belongs to one principal. RunStdio, Serve and Connect
// take it from the host (a desktop client runs the server as one user);
// HTTPHandler serves streamable HTTP and maps each request to a principal
// with the host's PrincipalFunc, refusing a request it cannot map (401, or
// 403 for domain.ErrForbidden) before any tool runs, and refusing a request
// for a session that another tenant or user opened (403).
//
// Each tool call runs with an agents.CallInfo for that principal on its
// context (tenant, user, the host's data-scoping attributes, a session id
// per connection), so tenant scoping, row-level security and results kept
// by name (result_1 from query_database, then draw_chart on it) work exactly
// as in agent runs. Calls are bounded like in the executor: the tool's
// timeout (else Limits.ToolTimeout), a cap on the text returned, panics
// recovered; with ServerOptions.Quota, the service's per-tenant and
// per-user limits (package quota) admit each call. A result carries the tool's Summary as text content and its
// Payload as structured content (JSON); artifacts, datasets and citations
// travel in _meta. Bad arguments (checked against the tool's own JSON
// Schema), tool failures, timeouts and refusals are results with isError
// and a message the client's model can act on, never protocol errors.
//
// # Write tools
//
// Tools whose permission needs confirmation (write, destructive) are
// hidden by default (WriteHide). With WriteConfirm they are listed with an
// extra confirmation_token argument: a call without it does not run the
// tool but returns a token (ConfirmationRequired) bound to tenant, user,
// tool, the canonical arguments and an expiry; the same call with the token
// runs the tool only once the token verifies, has not been used before,
// and the host's ServerOptions.Approve approves. As in the service, only a
// principal with domain.PermWrite gets a token. A write tool never runs on
// the client's word alone.
//
// # Using external MCP servers
//
// Tools lists a connected server's tools and adapts each to agents.Tool:
// the server's name (with an optional prefix), description and input JSON
// Schema verbatim (arguments are validated against it before the call),
// and the permission and timeout the host assigns, never the server's
// annotations. A call returns the text contents as the Summary and the
// structured content as the Payload; an isError result is the call's error.
//
//	cs, err := sdk.NewClient(&sdk.Implementation{Name: "bichat"}, nil).
//		Connect(ctx, &sdk.CommandTransport{Command: exec.Command("crm-mcp")}, nil)
//	crm, err := mcp.Tools(ctx, cs, mcp.ClientOptions{Prefix: "crm_", Timeout: 30 * time.Second})
//	cfg.Agent.Tools = append(cfg.Agent.Tools, crm...)
//
// examples/mcp serves the sample retail data over stdio.
package mcp
