package context_test

import (
	stdctx "context"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	bcontext "github.com/bichat-go/bichat/context"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/hooks"
	"github.com/bichat-go/bichat/providers/scripted"
)

func Example() {
	blocks, err := bcontext.NewBuilder(nil).
		Rules("You are a BI analyst. Answer with numbers.").
		Datasets(domain.Dataset{Name: "sales.orders", Source: "sales.orders",
			Fields: []domain.Field{{Name: "id", Type: "bigint"}, {Name: "total", Type: "numeric"}}}).
		Recipes(bcontext.Recipe{Question: "total revenue", SQL: []string{"SELECT sum(total) FROM sales.orders"}, Successes: 2}).
		History(agents.UserMessage("Hi"), agents.AssistantMessage("Hello! What would you like to know?")).
		Turn(bcontext.TextTurn("What is our total revenue?")).
		Blocks()
	if err != nil {
		panic(err)
	}
	r, err := bcontext.NewOpenAIRenderer("gpt-4o")
	if err != nil {
		panic(err)
	}
	out, err := bcontext.NewCompiler().Compile(stdctx.Background(), blocks, r,
		bcontext.Policy{ContextWindow: 128000, CompletionReserve: 4096, Overflow: bcontext.OverflowTruncate})
	if err != nil {
		panic(err)
	}
	rep := out.Report
	fmt.Println("tokens:", rep.Tokens, "of", rep.Budget)
	for _, k := range bcontext.Kinds {
		if n, ok := rep.ByKind[k]; ok {
			fmt.Printf("  %s: %d\n", k, n)
		}
	}
	fmt.Println("messages:", len(out.Request.Messages), "cache breakpoint after message", out.Request.Cache.Messages)
	fmt.Printf("cacheable system prefix: %q\n", out.Request.System[:out.Request.Cache.SystemPrefix][:42])
	// Output:
	// tokens: 98 of 123904
	//   pinned: 11
	//   reference: 34
	//   memory: 23
	//   history: 16
	//   turn: 9
	// messages: 3 cache breakpoint after message [1]
	// cacheable system prefix: "You are a BI analyst. Answer with numbers."
}

// ExampleRequestBuilder wires the compiler into an agents.Executor: every
// model call is compiled from the executor's prompt, tools, history and run
// messages plus the host's session blocks, and reported on the bus.
func ExampleRequestBuilder() {
	model := &scripted.Model{Turns: []scripted.Turn{{Text: "Revenue was 1.2 M€."}}}
	renderer, err := bcontext.RendererFor(model.Info())
	if err != nil {
		panic(err)
	}
	rb := bcontext.NewRequestBuilder(renderer, bcontext.PolicyFor(model.Info(), bcontext.OverflowTruncate))
	rb.Session = func(ctx stdctx.Context, t *agents.TurnContext) ([]bcontext.Block, error) {
		// Per question: dataset definitions, join hints, recipes, KB hits,
		// the UI state... (from kb.Catalog and the host).
		return bcontext.NewBuilder(nil).
			Datasets(domain.Dataset{Name: "sales.orders", Source: "sales.orders", Fields: []domain.Field{{Name: "total", Type: "numeric"}}}).
			State(bcontext.State{Page: "dashboard"}).
			Blocks()
	}
	bus := hooks.New(hooks.Options{})
	defer bus.Close()
	hooks.Listen(bus, func(_ stdctx.Context, e *hooks.ContextCompile) error {
		fmt.Printf("context.compile: %d tokens, reference %d, dropped %d\n", e.Tokens, e.ByKind["reference"], e.Dropped)
		return nil
	})
	rb.Bus = bus
	ex, err := agents.NewExecutor(agents.Config{Model: model, Builder: rb, System: "You are a BI analyst.", DisableAskUser: true, DisableFinalAnswer: true})
	if err != nil {
		panic(err)
	}
	for ev, err := range ex.Run(stdctx.Background(), agents.Input{Message: agents.UserMessage("Revenue?")}) {
		if err != nil {
			panic(err)
		}
		if f, ok := ev.(*agents.RunFinished); ok {
			fmt.Println(f.Text)
		}
	}
	// Output:
	// context.compile: 51 tokens, reference 23, dropped 0
	// Revenue was 1.2 M€.
}
