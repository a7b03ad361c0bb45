package hooks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/hooks"
)

func ExampleListen() {
	bus := hooks.New(hooks.Options{})
	defer bus.Close()

	// Listen subscribes by Go type: the function only sees *ToolFinish
	// events, with typed access to their fields.
	unsubscribe, err := hooks.Listen(bus, func(ctx context.Context, e *hooks.ToolFinish) error {
		fmt.Printf("run %s: tool %s finished in %v (%d summary bytes)\n", e.RunID, e.Tool, e.Duration, e.SummaryBytes)
		return nil
	})
	if err != nil {
		panic(err)
	}

	ctx := context.Background()
	bus.Publish(ctx, &hooks.ToolStart{Meta: hooks.Meta{RunID: "r1"}, Tool: "sql"}) // not a ToolFinish: ignored
	bus.Publish(ctx, &hooks.ToolFinish{Meta: hooks.Meta{RunID: "r1"}, Tool: "sql", Duration: 1500 * time.Millisecond, SummaryBytes: 512})

	unsubscribe()
	bus.Publish(ctx, &hooks.ToolFinish{Meta: hooks.Meta{RunID: "r1"}, Tool: "chart"}) // no longer listening
	// Output:
	// run r1: tool sql finished in 1.5s (512 summary bytes)
}

func ExampleBus_Subscribe() {
	bus := hooks.New(hooks.Options{
		OnError: func(he *hooks.HandlerError) { fmt.Println("handler failed:", he) },
	})
	defer bus.Close()

	// A handler for two kinds.
	if _, err := bus.Subscribe(hooks.HandlerFunc(func(ctx context.Context, e hooks.Event) error {
		fmt.Println("tool event:", e.Kind())
		return nil
	}), hooks.KindToolStart, hooks.KindToolError); err != nil {
		panic(err)
	}
	// A catch-all handler (no kinds) that fails on errors.
	if _, err := bus.Subscribe(hooks.HandlerFunc(func(ctx context.Context, e hooks.Event) error {
		if te, ok := e.(*hooks.ToolError); ok {
			return fmt.Errorf("audit: %s failed with %s", te.Tool, te.Code)
		}
		fmt.Println("audit:", e.Kind())
		return nil
	})); err != nil {
		panic(err)
	}

	ctx := context.Background()
	bus.Publish(ctx, &hooks.AgentStart{Model: "m"})
	bus.Publish(ctx, &hooks.ToolStart{Tool: "sql"})
	bus.Publish(ctx, &hooks.ToolError{Tool: "sql", Code: "timeout"})
	// Output:
	// audit: agent.start
	// tool event: tool.start
	// audit: tool.start
	// tool event: tool.error
	// handler failed: hooks: handler for tool.error: audit: sql failed with timeout
}
