package audit_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/hooks/audit"
)

// Example records a question and the SQL it ran into a JSONL log through
// the event bus, verifies the chain, then shows that editing the log is
// detected.
func Example() {
	dir, err := os.MkdirTemp("", "audit-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "audit.jsonl")

	sink, err := audit.OpenJSONL(path, audit.JSONLOptions{})
	if err != nil {
		log.Fatal(err)
	}
	defer sink.Close()
	rec, err := audit.New(sink, audit.Options{})
	if err != nil {
		log.Fatal(err)
	}
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	if _, err := bus.Subscribe(rec, audit.Kinds()...); err != nil {
		log.Fatal(err)
	}

	ctx := context.Background()
	m := hooks.Meta{Time: time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC), TenantID: "acme", UserID: "ann"}
	bus.Publish(ctx, &hooks.MessageSave{Meta: m, Role: domain.RoleUser, Text: "Revenue in 2025?"})
	bus.Publish(ctx, &hooks.SQLQuery{Meta: m, Tool: "sql_query", Dialect: "postgres", SQL: "SELECT sum(total) FROM orders", Rows: 1})
	bus.Publish(ctx, &hooks.MessageSave{Meta: m, Role: domain.RoleAssistant, Status: domain.StatusComplete, Text: "$1.2M"})

	for e, err := range sink.Entries(ctx, "acme") {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(e.Seq, e.Type, string(e.Data))
	}
	fmt.Println("verify:", audit.VerifyAll(ctx, sink))

	// Someone rewrites the answer in the file.
	b, _ := os.ReadFile(path)
	_ = os.WriteFile(path, []byte(strings.Replace(string(b), "$1.2M", "$9.9M", 1)), 0o600)
	var be *audit.BreakError
	if err := audit.VerifyAll(ctx, sink); errors.As(err, &be) {
		fmt.Println("tampered: seq", be.Seq, "-", be.Reason)
	}
	// Output:
	// 1 question {"text":"Revenue in 2025?"}
	// 2 sql {"call_id":"","dialect":"postgres","rows":1,"sql":"SELECT sum(total) FROM orders","tool":"sql_query","truncated":false}
	// 3 answer {"cost_usd":0,"text":"$1.2M","usage":{"cached_tokens":0,"completion_tokens":0,"prompt_tokens":0,"reasoning_tokens":0,"total_tokens":0}}
	// verify: <nil>
	// tampered: seq 3 - hash mismatch: the entry's content was changed (recorded seq 3)
}
