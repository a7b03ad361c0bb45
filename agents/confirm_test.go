package agents

// Internal test of the confirmation-token signer and the in-memory replay
// guard. Helpers of this file are prefixed with ct.

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var ctNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const ctAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

func ctSigner(t *testing.T, key string) *TokenSigner {
	t.Helper()
	s, err := NewTokenSigner([]byte(key), ExecutorTokenPurpose)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctClaims() TokenClaims {
	return TokenClaims{Tenant: "acme", User: "ann", Tool: "delete_report", Call: "call_1",
		Args: ArgumentsHash([]byte(`{"id":"r1"}`)), Exp: ctNow.Add(10 * time.Minute).Unix()}
}

func ctIssue(t *testing.T, s *TokenSigner, c TokenClaims) string {
	t.Helper()
	tok, err := s.Issue(c)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSignerValidToken(t *testing.T) {
	t.Parallel()
	s := ctSigner(t, "0123456789abcdef")
	want := ctClaims()
	tok := ctIssue(t, s, want)
	if strings.Count(tok, ".") != 1 {
		t.Errorf("token %q: want payload.signature", tok)
	}
	got, err := s.Verify(tok, want, ctNow)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	if got.V != 1 || got.Nonce == "" || got.Tenant != want.Tenant || got.User != want.User || got.Tool != want.Tool ||
		got.Call != want.Call || got.Args != want.Args || got.Exp != want.Exp {
		t.Errorf("claims = %+v", got)
	}
	// One second before expiry still verifies.
	if _, err := s.Verify(tok, want, time.Unix(want.Exp-1, 0)); err != nil {
		t.Errorf("verify 1s before expiry: %v", err)
	}
	// Each token gets its own nonce.
	tok2 := ctIssue(t, s, want)
	got2, err := s.Verify(tok2, want, ctNow)
	if err != nil || tok2 == tok || got2.Nonce == got.Nonce {
		t.Errorf("second token %q nonce %q: %v; want a fresh nonce", tok2, got2.Nonce, err)
	}
	// The claims are not secret but are bound: the payload decodes.
	p, _, _ := strings.Cut(tok, ".")
	raw, err := base64.RawURLEncoding.DecodeString(p)
	if err != nil || !strings.Contains(string(raw), `"tool":"delete_report"`) {
		t.Errorf("payload %s, %v", raw, err)
	}
}

func TestSignerTamperedToken(t *testing.T) {
	t.Parallel()
	s := ctSigner(t, "0123456789abcdef0123456789abcdef")
	want := ctClaims()
	tok := ctIssue(t, s, want)
	dot := strings.IndexByte(tok, '.')
	for i := 0; i < len(tok); i++ {
		if i == dot {
			continue
		}
		if i == len(tok)-1 {
			// The last signature character carries unused low bits; see
			// TestSignerSignatureEncodingIsCanonical.
			continue
		}
		for _, r := range ctAlphabet + "=.+/!" {
			if byte(r) == tok[i] {
				continue
			}
			bad := tok[:i] + string(r) + tok[i+1:]
			_, err := s.Verify(bad, want, ctNow)
			if !errors.Is(err, ErrTokenRefused) {
				t.Fatalf("byte %d replaced by %q: verify = %v, want a refusal", i, r, err)
			}
			if !errors.Is(err, ErrTokenForged) && !errors.Is(err, ErrTokenMalformed) {
				t.Fatalf("byte %d replaced by %q: verify = %v, want forged or malformed", i, r, err)
			}
			// Replacing a base64 character in the payload always breaks
			// the MAC: it is computed over the encoded payload.
			if i < dot && strings.ContainsRune(ctAlphabet, r) && !errors.Is(err, ErrTokenForged) {
				t.Fatalf("payload byte %d replaced by %q: verify = %v, want ErrTokenForged", i, r, err)
			}
		}
	}
}

func TestSignerSignatureEncodingIsCanonical(t *testing.T) {
	s := ctSigner(t, "0123456789abcdef0123456789abcdef")
	want := ctClaims()
	tok := ctIssue(t, s, want)
	i := len(tok) - 1
	for _, r := range ctAlphabet {
		if byte(r) == tok[i] {
			continue
		}
		if _, err := s.Verify(tok[:i]+string(r), want, ctNow); err == nil {
			t.Errorf("last character %q replaced by %q: the altered token verifies", tok[i], r)
		}
	}
}

func TestSignerOtherKey(t *testing.T) {
	t.Parallel()
	a := ctSigner(t, "key-a-0123456789")
	b := ctSigner(t, "key-b-0123456789")
	want := ctClaims()
	if _, err := b.Verify(ctIssue(t, a, want), want, ctNow); !errors.Is(err, ErrTokenForged) {
		t.Errorf("token of another key: %v, want ErrTokenForged", err)
	}
	// Random keys: two signers made without a key differ.
	r1 := ctSigner(t, "")
	r2 := ctSigner(t, "")
	tok := ctIssue(t, r1, want)
	if _, err := r1.Verify(tok, want, ctNow); err != nil {
		t.Errorf("random-key signer rejects its own token: %v", err)
	}
	if _, err := r2.Verify(tok, want, ctNow); !errors.Is(err, ErrTokenForged) {
		t.Errorf("token of another random-key signer: %v, want ErrTokenForged", err)
	}
	// The same key bytes verify across signers (another process).
	c := ctSigner(t, "key-a-0123456789")
	if _, err := c.Verify(ctIssue(t, a, want), want, ctNow); err != nil {
		t.Errorf("same key, other signer: %v", err)
	}
}

func TestNewSignerKeys(t *testing.T) {
	t.Parallel()
	for _, n := range []int{1, 8, 15} {
		if _, err := NewTokenSigner(make([]byte, n), ExecutorTokenPurpose); err == nil {
			t.Errorf("NewTokenSigner accepted a %d-byte key", n)
		}
	}
	for _, n := range []int{16, 32, 100} {
		if _, err := NewTokenSigner(make([]byte, n), ExecutorTokenPurpose); err != nil {
			t.Errorf("NewTokenSigner(%d bytes): %v", n, err)
		}
	}
	for _, key := range [][]byte{nil, {}} {
		s, err := NewTokenSigner(key, ExecutorTokenPurpose)
		if err != nil || len(s.key) < 16 {
			t.Errorf("NewTokenSigner(%v) = %v, %v; want a random key", key, s, err)
		}
	}
	// The signer keeps its own copy of the key.
	key := []byte("0123456789abcdef")
	s, err := NewTokenSigner(key, ExecutorTokenPurpose)
	if err != nil {
		t.Fatal(err)
	}
	tok := ctIssue(t, s, ctClaims())
	key[0] = 'X'
	if _, err := s.Verify(tok, ctClaims(), ctNow); err != nil {
		t.Errorf("changing the caller's key slice broke the signer: %v", err)
	}
}

func TestSignerExpiry(t *testing.T) {
	t.Parallel()
	s := ctSigner(t, "0123456789abcdef")
	want := ctClaims()
	tok := ctIssue(t, s, want)
	exp := time.Unix(want.Exp, 0)
	for _, now := range []time.Time{exp, exp.Add(500 * time.Millisecond), exp.Add(time.Hour)} {
		if _, err := s.Verify(tok, want, now); !errors.Is(err, ErrTokenExpired) || !errors.Is(err, ErrTokenRefused) {
			t.Errorf("verify at exp%+v: %v, want ErrTokenExpired", now.Sub(exp), err)
		}
	}
}

func TestSignerMismatch(t *testing.T) {
	t.Parallel()
	s := ctSigner(t, "0123456789abcdef")
	issued := ctClaims()
	tok := ctIssue(t, s, issued)
	tests := []struct {
		name string
		edit func(*TokenClaims)
	}{
		{"tenant", func(c *TokenClaims) { c.Tenant = "other" }},
		{"user", func(c *TokenClaims) { c.User = "bob" }},
		{"tool", func(c *TokenClaims) { c.Tool = "drop_table" }},
		{"call", func(c *TokenClaims) { c.Call = "call_2" }},
		{"args hash", func(c *TokenClaims) { c.Args = ArgumentsHash([]byte(`{"id":"r2"}`)) }},
		{"empty tenant", func(c *TokenClaims) { c.Tenant = "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := issued
			tc.edit(&want)
			_, err := s.Verify(tok, want, ctNow)
			if !errors.Is(err, ErrTokenMismatch) || !errors.Is(err, ErrTokenRefused) {
				t.Errorf("verify = %v, want ErrTokenMismatch", err)
			}
		})
	}
	// Expiry and nonce in want are not compared.
	want := issued
	want.Exp, want.Nonce = 1, "whatever"
	if _, err := s.Verify(tok, want, ctNow); err != nil {
		t.Errorf("verify with other Exp/Nonce in want: %v", err)
	}
}

func TestSignerMalformed(t *testing.T) {
	t.Parallel()
	s := ctSigner(t, "0123456789abcdef")
	good := ctIssue(t, s, ctClaims())
	p, sig, _ := strings.Cut(good, ".")
	// A correctly signed payload that is not valid claims.
	signed := func(payload string) string {
		enc := base64.RawURLEncoding.EncodeToString([]byte(payload))
		return enc + "." + base64.RawURLEncoding.EncodeToString(s.mac(enc))
	}
	tests := []struct {
		name string
		tok  string
		want error
	}{
		{"empty", "", ErrTokenMalformed},
		{"dot only", ".", ErrTokenMalformed},
		{"a.b", "a.b", ErrTokenMalformed},
		{"no dot", "abcdef", ErrTokenMalformed},
		{"no dot, real payload", p, ErrTokenMalformed},
		{"empty payload", "." + sig, ErrTokenMalformed},
		{"empty signature", p + ".", ErrTokenMalformed},
		{"two dots", p + "." + sig + ".x", ErrTokenMalformed},
		{"padded signature", p + "." + sig + "=", ErrTokenMalformed},
		{"standard base64 signature", p + "." + strings.NewReplacer("-", "+", "_", "/").Replace(sig) + "+", ErrTokenMalformed},
		{"signed non-base64 payload", func() string {
			enc := "!!!"
			return enc + "." + base64.RawURLEncoding.EncodeToString(s.mac(enc))
		}(), ErrTokenMalformed},
		{"signed non-JSON payload", signed("not json"), ErrTokenMalformed},
		{"signed wrong version", signed(`{"v":2,"t":"acme","u":"ann","tool":"delete_report","c":"call_1","exp":9999999999,"n":"x"}`), ErrTokenMalformed},
		{"signed without nonce", signed(`{"v":1,"t":"acme","u":"ann","tool":"delete_report","c":"call_1","exp":9999999999}`), ErrTokenMalformed},
		{"short signature", p + ".AAAA", ErrTokenForged},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Verify(tc.tok, ctClaims(), ctNow)
			if !errors.Is(err, tc.want) || !errors.Is(err, ErrTokenRefused) {
				t.Errorf("verify(%q) = %v, want %v", tc.tok, err, tc.want)
			}
		})
	}
}

