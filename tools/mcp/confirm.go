package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/internal/canonjson"
)

// ConfirmationRequired is the structured content of a write call made
// without a confirmation token: the tool did not run.
type ConfirmationRequired struct {
	ConfirmationRequired bool   `json:"confirmation_required"`
	Tool                 string `json:"tool"`
	Permission           string `json:"permission"`
	// Arguments are the arguments the token is bound to.
	Arguments json.RawMessage `json:"arguments"`
	Token     string          `json:"confirmation_token"`
	ExpiresAt time.Time       `json:"expires_at"`
}

// tokenPurpose separates this server's confirmation tokens from the
// executor's (agents.ExecutorTokenPurpose): one never verifies as the
// other, even under the same key.
const tokenPurpose = "bichat-mcp-confirmation-v1."

// confirm gates a write call: without a token it issues one and refuses
// to run; with one it verifies it, uses it up and asks the host's
// Approve. It returns nil only when the call may run.
func (c *conn) confirm(ctx context.Context, e *exposed, args json.RawMessage, token string) *sdk.CallToolResult {
	s := c.s
	name := e.spec.Name
	if !c.principal.Can(domain.PermWrite) {
		// As in the service, approving a confirmation needs write permission.
		return c.errorResult(fmt.Sprintf("%s was not run: %s/%s may not approve changes (no write permission)",
			name, c.principal.TenantID, c.principal.UserID))
	}
	canon, err := canonjson.Canonicalize(args)
	if err != nil {
		return c.errorResult(fmt.Sprintf("invalid arguments for %s: %v", name, err))
	}
	want := agents.TokenClaims{Tenant: c.principal.TenantID, User: c.principal.UserID, Tool: name, Args: agents.ArgumentsHash(canon)}
	now := s.opts.Now()
	if token == "" {
		exp := now.Add(s.opts.ConfirmationTTL)
		want.Exp = exp.Unix()
		tok, err := s.signer.Issue(want)
		if err != nil {
			return c.errorResult(fmt.Sprintf("%s was not run: %v", name, err))
		}
		req := ConfirmationRequired{ConfirmationRequired: true, Tool: name, Permission: e.spec.Permission.String(),
			Arguments: canon, Token: tok, ExpiresAt: time.Unix(want.Exp, 0).UTC()}
		b, err := json.Marshal(req)
		if err != nil {
			return c.errorResult(fmt.Sprintf("%s was not run: %v", name, err))
		}
		text := fmt.Sprintf("%s was NOT run: it is a %s tool and needs the user's approval. "+
			"Show the user what it will do with these arguments: %s. If they agree, call %s again with the same arguments "+
			"and %s %q (valid until %s).", name, e.spec.Permission, canon, name, ConfirmationTokenArgument, tok,
			req.ExpiresAt.Format(time.RFC3339))
		return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}},
			StructuredContent: json.RawMessage(b)}
	}
	cl, err := s.signer.Verify(token, want, now)
	if err != nil {
		return c.errorResult(fmt.Sprintf("%s was not run: %v. Call it without %s to get a new token.", name, err, ConfirmationTokenArgument))
	}
	if err := s.opts.ReplayGuard.Use(ctx, cl.Nonce, time.Unix(cl.Exp, 0)); err != nil {
		if !errors.Is(err, agents.ErrTokenRefused) {
			err = fmt.Errorf("%w: %v", agents.ErrTokenRefused, err)
		}
		return c.errorResult(fmt.Sprintf("%s was not run: %v. Call it without %s to get a new token.", name, err, ConfirmationTokenArgument))
	}
	ok, err := s.opts.Approve(ctx, Approval{Principal: c.principal, Tool: name, Permission: e.spec.Permission,
		Arguments: canon, Token: token, SessionID: c.sessionID})
	if err != nil {
		s.opts.Logger.Warn("mcp: approval failed", "tool", name, "tenant", c.principal.TenantID, "user", c.principal.UserID, "error", err)
		return c.errorResult(fmt.Sprintf("%s was not run: approval failed: %v", name, err))
	}
	if !ok {
		return c.errorResult(fmt.Sprintf("%s was not run: the user did not approve it", name))
	}
	return nil
}
