// Package hooks is bichat's event bus: every step of a run (agent start and
// finish, each model request and response, each tool call, context
// compilation, session and message changes, interrupts) is published as a
// typed [Event] so that hosts can log, meter, bill and audit without touching
// the agent loop.
//
// The shape follows log/slog: a front-end type, [Bus], and a tiny [Handler]
// interface that adapters implement. Handlers run synchronously in the
// publisher's goroutine unless wrapped in an [Async] handler, which has a
// bounded queue and an explicit overflow policy ([Block] or [DropNewest]).
// A handler's error or panic is never swallowed: it goes to the bus's error
// handler (by default, slog at error level). Neither is a dropped event:
// [Bus.Dropped] counts the events published after Close and those dropped
// by the bus's Async handlers (a monotonic counter, ready to export as a
// metric), and an Async handler whose queue overflows reports it through
// the error handler as a [DropError], at most once per
// AsyncOptions.DropReportInterval (default one second) with the number
// dropped since the previous report.
//
// Subscribe by kind with [Bus.Subscribe], or by Go type with [Listen]:
//
//	bus := hooks.New(hooks.Options{})
//	defer bus.Close()
//	hooks.Listen(bus, func(ctx context.Context, e *hooks.ToolFinish) error {
//		fmt.Println(e.Tool, e.Duration)
//		return nil
//	})
//
// [NewSlogHandler] logs every event as a structured record. Other handlers
// live in sub-packages: hooks/prometheus (metrics), hooks/otel (traces
// following the OpenTelemetry GenAI conventions) and hooks/audit (a
// tamper-evident audit chain).
//
// Events carry what handlers need to meter and audit: model calls with
// tokens, cost and time to first token, tool calls with their arguments,
// SQL statements ([SQLQuery], refused ones included), sandbox jobs
// ([SandboxRun]), artifacts with their hash ([ArtifactSave]), policy
// decisions ([Decision]: confirmations, budgets, quotas), budget stops
// ([BudgetExceeded]) and quota refusals ([QuotaExceeded]). Free text
// (questions, answers, arguments, SQL, error messages) is scrubbed of
// secrets before any handler sees it when the bus is created with
// Options.Redact (use redact.Redactor.Func()): every event type of bichat
// implements [Scrubber].
package hooks
