// Package otel traces bichat runs with OpenTelemetry. A [Tracer] is a
// hooks.Handler: subscribe it to the bus the executor (or bichat.Service)
// publishes on, and every run becomes a span tree on the host's
// TracerProvider, following the OpenTelemetry GenAI semantic conventions
// (https://opentelemetry.io/docs/specs/semconv/gen-ai/). The package name
// clashes with go.opentelemetry.io/otel, so alias one of them:
//
//	import bichatotel "github.com/bichat-go/bichat/hooks/otel"
//
//	tracer := bichatotel.New(tp, bichatotel.Options{}) // tp: the host's *sdktrace.TracerProvider
//	if _, err := bus.Subscribe(tracer); err != nil { ... }
//
// # The span tree
//
//	invoke_agent {agent}          one per run (AgentStart .. AgentFinish / AgentError)
//	├── turn {n}                  one per model turn, from its first request to the next turn's
//	│   ├── chat {model}          one per model call attempt (LLMRequest .. LLMResponse)
//	│   └── execute_tool {tool}   one per tool call (ToolStart .. ToolFinish / ToolError)
//	│       └── invoke_agent {sub-agent}   a sub-agent run started by the task tool
//	└── ...
//
// The run span is named "invoke_agent" alone for the unnamed top-level
// agent. A top-level run is a child of the span in the context its
// agent.start was published with: the executor publishes with the run's
// context (values kept, cancellation dropped), so a host that starts a
// span around Executor.Run, or around the request that starts a
// bichat.Service run, gets the run under it. Otherwise the run is a root
// span. Spans carry the events' own times (trace.WithTimestamp),
// so an asynchronous subscription (hooks.Bus.SubscribeAsync with the
// default single worker, which keeps events in order) gives the same
// trace as a synchronous one.
//
// Attributes:
//   - run: gen_ai.operation.name=invoke_agent, gen_ai.agent.name,
//     gen_ai.request.model, gen_ai.conversation.id (the session id),
//     bichat.run_id, bichat.parent_run_id, bichat.tenant_id,
//     bichat.message_id, bichat.resumed; at the end bichat.finish_reason
//     ("end_turn", "final_answer", "interrupted", ...), bichat.turns,
//     bichat.tool_calls, gen_ai.usage.input_tokens and output_tokens
//     (the run's totals) and bichat.cost_usd. A failed run has an error
//     status, error.type set to the failure code ("model_error",
//     "cancelled", ...) and an exception event. An interrupted run (a
//     question or confirmation for the user) is not an error: it has a
//     bichat.interrupt event naming the reason, tool and call.
//   - turn: bichat.turn.
//   - model call: gen_ai.operation.name=chat, gen_ai.provider.name,
//     gen_ai.request.model, gen_ai.response.model,
//     gen_ai.response.finish_reasons, gen_ai.usage.input_tokens (cached
//     part included), gen_ai.usage.output_tokens,
//     gen_ai.usage.cache_read.input_tokens and
//     gen_ai.usage.cache_creation.input_tokens (when non-zero),
//     gen_ai.response.time_to_first_chunk (seconds), bichat.cost_usd,
//     bichat.attempt (1, 2, ... for retries), bichat.turn. A failed
//     attempt has an error status and error.type ("timeout", "cancelled",
//     the provider error's Go type, or "_OTHER").
//   - tool call: gen_ai.operation.name=execute_tool, gen_ai.tool.name,
//     gen_ai.tool.call.id, gen_ai.tool.type=function,
//     bichat.tool.summary_bytes, bichat.truncated, bichat.tool.artifacts; a
//     failed call has an error status and error.type set to the
//     tool.error code ("error", "timeout", "invalid_arguments", ...).
//     The call's SQL statements (hooks.SQLQuery) are bichat.sql.query span
//     events (db.system.name, db.response.returned_rows, bichat.truncated,
//     bichat.duration_ms, error.type), its sandbox jobs bichat.sandbox.run
//     events, its artifacts bichat.artifact.save events.
//
// # Content
//
// Prompts, tool arguments, SQL text, error messages of tools and answers
// may hold the users' data, so they are recorded only with
// Options.CaptureContent (gen_ai.tool.call.arguments, db.query.text, ...).
// Without it, spans carry ids, names, counts, sizes, durations, usage,
// costs and error codes. Model and run failure messages (provider errors,
// which never carry credentials) are recorded either way, as the slog
// handler logs them.
//
// # Bounded memory
//
// The Tracer keeps state only for open runs: when a run's agent.finish or
// agent.error arrives, every span of it that is still open (a model call
// or tool call cut short by cancellation) is ended with an error status
// (error.type "unfinished"), and the run is forgotten. At most
// Options.MaxOpenRuns runs are tracked; beyond that the oldest is ended
// with error.type "evicted". [Tracer.OpenRuns] reports the count.
package otel
