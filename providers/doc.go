// Package providers is bichat's model registry: it resolves model names
// and aliases to agents.Model values from the provider packages
// (providers/openai for OpenAI and compatible servers such as Ollama,
// providers/anthropic, providers/gemini), with each model's ModelInfo
// (provider, context window, max output, capabilities, prices).
//
// # The catalog
//
// Catalog is a curated table of current models of OpenAI, Anthropic and
// Google, each entry with the date its context window and prices were
// checked and where they come from. Prices change and contracts differ:
// Registry.Register overrides any entry (or adds models), and a
// "provider/model" name (e.g. "ollama/qwen3:8b") reaches any model of a
// configured provider without an entry.
//
// # Availability and choice
//
// A provider is available when its key (or, for OpenAI-compatible servers
// and Ollama, its base URL) is configured in Config; ConfigFromEnv reads
// OPENAI_API_KEY, OPENAI_BASE_URL, ANTHROPIC_API_KEY, GEMINI_API_KEY or
// GOOGLE_API_KEY, OLLAMA_HOST and BICHAT_MODEL. Registry.Model builds a
// model by name (the host's per-session choice, domain.Session.Model);
// Registry.Default and FromEnv pick one without a name, falling back to
// an offline scripted model, with a plain note saying which and why.
//
// # Fallback chains
//
// Registry.Fallback (or NewFallback) chains models: when one fails with a
// retryable error (rate limit, overload, server or connection failure)
// after its own retries and before it streamed anything, the next one
// gets the request and a FallbackEvent (kind "model.fallback") is
// published on the hooks.Bus. A failure after the first chunk is returned
// as is: an answer is never stitched together from two models.
package providers
