package redact_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/redact"
)

const alnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"

// fake returns n deterministic pseudo-random characters of alphabet, so
// that the test file holds no key-shaped literals.
func fake(seed uint64, n int, alphabet string) string {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

var (
	urlsafe = alnum + "-_"
	upperNo = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

	openaiLegacy   = "sk-" + fake(1, 20, alnum) + "T3BlbkFJ" + fake(2, 20, alnum)
	openaiLegacy48 = "sk-" + fake(3, 48, alnum)
	openaiProj     = "sk-proj-" + fake(4, 74, urlsafe) + "T3BlbkFJ" + fake(5, 74, urlsafe)
	openaiSvc      = "sk-svcacct-" + fake(6, 58, urlsafe) + "T3BlbkFJ" + fake(7, 58, urlsafe)
	openaiAdmin    = "sk-admin-" + fake(8, 58, urlsafe) + "T3BlbkFJ" + fake(9, 58, urlsafe)
	anthropicAPI   = "sk-ant-api03-" + fake(10, 93, urlsafe) + "AA"
	anthropicAdmin = "sk-ant-admin01-" + fake(11, 93, urlsafe) + "AA"
	anthropicOther = "sk-ant-oat01-" + fake(12, 40, urlsafe)
	googleKey      = "AIza" + fake(13, 35, urlsafe)
	googleOAuth    = "ya29." + fake(14, 120, urlsafe)
	jwt            = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ." + fake(15, 43, urlsafe)
	jwtUnsigned    = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."
	awsAKIA        = "AKIA" + fake(16, 16, upperNo)
	awsASIA        = "ASIA" + fake(17, 16, upperNo)
	bearerTok      = fake(18, 40, alnum) + "._-~+/"
)

func TestBuiltinsScrub(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		in     string
		secret []string // must be gone
		keep   []string // must remain
	}{
		{"openai legacy", "OPENAI_API_KEY=" + openaiLegacy + "\n", []string{openaiLegacy[3:]}, []string{"OPENAI_API_KEY="}},
		{"openai legacy 48", "key " + openaiLegacy48 + " end", []string{openaiLegacy48}, []string{"key ", " end"}},
		{"openai project", `client = OpenAI(api_key="` + openaiProj + `")`, []string{openaiProj[8:]}, []string{"client = OpenAI("}},
		{"openai service account", "using " + openaiSvc, []string{openaiSvc[11:]}, []string{"using "}},
		{"openai admin", "admin:" + openaiAdmin + ".", []string{openaiAdmin[9:]}, []string{"admin:"}},
		{"anthropic api03", "x-api-key: " + anthropicAPI, []string{anthropicAPI[13:]}, []string{"x-api-key: "}},
		{"anthropic admin01", "ANTHROPIC_ADMIN_KEY=" + anthropicAdmin, []string{anthropicAdmin[15:]}, nil},
		{"anthropic other", "token " + anthropicOther + " rotated", []string{anthropicOther[13:]}, []string{" rotated"}},
		{"google api key in url", "https://generativelanguage.googleapis.com/v1beta/models?key=" + googleKey + "&alt=sse", []string{googleKey}, []string{"&alt=sse", "https://generativelanguage"}},
		{"google api key", "GEMINI " + googleKey, []string{googleKey}, []string{"GEMINI "}},
		{"google oauth", "access " + googleOAuth + " expires", []string{googleOAuth[5:]}, []string{" expires"}},
		{"jwt", "session=" + jwt, []string{jwt[40:]}, nil},
		{"jwt unsigned", "t " + jwtUnsigned + " x", []string{jwtUnsigned}, []string{" x"}},
		{"aws akia", "aws_access_key_id = " + awsAKIA, []string{awsAKIA}, []string{"aws_access_key_id"}},
		{"aws asia", "creds " + awsASIA + ",", []string{awsASIA}, []string{","}},
		{"bearer", "Authorization: Bearer " + bearerTok, []string{bearerTok[:40]}, []string{"Authorization: Bearer "}},
		{"bearer lowercase", "curl -H 'authorization: bearer abc123def456' https://x", []string{"abc123def456"}, []string{"authorization: bearer ", "https://x"}},
		{"bearer in prose", "sent bearer " + bearerTok + " to the API", []string{bearerTok[:40]}, []string{"sent bearer ", " to the API"}},
		{"authorization basic", "Authorization: Basic dXNlcjpwYXNzd29yZA==", []string{"dXNlcjpwYXNzd29yZA"}, []string{"Authorization: Basic "}},
		{"go header dump", "map[Authorization:[Bearer tok_9f8e7d6c5b4a] Accept:[*/*]]", []string{"tok_9f8e7d6c5b4a"}, []string{"Accept:[*/*]"}},
		{"proxy authorization", `Proxy-Authorization: "Zm9vOmJhcjEyMw=="`, []string{"Zm9vOmJhcjEyMw"}, []string{"Proxy-Authorization"}},
		{"postgres url", "dial postgres://bichat:S3cret!pw@db.internal:5432/bi?sslmode=require failed", []string{"S3cret!pw"}, []string{"postgres://bichat:", "@db.internal:5432/bi?sslmode=require failed"}},
		{"postgresql url at sign in password", "postgresql://u:p@ss@host/db", []string{"p@ss"}, []string{"postgresql://u:", "@host/db"}},
		{"mysql url", `dsn: "mysql://root:toor1234@tcp-host:3306/app"`, []string{"toor1234"}, []string{"mysql://root:"}},
		{"redis url empty user", "REDIS_URL=redis://:r3dispass@cache:6379/0", []string{"r3dispass"}, []string{"redis://:"}},
		{"https userinfo", "fetch https://alice:wonderland9@example.com/x", []string{"wonderland9"}, []string{"https://alice:", "@example.com/x"}},
		{"go mysql dsn", "open app:Pa55word@tcp(127.0.0.1:3306)/bi?parseTime=true", []string{"Pa55word"}, []string{"app:", "@tcp(127.0.0.1:3306)/bi"}},
		{"libpq bare", "host=db port=5432 user=bi password=hunter2 dbname=bi", []string{"hunter2"}, []string{"user=bi password=", " dbname=bi"}},
		{"libpq quoted", `host=db password='it\'s a secret' dbname=bi`, []string{"it\\'s a secret", "secret'"}, []string{"password='", "' dbname=bi"}},
		{"libpq spaces", "user=bi password = pa55 sslmode=disable", []string{"pa55"}, []string{" sslmode=disable"}},
		{"json password", `{"user":"bi","password":"correct horse battery"}`, []string{"correct horse battery"}, []string{`"user":"bi"`, `"password":"`}},
		{"yaml password", "database:\n  password: Xk9!mq2z\n  user: bi", []string{"Xk9!mq2z"}, []string{"user: bi"}},
		{"api_key assignment", "api_key=abcd1234efgh", []string{"abcd1234efgh"}, []string{"api_key="}},
		{"apikey colon", "apikey: Q2hhbmdlTWU5", []string{"Q2hhbmdlTWU5"}, []string{"apikey: "}},
		{"env secret", "AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", []string{"wJalrXUtnFEMI"}, []string{"AWS_SECRET_ACCESS_KEY="}},
		{"client secret", "client_secret=9f86d081884c7d65 next", []string{"9f86d081884c7d65"}, []string{" next"}},
		{"access token query", "GET /cb?code=1&access_token=ghijk98765&state=x", []string{"ghijk98765"}, []string{"&state=x", "code=1"}},
		{"secret quoted", `secret = "s p a c e d"`, []string{"s p a c e d"}, []string{`secret = "`}},
		{"go assign", `token := "abc"`, []string{`"abc"`}, []string{`token := "`}},
		{"several", "a " + googleKey + " b " + awsAKIA + " c", []string{googleKey, awsAKIA}, []string{"a ", " b ", " c"}},
	}
	r := redact.Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if !r.Contains(tt.in) {
				t.Errorf("Contains(%q) = false", tt.in)
			}
			got := r.String(tt.in)
			if !strings.Contains(got, redact.DefaultReplacement) {
				t.Errorf("String(%q) = %q: no replacement", tt.in, got)
			}
			for _, s := range tt.secret {
				if strings.Contains(got, s) {
					t.Errorf("String(%q) = %q: still holds %q", tt.in, got, s)
				}
			}
			for _, k := range tt.keep {
				if !strings.Contains(got, k) {
					t.Errorf("String(%q) = %q: lost %q", tt.in, got, k)
				}
			}
			if again := r.String(got); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
			if r.Contains(got) {
				t.Errorf("Contains(%q) = true after scrubbing", got)
			}
		})
	}
}

