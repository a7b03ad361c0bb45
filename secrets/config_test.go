package secrets_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/secrets"
)

func TestConfigNeverPrintsSecrets(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		dsn     string
		secrets []string
		shown   string // the redacted DSN, when the form is known
	}{
		{"url", "postgres://alice:s3cret-Pw@db.example.com:5432/sales?sslmode=require", []string{"s3cret-Pw"},
			"postgres://alice:xxxxx@db.example.com:5432/sales?sslmode=require"},
		{"url with escaped characters", "postgresql://alice:p%40ss%2Fw%3Ard@db/sales", []string{"p%40ss%2Fw%3Ard", "p@ss/w:rd"},
			"postgresql://alice:xxxxx@db/sales"},
		{"url with password parameter", "postgres://db/sales?user=alice&password=QueryPw1&sslpassword=KeyPw2", []string{"QueryPw1", "KeyPw2"},
			"postgres://db/sales?password=xxxxx&sslpassword=xxxxx&user=alice"},
		{"url with an unescaped slash in the password", "postgres://alice:12/34@db/sales", []string{"12/34", "/34"}, "[redacted DSN]"},
		{"url with an unescaped at sign in the password", "postgres://alice:pa@ss@db/sales", []string{"pa@ss"}, "postgres://alice:xxxxx@db/sales"},
		{"url with a fragment", "postgres://alice:FragPw@db/sales#FragmentPw", []string{"FragPw", "FragmentPw"}, "postgres://alice:xxxxx@db/sales"},
		{"key=value", "host=db user=alice password=KvPw9 dbname=sales", []string{"KvPw9"},
			"host=db user=alice password=xxxxx dbname=sales"},
		{"key=value quoted", `host=db password='Quoted \' Pw' sslpassword = 'Other Pw' dbname=sales`, []string{"Quoted", "Other Pw"},
			"host=db password=xxxxx sslpassword=xxxxx dbname=sales"},
		{"key=value unterminated quote", `host=db password='Unterminated Pw`, []string{"Unterminated"}, "[redacted DSN]"},
		{"key=value stray quote", `host=db password=ab'cd`, []string{"ab'cd"}, "[redacted DSN]"},
		{"no scheme user:pass@host", "alice:NoSchemePw@db:5432/sales", []string{"NoSchemePw"}, "[redacted DSN]"},
		{"sqlite path", "/var/lib/bichat/sales.db", nil, "/var/lib/bichat/sales.db"},
		{"sqlite uri", "file:sales.db?mode=ro&_pragma_key=SqlKey1", []string{"SqlKey1"}, "file:sales.db?_pragma_key=xxxxx&mode=ro"},
		{"unparsable url", "postgres://alice:Bad%zzPw@db/sales", []string{"Bad%zzPw", "zzPw"}, "[redacted DSN]"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			cfg := secrets.Config{DSN: c.dsn, Extra: map[string]string{"sslkey_pem": "ExtraSecretValue", "role": "ExtraRoleValue"}}
			if got := cfg.Redacted(); got != c.shown {
				t.Errorf("Redacted() = %q, want %q", got, c.shown)
			}
			var logged bytes.Buffer
			slog.New(slog.NewJSONHandler(&logged, nil)).Info("connect", "config", cfg)
			js, err := json.Marshal(cfg)
			if err != nil {
				t.Fatal(err)
			}
			nested, err := json.Marshal(struct{ C secrets.Config }{cfg})
			if err != nil {
				t.Fatal(err)
			}
			outputs := map[string]string{
				"String":       cfg.String(),
				"GoString":     cfg.GoString(),
				"%v":           fmt.Sprintf("%v", cfg),
				"%+v":          fmt.Sprintf("%+v", cfg),
				"%#v":          fmt.Sprintf("%#v", cfg),
				"%s":           fmt.Sprintf("%s", cfg),
				"%q":           fmt.Sprintf("%q", cfg),
				"%x":           fmt.Sprintf("%x", cfg),
				"%v pointer":   fmt.Sprintf("%v", &cfg),
				"%+v in slice": fmt.Sprintf("%+v", []secrets.Config{cfg}),
				"json":         string(js),
				"nested json":  string(nested),
				"slog":         logged.String(),
			}
			for what, out := range outputs {
				for _, s := range append(c.secrets, "ExtraSecretValue", "ExtraRoleValue") {
					if strings.Contains(out, s) {
						t.Errorf("%s output %q holds the secret %q", what, out, s)
					}
				}
				if c.dsn != c.shown && strings.Contains(out, c.dsn) {
					t.Errorf("%s output holds the whole DSN", what)
				}
			}
			if !strings.Contains(outputs["String"], "sslkey_pem=xxxxx") || !strings.Contains(outputs["json"], `"sslkey_pem":"xxxxx"`) {
				t.Errorf("the Extra keys are not listed: %s / %s", outputs["String"], outputs["json"])
			}
		})
	}
}
