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

// tokenClaims is what a confirmation token binds.
type tokenClaims struct {
	V      int    `json:"v"`
	Tenant string `json:"t"`
	User   string `json:"u"`
	Tool   string `json:"tool"`
	Call   string `json:"c"`
	Args   string `json:"a"` // hex SHA-256 of the arguments
	Exp    int64  `json:"exp"`
	Nonce  string `json:"n"`
}

type signer struct {
	key []byte
}

func newSigner(key []byte) (*signer, error) {
	if len(key) == 0 {
		key = make([]byte, 32)
		if _, err := rand.Read(key); err != nil {
			return nil, fmt.Errorf("agents: confirmation key: %w", err)
		}
	} else if len(key) < 16 {
		return nil, errors.New("agents: ConfirmationKey must be at least 16 bytes")
	}
	return &signer{key: append([]byte(nil), key...)}, nil
}

func argsHash(args []byte) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}

func (s *signer) issue(c tokenClaims) (string, error) {
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

func (s *signer) mac(payload string) []byte {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte("bichat-confirmation-v1."))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// verify checks signature, expiry and binding; it does not consume the
// nonce.
func (s *signer) verify(token string, want tokenClaims, now time.Time) (tokenClaims, error) {
	p, sig, ok := strings.Cut(token, ".")
	if !ok || p == "" || sig == "" {
		return tokenClaims{}, ErrTokenMalformed
	}
	gotMAC, err := base64.RawURLEncoding.Strict().DecodeString(sig)
	if err != nil {
		return tokenClaims{}, ErrTokenMalformed
	}
	if subtle.ConstantTimeCompare(gotMAC, s.mac(p)) != 1 {
		return tokenClaims{}, ErrTokenForged
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(p)
	if err != nil {
		return tokenClaims{}, ErrTokenMalformed
	}
	var c tokenClaims
	if err := json.Unmarshal(raw, &c); err != nil || c.V != 1 || c.Nonce == "" {
		return tokenClaims{}, ErrTokenMalformed
	}
	if now.Unix() >= c.Exp {
		return c, ErrTokenExpired
	}
	if c.Tenant != want.Tenant || c.User != want.User || c.Tool != want.Tool || c.Call != want.Call || c.Args != want.Args {
		return c, ErrTokenMismatch
	}
	return c, nil
}