func TestBuiltinsLeaveOrdinaryText(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in string }{
		{"prose", "The quarterly revenue grew 12% while churn fell; see the key metrics below."},
		{"sk-learn", "We fit the model with sk-learn (scikit-learn) and a skeleton pipeline."},
		{"sk slug", "see sk-learn-tutorial-for-beginners-and-experts-alike for details"},
		{"sk-ant slug", "sk-ant-design-system-components is a package"},
		{"task ids", "task-123, risk-adjusted, desk-42, ask-me-anything"},
		{"uuid", "session 550e8400-e29b-41d4-a716-446655440000 resumed"},
		{"git sha", "commit a3e4fa5d0c1e2f3b4a5968778695a4b3c2d1e0f9 (HEAD)"},
		{"sha256", "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
		{"png base64", "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="},
		{"short tokens", "ids abc, x1, q=7, k=v"},
		{"url without password", "https://example.com:8443/path?q=1#frag and postgres://db.internal:5432/bi"},
		{"url with user only", "ssh://git@github.com/org/repo.git"},
		{"password the word", "Forgot your password? Reset the password from the settings page."},
		{"password prose colon", "Password: see the vault.\nSecret: nothing here"},
		{"secret prose", "Note the secret: it works because the token: budget is fine"},
		{"bearer prose", "the bearer of bad news; Bearer tokens are described in RFC 6750"},
		{"authorization prose", "Authorization: required for admins"},
		{"tokens counts", "prompt_tokens=1234 completion_tokens=56 max_tokens: 4096 tokens: 100000"},
		{"sql", "SELECT region, sum(amount) FROM sales WHERE year = 2024 GROUP BY region"},
		{"json clean", `{"query":"select 1","limit":10,"tags":["a","b"]}`},
		{"aws-ish lowercase", "akia1234567890123456 is not a key id"},
		{"email", "mail alice@example.com about postgres"},
		{"ya29 word", "ya29 and ya29. alone"},
		{"eyJ alone", "eyJ is base64 for {\""},
		{"AIza short", "AIzaShort"},
		{"redacted already", "password=[REDACTED] and Bearer [REDACTED] and postgres://u:[REDACTED]@h"},
		{"empty", ""},
	}
	r := redact.Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := r.String(tt.in); got != tt.in {
				t.Errorf("String(%q) = %q, want unchanged", tt.in, got)
			}
			if r.Contains(tt.in) {
				t.Errorf("Contains(%q) = true", tt.in)
			}
		})
	}
}