func TestTokenErrorsMatchRefused(t *testing.T) {
	t.Parallel()
	all := []error{ErrTokenForged, ErrTokenExpired, ErrTokenMismatch, ErrTokenReplayed, ErrTokenMalformed}
	for i, e := range all {
		if !errors.Is(e, ErrTokenRefused) {
			t.Errorf("%v does not match ErrTokenRefused", e)
		}
		for j, other := range all {
			if i != j && errors.Is(e, other) {
				t.Errorf("%v matches %v", e, other)
			}
		}
	}
}

func TestArgsHash(t *testing.T) {
	t.Parallel()
	// SHA-256 of the empty string.
	if got := ArgumentsHash(nil); got != "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" {
		t.Errorf("ArgumentsHash(nil) = %s", got)
	}
	if ArgumentsHash([]byte(`{"a":1}`)) == ArgumentsHash([]byte(`{"a": 1}`)) {
		t.Error("argsHash ignores bytes: the hash must bind the exact arguments")
	}
}

func TestMemoryReplayGuard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var g MemoryReplayGuard // the zero value is ready
	exp := time.Now().Add(time.Hour)
	if err := g.Use(ctx, "n1", exp); err != nil {
		t.Fatalf("first Use: %v", err)
	}
	for i := 0; i < 2; i++ {
		if err := g.Use(ctx, "n1", exp); !errors.Is(err, ErrTokenReplayed) || !errors.Is(err, ErrTokenRefused) {
			t.Errorf("replay %d: %v, want ErrTokenReplayed", i, err)
		}
	}
	if err := g.Use(ctx, "n2", exp); err != nil {
		t.Errorf("other nonce: %v", err)
	}
}

