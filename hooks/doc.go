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
// [NewSlogHandler] logs every event as a structured record.
package hooks