func TestHostPatternsAndSecrets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts redact.Options
		in   string
		want string
	}{
		{
			name: "whole match",
			opts: redact.Options{NoBuiltins: true, Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-\d{8}`)}},
			in:   "account acct-12345678 closed",
			want: "account [REDACTED] closed",
		},
		{
			name: "secret group",
			opts: redact.Options{NoBuiltins: true, Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-(?P<secret>\d{8})`)}},
			in:   "account acct-12345678 closed",
			want: "account acct-[REDACTED] closed",
		},
		{
			name: "alternative secret groups",
			opts: redact.Options{NoBuiltins: true, Patterns: []*regexp.Regexp{regexp.MustCompile(`pin=(?P<secret>\d{4})|pin:"(?P<secret>[^"]*)"`)}},
			in:   `pin=1234 pin:"9876"`,
			want: `pin=[REDACTED] pin:"[REDACTED]"`,
		},
		{
			name: "unnamed groups still replace the whole match",
			opts: redact.Options{NoBuiltins: true, Patterns: []*regexp.Regexp{regexp.MustCompile(`(emp)-(\d+)`)}},
			in:   "emp-42 and emp-7",
			want: "[REDACTED] and [REDACTED]",
		},
		{
			name: "case-insensitive host pattern",
			opts: redact.Options{NoBuiltins: true, Patterns: []*regexp.Regexp{regexp.MustCompile(`(?i)internal-[a-z]+`)}},
			in:   "INTERNAL-Alpha internal-beta",
			want: "[REDACTED] [REDACTED]",
		},
		{
			name: "literal secrets, short ones ignored",
			opts: redact.Options{NoBuiltins: true, Secrets: []string{"hunter2-prod", "abc", "", "hunter2-prod"}},
			in:   "pw hunter2-prod abc hunter2-prodhunter2-prod",
			want: "pw [REDACTED] abc [REDACTED][REDACTED]",
		},
		{
			name: "overlapping literals merge",
			opts: redact.Options{NoBuiltins: true, Secrets: []string{"abcdefgh", "efghijkl"}},
			in:   "x abcdefghijkl y",
			want: "x [REDACTED] y",
		},
		{
			name: "custom replacement",
			opts: redact.Options{Replacement: "***", Secrets: []string{"topsecret"}},
			in:   "topsecret and postgres://u:pw123456@h/db",
			want: "*** and postgres://u:***@h/db",
		},
		{
			name: "no builtins keeps keys",
			opts: redact.Options{NoBuiltins: true, Secrets: []string{"mine-only"}},
			in:   "AIza" + fake(13, 35, urlsafe) + " mine-only",
			want: "AIza" + fake(13, 35, urlsafe) + " [REDACTED]",
		},
		{
			name: "builtins and host pattern together",
			opts: redact.Options{Patterns: []*regexp.Regexp{regexp.MustCompile(`cust_[0-9]{6}`)}},
			in:   "cust_123456 password=x1",
			want: "[REDACTED] password=[REDACTED]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := redact.New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := r.String(tt.in)
			if got != tt.want {
				t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
			}
			if again := r.String(got); again != got {
				t.Errorf("not idempotent: %q -> %q", got, again)
			}
			if !r.Contains(tt.in) {
				t.Errorf("Contains(%q) = false", tt.in)
			}
		})
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		opts redact.Options
		want string
	}{
		{"nil pattern", redact.Options{Patterns: []*regexp.Regexp{regexp.MustCompile(`x+`), nil}}, "Patterns[1] is nil"},
		{"empty match", redact.Options{Patterns: []*regexp.Regexp{regexp.MustCompile(`a*`)}}, "matches the empty string"},
		{"optional everything", redact.Options{Patterns: []*regexp.Regexp{regexp.MustCompile(`(?:key)?`)}}, "matches the empty string"},
		{"secret in replacement", redact.Options{Replacement: "<hidden-value>", Secrets: []string{"hidden"}}, "Secrets[0] occurs in the replacement"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := redact.New(tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "redact: ") {
				t.Fatalf("New = %v, %v; want error containing %q", r, err, tt.want)
			}
		})
	}
}