func TestMemoryReplayGuardConcurrent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var g MemoryReplayGuard
	exp := time.Now().Add(time.Hour)
	const n = 50
	var ok, replayed atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// Every goroutine also uses a nonce of its own.
			if err := g.Use(ctx, fmt.Sprintf("own-%d", i), exp); err != nil {
				t.Errorf("own nonce %d: %v", i, err)
			}
			switch err := g.Use(ctx, "shared", exp); {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, ErrTokenReplayed):
				replayed.Add(1)
			default:
				t.Errorf("Use: %v", err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ok.Load() != 1 || replayed.Load() != n-1 {
		t.Errorf("%d succeeded and %d were replays; want exactly 1 and %d", ok.Load(), replayed.Load(), n-1)
	}
}

func TestMemoryReplayGuardPrunes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var g MemoryReplayGuard
	now := time.Now()
	// Expired more than a minute ago: prunable.
	if err := g.Use(ctx, "old", now.Add(-2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	// Expired, but within the minute of grace: kept.
	if err := g.Use(ctx, "recent", now.Add(-10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := g.Use(ctx, "live", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	// Any later Use prunes.
	if err := g.Use(ctx, "later", now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	g.mu.Lock()
	_, oldKept := g.used["old"]
	size := len(g.used)
	g.mu.Unlock()
	if oldKept || size != 3 {
		t.Errorf("after pruning: old kept %v, %d entries; want old gone and 3 left", oldKept, size)
	}
	// The pruned nonce is forgotten, so it can be used again (its token is
	// expired, which verify reports before the guard is consulted).
	if err := g.Use(ctx, "old", now.Add(-2*time.Minute)); err != nil {
		t.Errorf("Use of the pruned nonce: %v", err)
	}
	for _, n := range []string{"recent", "live", "later"} {
		if err := g.Use(ctx, n, now.Add(time.Hour)); !errors.Is(err, ErrTokenReplayed) {
			t.Errorf("Use(%s) after pruning: %v, want ErrTokenReplayed", n, err)
		}
	}
}

// A token issued for one purpose never verifies for another, even under
// the same key; a signer needs a purpose.
func TestTokenSignerPurpose(t *testing.T) {
	t.Parallel()
	key := []byte("0123456789abcdef")
	exec, err := NewTokenSigner(key, ExecutorTokenPurpose)
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewTokenSigner(key, "bichat-mcp-confirmation-v1.")
	if err != nil {
		t.Fatal(err)
	}
	want := ctClaims()
	if _, err := other.Verify(ctIssue(t, exec, want), want, ctNow); !errors.Is(err, ErrTokenForged) {
		t.Errorf("executor token verified for another purpose: %v, want ErrTokenForged", err)
	}
	if _, err := exec.Verify(ctIssue(t, exec, want), want, ctNow); err != nil {
		t.Errorf("own purpose: %v", err)
	}
	if _, err := NewTokenSigner(key, ""); err == nil {
		t.Error("NewTokenSigner accepted an empty purpose")
	}
}
