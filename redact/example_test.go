package redact_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"

	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/redact"
)

func ExampleRedactor_String() {
	r, err := redact.New(redact.Options{
		// The host's own credentials are always scrubbed, whatever their shape.
		Secrets: []string{"warehouse-pw-2024"},
		// Host patterns: only the group named "secret" is replaced.
		Patterns: []*regexp.Regexp{regexp.MustCompile(`acct-(?P<secret>\d{8})`)},
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.String("dial postgres://bi:warehouse-pw-2024@db:5432/bi: timeout"))
	fmt.Println(r.String("curl -H 'Authorization: Bearer abc123.def456' https://api.example.com"))
	fmt.Println(r.String("host=db user=bi password='s3cret' dbname=bi"))
	fmt.Println(r.String("refund for acct-12345678 approved"))
	fmt.Println(r.String("we use sk-learn for the skeleton of task-123")) // ordinary text is left alone
	// Output:
	// dial postgres://bi:[REDACTED]@db:5432/bi: timeout
	// curl -H 'Authorization: Bearer [REDACTED]' https://api.example.com
	// host=db user=bi password='[REDACTED]' dbname=bi
	// refund for acct-[REDACTED] approved
	// we use sk-learn for the skeleton of task-123
}

func ExampleRedactor_Handler() {
	// Drop the time so the output is stable.
	noTime := func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	h := slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{ReplaceAttr: noTime})
	logger := slog.New(redact.Default().Handler(h))

	logger.Info("connecting", "dsn", "postgres://bi:hunter2@db/bi")
	logger.With("auth", "Bearer abcdef123456").Warn("retrying",
		"error", errors.New("provider said: invalid api_key=abcd1234efgh"))
	// Output:
	// level=INFO msg=connecting dsn=postgres://bi:[REDACTED]@db/bi
	// level=WARN msg=retrying auth="Bearer [REDACTED]" error="provider said: invalid api_key=[REDACTED]"
}

func ExampleRedactor_Error() {
	base := errors.New("connect postgres://bi:hunter2@db/bi: refused")
	err := redact.Default().Error(fmt.Errorf("store: %w", base))
	fmt.Println(err)
	fmt.Println(errors.Is(err, base))
	// Output:
	// store: connect postgres://bi:[REDACTED]@db/bi: refused
	// true
}

func ExampleRedactor_Func() {
	// One redactor for the event bus (and agents.Config.Redact, the audit
	// chain...): handlers only ever see scrubbed events.
	bus := hooks.New(hooks.Options{Redact: redact.Default().Func()})
	defer bus.Close()
	hooks.Listen(bus, func(_ context.Context, e *hooks.SQLQuery) error {
		fmt.Println(e.SQL)
		return nil
	})
	hooks.Listen(bus, func(_ context.Context, e *hooks.ToolStart) error {
		fmt.Println(string(e.Arguments))
		return nil
	})
	ctx := context.Background()
	bus.Publish(ctx, &hooks.SQLQuery{SQL: "SELECT * FROM dblink('host=db password=hunter22', 'select 1')"})
	bus.Publish(ctx, &hooks.ToolStart{Tool: "fetch", Arguments: []byte(`{"url":"https://bi:pw123@api.example.com/x","api_key":"abcd1234efgh"}`)})
	// Output:
	// SELECT * FROM dblink('host=db password=[REDACTED]', 'select 1')
	// {"url":"https://bi:[REDACTED]@api.example.com/x","api_key":"[REDACTED]"}
}
