// Package context decides what the model sees each turn: it assembles
// content-addressed blocks, budgets them with exact offline token counts,
// and lays them out for a provider so that prompt caches hit.
//
// (The package is named context after its job; import the standard
// library's context under another name, e.g. stdctx "context", where both
// are needed.)
//
// # Blocks
//
// A Block is one piece of context: a Kind (where it goes), a codec (how its
// payload is validated, canonicalized and rendered as text), a Sensitivity,
// an optional Position (chronological kinds) and a SHA-256 Hash over all of
// these and the canonical JSON of the payload (internal/canonjson). Equal
// content has an equal hash: blocks are deduplicated by it, and token
// counts are cached by it.
//
// Kinds render in this order: pinned (system rules), reference (tool
// schemas, dataset YAML, join hints), memory (recipes, knowledge-base
// hits), state (the host's UI snapshot), tool_output (query results),
// history (earlier messages, and the summary of compacted ones) and turn
// (the user's new message, then this run's tool calls and results). Inside
// a kind, chronological kinds are ordered by Position and the others by
// hash, so shuffled inputs give byte-identical requests.
//
// Codecs are looked up in a Codecs value (NewCodecs holds the built-ins;
// there is no global registry). Add your own payload types by implementing
// Codec (or with NewCodec) and registering it. A Builder makes blocks
// fluently and collects errors instead of panicking.
//
// # Tokens
//
// Tokenizer counts exactly like OpenAI's tiktoken for o200k_base and
// cl100k_base with the BPE ranks embedded in the binary: nothing is
// downloaded, ever. Anthropic and Gemini publish no offline tokenizer;
// their renderers count with o200k_base times a documented safety margin
// (DefaultAnthropicMargin, DefaultGeminiMargin), which the provider's own
// count of the previous request replaces once known (WithCalibration; the
// RequestBuilder does it from agents.TurnContext.PrevUsage).
//
// # Compiling
//
// Compiler.Compile orders and deduplicates the blocks, applies the
// Policy's sensitivity ceiling (drop or redact, reported), counts tokens
// (cached per renderer and block hash), enforces per-kind maximums and
// minimums and the overall budget (ContextWindow - CompletionReserve) with
// the overflow strategy — error (ErrBudgetExceeded with the numbers),
// truncate (oldest tool outputs and history first; pinned, tool schemas and
// the turn never), or compact (a Summarizer condenses the oldest history
// into one summary block placed before the remaining history; a new summary
// replaces an old one) — and renders the request. The Report gives tokens
// per kind, what was dropped, compacted or redacted, the remaining budget
// and the hash and size of the cacheable prefix.
//
// # Renderers
//
// OpenAIRenderer, AnthropicRenderer and GeminiRenderer produce the
// provider-neutral agents.Request plus agents.CacheHints (the end of the
// pinned+reference system prefix, the last history message and, during a
// run, the last message); the provider packages encode the wire format.
// Their ContextAfterHistory option moves memory, state and tool output from
// the system prompt to a message at the end of the request, which keeps the
// history cached when recipes, hits or state change from question to
// question.
//
// # Executor
//
// RequestBuilder implements agents.RequestBuilder: set it as
// agents.Config.Builder and every turn is compiled, with a
// hooks.ContextCompile event on the bus. Blocks are built once and reused:
// within a run, those of earlier turns; across runs, the tool-schema blocks
// (keyed by tool name and checked against description and schema) and the
// system-prompt block (keyed by its text), so a new run of the same agent
// builds only its own messages.
package context
