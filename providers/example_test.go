package providers_test

import (
	"fmt"

	"github.com/bichat-go/bichat/providers"
)

func ExampleFromEnv() {
	// With no provider variable set, FromEnv returns the offline model
	// and says so; it never prints anything itself.
	model, note, err := providers.FromEnv()
	if err != nil {
		panic(err)
	}
	if model.Info().Provider == "scripted" {
		fmt.Println("offline:", note == providers.OfflineNotice)
	}
}

func Example_registry() {
	r := providers.New(providers.Config{AnthropicKey: "sk-ant-example"})

	spec, _ := r.Lookup("sonnet")
	fmt.Println(spec.Info.Name, spec.Info.ContextWindow, spec.Info.Pricing.InputPerMTok, spec.Info.Pricing.OutputPerMTok)
	fmt.Println(r.Available("sonnet"), r.Available("gpt-5.5"))

	// A host with negotiated prices overrides the entry.
	spec.Info.Pricing.InputPerMTok = 1.6
	if err := r.Register(spec); err != nil {
		panic(err)
	}
	m, err := r.Model("claude-sonnet-5-5")
	if err != nil {
		panic(err)
	}
	fmt.Println(m.Info().Provider, m.Info().Pricing.InputPerMTok)

	// Fallback chains skip providers that are not configured.
	f, err := r.Fallback(nil, "gpt-5.5", "sonnet", "haiku")
	if err != nil {
		panic(err)
	}
	fmt.Println(len(f.Models()), f.Info().Name)

	_, err = r.Model("gpt-5.5")
	fmt.Println(err)
	// Output:
	// claude-sonnet-5-5 1000000 2 10
	// true false
	// anthropic 1.6
	// 2 claude-sonnet-5-5
	// providers: provider not configured: model "gpt-5.5" needs OPENAI_API_KEY (or OPENAI_BASE_URL for a compatible server)
}
