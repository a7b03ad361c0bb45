// Command mcp serves bichat's data tools over the Model Context Protocol,
// on the generated retail sample data (SQLite, created in a temporary
// folder at start), fully offline.
//
// Clients get list_datasets, get_dataset_details, query_database (read-only
// SQL), describe_table, get_sample_data, draw_chart, export_excel and
// kb_search, and every table as a resource bichat://datasets/{name}
// (its YAML definition). Every call runs as one principal, -tenant and
// -user (default acme/mcp-user), with bichat.DefaultAttributes as its
// data-scoping attributes, exactly like an agent run of that user.
//
// Over stdio (the default), for a desktop MCP client:
//
//	go build -o bichat-mcp ./examples/mcp
//	# client configuration: {"command": "/path/to/bichat-mcp", "args": ["-user", "ana"]}
//
// Over streamable HTTP, with a bearer token clients must send:
//
//	BICHAT_MCP_TOKEN=$(openssl rand -hex 16) go run ./examples/mcp -http localhost:8080
//
// -files DIR keeps the charts and workbooks the tools make in DIR
// (domain/fsartifacts); by default they stay in memory and clients get
// their descriptions as structured content. Logs go to stderr: on stdio,
// stdout carries only the protocol.
//
// main_test.go builds this program and drives it as a stdio subprocess
// with the SDK's CommandTransport.
package main
