package mcp_test

import (
	"context"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools/mcp"
)

// A server exposing one tool to an in-process client; the tool learns the
// caller from the CallInfo the server attaches.
func Example() {
	ctx := context.Background()
	greet := agents.MustTool("greet", "Greet the caller.", func(ctx context.Context, _ struct{}) (string, error) {
		info, _ := agents.CallInfoFromContext(ctx)
		return fmt.Sprintf("Hello %s of %s (region %s)", info.UserID, info.TenantID, info.Attributes["region"]), nil
	})
	srv, err := mcp.NewServer(mcp.ServerOptions{
		Tools: []agents.Tool{greet},
		Attributes: func(_ context.Context, p domain.Principal) (map[string]string, error) {
			return map[string]string{"tenant_id": p.TenantID, "region": "emea"}, nil
		},
	})
	if err != nil {
		panic(err)
	}

	ct, st := sdk.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, domain.Principal{TenantID: "acme", UserID: "ana"})
	if err != nil {
		panic(err)
	}
	defer ss.Close()
	cs, err := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		panic(err)
	}
	defer cs.Close()

	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "greet", Arguments: map[string]any{}})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Content[0].(*sdk.TextContent).Text)

	// The same server's tools, adapted back into agent tools.
	ts, err := mcp.Tools(ctx, cs, mcp.ClientOptions{Prefix: "remote_"})
	if err != nil {
		panic(err)
	}
	r, err := ts[0].Call(ctx, []byte(`{}`))
	if err != nil {
		panic(err)
	}
	fmt.Println(ts[0].Spec().Name, ts[0].Spec().Permission, "→", r.Summary)
	// Output:
	// Hello ana of acme (region emea)
	// remote_greet read → Hello ana of acme (region emea)
}

// In WriteConfirm mode a write tool runs only with a confirmation token
// and the host's approval.
func ExampleServerOptions_writeConfirm() {
	ctx := context.Background()
	cancel := agents.MustTool("cancel_order", "Cancel an order.",
		func(_ context.Context, in struct {
			ID int `json:"id"`
		}) (string, error) {
			return fmt.Sprintf("order %d cancelled", in.ID), nil
		}, agents.WithPermission(agents.PermWrite))
	srv, err := mcp.NewServer(mcp.ServerOptions{
		Tools:      []agents.Tool{cancel},
		WriteTools: mcp.WriteConfirm,
		Approve: func(_ context.Context, a mcp.Approval) (bool, error) {
			// A host asks its user here (or checks its own approval records).
			return a.Principal.UserID == "ana", nil
		},
	})
	if err != nil {
		panic(err)
	}
	ct, st := sdk.NewInMemoryTransports()
	// Approving changes needs write permission, as in the service.
	ana := domain.Principal{TenantID: "acme", UserID: "ana", Roles: []domain.AccessRole{domain.AccessContributor}}
	ss, _ := srv.Connect(ctx, st, ana)
	defer ss.Close()
	cs, _ := sdk.NewClient(&sdk.Implementation{Name: "client"}, nil).Connect(ctx, ct, nil)
	defer cs.Close()

	first, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: "cancel_order", Arguments: map[string]any{"id": 42}})
	text := first.Content[0].(*sdk.TextContent).Text
	fmt.Println(first.IsError, text[:strings.Index(text, ":")])
	token := first.StructuredContent.(map[string]any)["confirmation_token"]

	second, _ := cs.CallTool(ctx, &sdk.CallToolParams{Name: "cancel_order",
		Arguments: map[string]any{"id": 42, mcp.ConfirmationTokenArgument: token}})
	fmt.Println(second.IsError, second.Content[0].(*sdk.TextContent).Text)
	// Output:
	// true cancel_order was NOT run
	// false order 42 cancelled
}
