package agents

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Errors of confirmation tokens. Each also matches ErrTokenRefused.
var (
	ErrTokenRefused   = errors.New("agents: confirmation token refused")
	ErrTokenForged    = fmt.Errorf("%w: signature does not verify", ErrTokenRefused)
	ErrTokenExpired   = fmt.Errorf("%w: expired", ErrTokenRefused)
	ErrTokenMismatch  = fmt.Errorf("%w: not issued for this user, tool or arguments", ErrTokenRefused)
	ErrTokenReplayed  = fmt.Errorf("%w: already used", ErrTokenRefused)
	ErrTokenMalformed = fmt.Errorf("%w: malformed", ErrTokenRefused)
)

// ReplayGuard remembers used confirmation tokens so each works once.
// The default is in-memory and per process; hosts running several
// processes should back it with shared storage (the service additionally
// takes each checkpoint atomically, so a replay against the same
// checkpoint fails there too).
type ReplayGuard interface {
	// Use records nonce as used until expires. It returns ErrTokenReplayed
	// when nonce was used before.
	Use(ctx context.Context, nonce string, expires time.Time) error
}

// MemoryReplayGuard is an in-memory ReplayGuard. The zero value is ready.
type MemoryReplayGuard struct {
	mu   sync.Mutex
	used map[string]time.Time
}

// Use implements ReplayGuard; it also forgets nonces whose tokens expired.
func (g *MemoryReplayGuard) Use(_ context.Context, nonce string, expires time.Time) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := time.Now()
	if g.used == nil {
		g.used = map[string]time.Time{}
	}
	for n, exp := range g.used {
		if now.After(exp.Add(time.Minute)) {
			delete(g.used, n)
		}
	}
	if _, ok := g.used[nonce]; ok {
		return ErrTokenReplayed
	}
	g.used[nonce] = expires
	return nil
}

// TokenClaims is what a confirmation token binds: who may use it
// (tenant and user), for which tool call and arguments, until when. The
// executor fills Call with the model's call id; other gates (tools/mcp)
// leave it empty.
type TokenClaims struct {
	V      int    `json:"v"`
	Tenant string `json:"t"`
	User   string `json:"u"`
	Tool   string `json:"tool"`
	Call   string `json:"c,omitempty"`
	Args   string `json:"a"`   // ArgumentsHash of the arguments
	Exp    int64  `json:"exp"` // Unix seconds
	Nonce  string `json:"n"`   // set by Issue
}

// TokenSigner issues and verifies confirmation tokens: the claims, base64
// encoded, and an HMAC-SHA256 over them keyed by the host's key and
// prefixed by a purpose string, so a token issued for one purpose (the
// executor's, an MCP server's) never verifies for another. The executor
// uses one internally; hosts and other gates that must never run a write
// on a model's word alone (tools/mcp) use their own.
type TokenSigner struct {
	key     []byte
	purpose string
}

// ExecutorTokenPurpose is the purpose string of the executor's tokens.
const ExecutorTokenPurpose = "bichat-confirmation-v1."

// NewTokenSigner returns a signer for purpose with key (at least 16
// bytes; nil or empty: a random key, so tokens verify only in this
// process). The signer keeps its own copy of key.
func NewTokenSigner(key []byte, purpose string) (*TokenSigner, error) {
	if purpose == "" {
		return nil, errors.New("agents: a token signer needs a purpose")
	}
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("agents: confirmation key: %w", err)
		}
	} else if len(key) < 16 {
		return nil, errors.New("agents: ConfirmationKey must be at least 16 bytes")
	}
	return &TokenSigner{key: append([]byte(nil), key...), purpose: purpose}, nil
}

// ArgumentsHash is the hex SHA-256 of the exact argument bytes a token
// binds (canonicalise JSON first when equivalent spellings must match).
func ArgumentsHash(args []byte) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

// Issue signs c with a fresh random nonce.
func (s *TokenSigner) Issue(c TokenClaims) (string, error) {
	var nonce [16]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return "", fmt.Errorf("agents: token nonce: %w", err)
	}
	c.V = 1
	c.Nonce = base64.RawURLEncoding.EncodeToString(nonce[:])
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	p := base64.RawURLEncoding.EncodeToString(payload)
	return p + "." + base64.RawURLEncoding.EncodeToString(s.mac(p)), nil
}

func (s *TokenSigner) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(s.purpose))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// Verify checks a token's signature, expiry (at now) and binding to
// want's tenant, user, tool, call and arguments, and returns its claims.
// The errors match ErrTokenRefused: ErrTokenMalformed, ErrTokenForged,
// ErrTokenExpired, ErrTokenMismatch. It does not consume the nonce: pass
// it to a ReplayGuard so each token works once.
func (s *TokenSigner) Verify(token string, want TokenClaims, now time.Time) (TokenClaims, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || p == "" || sig == "" {
		return TokenClaims{}, ErrTokenMalformed
	}
	gotMAC, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil {
		return TokenClaims{}, ErrTokenMalformed
	}
	if subtle.ConstantTimeCompare(gotMAC, s.mac(p)) != 1 {
		return TokenClaims{}, ErrTokenForged
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil {
		return TokenClaims{}, ErrTokenMalformed
	}
	var c TokenClaims
	if err := json.Unmarshal(raw, &c); err != nil || c.V != 1 || c.Nonce == "" {
		return TokenClaims{}, ErrTokenMalformed
	}
	if now.Unix() >= c.Exp {
		return c, ErrTokenExpired
	}
	if c.Tenant != want.Tenant || c.User != want.User || c.Tool != want.Tool || c.Call != want.Call || c.Args != want.Args {
		return c, ErrTokenMismatch
	}
	return c, nil
}