func TestNilRedactor(t *testing.T) {
	t.Parallel()
	var r *redact.Redactor
	in := "password=hunter2 " + googleKey
	if got := r.String(in); got != in {
		t.Errorf("String = %q", got)
	}
	if got := r.Func()(in); got != in {
		t.Errorf("Func() = %q", got)
	}
	b := []byte(in)
	if got := r.Bytes(b); &got[0] != &b[0] {
		t.Error("Bytes returned a copy")
	}
	raw := json.RawMessage(`{"password":"x"}`)
	if got := r.JSON(raw); string(got) != string(raw) {
		t.Errorf("JSON = %s", got)
	}
	err := errors.New(in)
	if got := r.Error(err); got != err {
		t.Errorf("Error = %v", got)
	}
	if r.Contains(in) {
		t.Error("Contains = true")
	}
	var buf bytes.Buffer
	h := slog.Handler(slog.NewTextHandler(&buf, nil))
	if r.Handler(h) != h {
		t.Error("Handler wrapped h")
	}
}

func TestStringCleanReturnsInputWithoutAllocating(t *testing.T) {
	r, err := redact.New(redact.Options{Secrets: []string{"host-own-secret"}, Patterns: []*regexp.Regexp{regexp.MustCompile(`cust_\d{6}`)}})
	if err != nil {
		t.Fatal(err)
	}
	clean := cleanText(4096)
	if got := r.String(clean); got != clean {
		t.Fatalf("clean text changed: %q", got)
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.String(clean) }); n != 0 {
		t.Errorf("String on clean text allocates %v times, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { _ = r.Contains(clean) }); n != 0 {
		t.Errorf("Contains on clean text allocates %v times, want 0", n)
	}
	b := []byte(clean)
	if n := testing.AllocsPerRun(100, func() { _ = r.Bytes(b) }); n != 0 {
		t.Errorf("Bytes on clean text allocates %v times, want 0", n)
	}
}

