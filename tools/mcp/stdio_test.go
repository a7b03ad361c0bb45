package mcp_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestStdio runs the server as a subprocess (this test binary in server
// mode, see TestMain) and talks to it over stdin/stdout with the SDK's
// CommandTransport.
func TestStdio(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), helperEnv+"=acme/ana")
	cmd.Stderr = os.Stderr
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "stdio-test", Version: "v1"}, nil).
		Connect(t.Context(), &sdk.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if info := cs.InitializeResult().ServerInfo; info.Name != "bichat-test" {
		t.Errorf("server name %q", info.Name)
	}
	res, text := call(t, cs, "query_database", map[string]any{
		"sql": "SELECT name FROM regions ORDER BY id LIMIT 2"})
	if res.IsError || strings.Count(text, "\n|") < 3 {
		t.Errorf("query_database over stdio: %s", text)
	}
	res, _ = call(t, cs, "whoami", nil)
	var w whoamiOut
	structured(t, res, &w)
	if w.Tenant != "acme" || w.User != "ana" || w.Attributes["tenant_id"] != "acme" {
		t.Errorf("stdio CallInfo %+v", w)
	}
	if err := cs.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}
