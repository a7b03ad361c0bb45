// Package scripted is a Model that plays back scripted turns: text,
// reasoning and tool calls, streamed in small chunks exactly as a real
// provider would stream them. It records every request it receives.
//
// Use it in tests, benchmarks and offline demos (examples/quickstart runs
// on it): no network, no API key, deterministic output.
//
//	m := &scripted.Model{Turns: []scripted.Turn{
//		{ToolCalls: []scripted.Call{scripted.CallJSON("revenue", map[string]any{"year": 2025})}},
//		{Text: "Revenue in 2025 was 1.2 M€."},
//	}}
//
// After the scripted Turns run out, Respond (when set) produces further
// turns from the request, which lets a script react to tool results.
package scripted