// cleanText returns n bytes of realistic log and prose text without
// secrets, including words that pass the prefilter (key, token, secret,
// bearer, ://, password) so that the patterns themselves run.
func cleanText(n int) string {
	const para = "The key metrics for Q3: revenue per region rose 4.2% and the token budget held at 8192 tokens. " +
		"See https://example.com/reports/q3?region=emea for the secret sauce behind the bearer of good news; " +
		"reset your password from the settings page. SELECT region, sum(amount) FROM sales GROUP BY 1; " +
		"run 550e8400-e29b-41d4-a716-446655440000 finished in 1.2s with 3 tool calls.\n"
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(para)
	}
	return b.String()[:n]
}

func TestBytes(t *testing.T) {
	t.Parallel()
	r := redact.Default()
	clean := []byte("nothing to see")
	if got := r.Bytes(clean); &got[0] != &clean[0] {
		t.Error("Bytes copied clean input")
	}
	in := []byte("password=hunter22 end")
	orig := string(in)
	got := r.Bytes(in)
	if string(got) != "password=[REDACTED] end" {
		t.Errorf("Bytes = %q", got)
	}
	if string(in) != orig {
		t.Errorf("Bytes modified its input: %q", in)
	}
	if r.Bytes(nil) != nil {
		t.Error("Bytes(nil) != nil")
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		in   string
		want string
	}{
		{"clean", `{"a":1,"b":"x"}`, `{"a":1,"b":"x"}`},
		{"secret key value", `{"user":"bi","password":"hunter2","port":5432}`, `{"user":"bi","password":"[REDACTED]","port":5432}`},
		{"camel and nested", `{"cfg":{"apiKey":"plainwords","accessToken":"abc","limits":[1,2]},"z":true}`, `{"cfg":{"apiKey":"[REDACTED]","accessToken":"[REDACTED]","limits":[1,2]},"z":true}`},
		{"key order and spacing kept", "{\n  \"z\": \"postgres://u:pw@h/db\",\n  \"a\": null\n}", "{\n  \"z\": \"postgres://u:[REDACTED]@h/db\",\n  \"a\": null\n}"},
		{"escaped newline hides nothing", `{"note":"line1\npassword=abc123"}`, `{"note":"line1\npassword=[REDACTED]"}`},
		{"escaped quotes", `{"dsn":"host=db password='x\"y' user=bi"}`, `{"dsn":"host=db password='[REDACTED]' user=bi"}`},
		{"array of strings", `["Bearer abcdef123456","ok"]`, `["Bearer [REDACTED]","ok"]`},
		{"non-string secret-key value kept", `{"token_count":12,"password":null,"secret":""}`, `{"token_count":12,"password":null,"secret":""}`},
		{"secret-key array left to text rules", `{"tokens":["a","b"]}`, `{"tokens":["a","b"]}`},
		{"key holding a secret", `{"` + googleKey + `":1}`, `{"[REDACTED]":1}`},
		{"html kept unescaped", `{"q":"a<b && password=x1"}`, `{"q":"a<b && password=[REDACTED]"}`},
		{"scalar string", `"sk-ant-api03-` + fake(10, 40, urlsafe) + `"`, `"[REDACTED]"`},
	}
	r := redact.Default()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := json.RawMessage(tt.in)
			got := r.JSON(in)
			if string(got) != tt.want {
				t.Errorf("JSON(%s) = %s, want %s", tt.in, got, tt.want)
			}
			if !json.Valid(got) {
				t.Errorf("JSON(%s) = %s: invalid", tt.in, got)
			}
			if string(in) != tt.in {
				t.Errorf("JSON modified its input: %s", in)
			}
			if again := r.JSON(got); string(again) != string(got) {
				t.Errorf("not idempotent: %s -> %s", got, again)
			}
			var a, b any
			if err := json.Unmarshal([]byte(tt.in), &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got, &b); err != nil {
				t.Fatal(err)
			}
			if shape(a) != shape(b) {
				t.Errorf("structure changed: %s vs %s", shape(a), shape(b))
			}
		})
	}
	t.Run("clean returns input", func(t *testing.T) {
		t.Parallel()
		in := json.RawMessage(`{"a":"b"}`)
		if got := r.JSON(in); &got[0] != &in[0] {
			t.Error("JSON copied clean input")
		}
	})
	t.Run("invalid scrubbed as text", func(t *testing.T) {
		t.Parallel()
		got := r.JSON(json.RawMessage(`{"password": "x1", `))
		if strings.Contains(string(got), "x1") {
			t.Errorf("JSON = %s", got)
		}
	})
}

// shape describes v's structure without its string contents: object keys
// count, types and nesting.
func shape(v any) string {
	switch x := v.(type) {
	case map[string]any:
		var b strings.Builder
		b.WriteString("{")
		for _, k := range slices.Sorted(maps.Keys(x)) {
			b.WriteString(shape(x[k]) + ",")
		}
		return b.String() + "}" + string(rune('0'+len(x)))
	case []any:
		var b strings.Builder
		b.WriteString("[")
		for _, e := range x {
			b.WriteString(shape(e) + ",")
		}
		return b.String() + "]"
	case string:
		return "s"
	case float64:
		return "n"
	case bool:
		return "b"
	case nil:
		return "null"
	}
	return "?"
}

type codeError struct{ code int }

func (e *codeError) Error() string { return "code error" }

func TestError(t *testing.T) {
	t.Parallel()
	r := redact.Default()
	if r.Error(nil) != nil {
		t.Error("Error(nil) != nil")
	}
	clean := errors.New("connection refused")
	if got := r.Error(clean); got != clean {
		t.Errorf("clean error replaced: %v", got)
	}
	base := &codeError{code: 7}
	err := errors.Join(fs.ErrNotExist, base)
	wrapped := errorsWrap(err, "dial postgres://bi:S3cretpw@db/bi")
	got := r.Error(wrapped)
	if strings.Contains(got.Error(), "S3cretpw") {
		t.Errorf("Error() = %q", got.Error())
	}
	if !strings.Contains(got.Error(), "postgres://bi:[REDACTED]@db/bi") {
		t.Errorf("Error() = %q: context lost", got.Error())
	}
	if !errors.Is(got, fs.ErrNotExist) || !errors.Is(got, wrapped) {
		t.Error("errors.Is lost the original")
	}
	var ce *codeError
	if !errors.As(got, &ce) || ce.code != 7 {
		t.Error("errors.As lost the original")
	}
	if errors.Unwrap(got) != wrapped {
		t.Error("Unwrap does not return the original")
	}
	if again := r.Error(got); again != got {
		t.Error("scrubbing a scrubbed error changed it")
	}
}

type wrapErr struct {
	msg string
	err error
}

func (e *wrapErr) Error() string { return e.msg + ": " + e.err.Error() }
func (e *wrapErr) Unwrap() error { return e.err }

func errorsWrap(err error, msg string) error { return &wrapErr{msg: msg, err: err} }

func TestConcurrentUse(t *testing.T) {
	t.Parallel()
	r, err := redact.New(redact.Options{Secrets: []string{"shared-secret"}})
	if err != nil {
		t.Fatal(err)
	}
	in := "shared-secret and password=abc123 and " + googleKey
	want := r.String(in)
	done := make(chan string)
	for range 8 {
		go func() {
			var got string
			for range 200 {
				got = r.String(in)
			}
			done <- got
		}()
	}
	for range 8 {
		if got := <-done; got != want {
			t.Errorf("concurrent String = %q, want %q", got, want)
		}
	}
}

// TestDefaultShared checks Default is one redactor with the builtins.
func TestDefaultShared(t *testing.T) {
	t.Parallel()
	if a, b := redact.Default(), redact.Default(); a != b {
		t.Error("Default returns different redactors")
	}
	if !redact.Default().Contains(awsAKIA) {
		t.Error("Default lacks the built-in patterns")
	}
}
