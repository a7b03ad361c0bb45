// Package bichat is an embeddable SDK for conversational business
// intelligence: a host application assembles its own "chat with your data"
// from an agent that finds datasets, runs read-only SQL, analyses data in a
// sandbox and streams every step to the host's UI.
//
// This package is the facade. [New] wires repositories (in memory by
// default), a model, tools and an event bus into a [Service]; the service
// owns sessions and messages, enforces tenant isolation, ownership and
// permissions on every call, and runs the agent:
//
//	svc, err := bichat.New(bichat.Config{
//		Agent: agents.Config{Model: model, System: "You are a BI analyst.", Tools: tools},
//	})
//	sess, err := svc.CreateSession(ctx, principal, bichat.SessionOptions{Title: "Q3 review"})
//	for ev, err := range svc.Send(ctx, principal, sess.ID, "Revenue by region in Q3?") {
//		...
//	}
//
// [Service.Send] persists the user message and an assistant placeholder
// atomically, claims the placeholder so exactly one runner produces it,
// streams the run's events, records them in the run log (so a client that
// lost its stream can [Service.Watch] or [Service.Replay] from the last
// sequence number it saw) and persists the final message: its parts, tool
// calls with results, token usage, datasets used and artifacts. A run that
// fails or is cancelled marks its message failed with a reason; a run that
// waits for the user (a question, or a confirmation of a write tool)
// leaves the message awaiting input with a checkpoint that
// [Service.Resume], [Service.Approve] and [Service.Deny] continue.
//
// # Runs belong to the service: Send, Watch and Cancel
//
// A run belongs to the Service, not to the call that started it. Send,
// Resume, Approve and Deny start the run on a goroutine of the service,
// with a context detached from the caller's (it keeps the caller's
// values, is bounded by Limits.RunTimeout and ends with [Service.Close]),
// and the iterator they return watches it. A loop that breaks, or whose
// context is cancelled (a browser that went away), stops watching; the run
// goes on, is recorded and completes. Then:
//
//   - [Service.Watch] streams a message's run from any sequence number:
//     the run log first, then the live run, without a gap or a duplicate,
//     up to the terminal event (RunFinished, RunFailed, or Interrupted
//     for a run that waits for the user). It serves a reconnecting
//     browser, a second tab, or another replica: a run of another process
//     sharing the store is followed through the log (woken by the store's
//     notifications, e.g. PostgreSQL LISTEN/NOTIFY, with polling as the
//     fallback).
//   - [Service.Cancel] is the only way to stop a run (besides
//     Limits.RunTimeout and Close): the message fails with code
//     "cancelled" and every watcher, including one that starts later, gets
//     that RunFailed. Cancelling a run of another process goes through the
//     store and takes effect within a third of Limits.RunLease.
//   - [CancelOnStop] gives a caller that cannot watch again (a CLI) the
//     old behaviour: its loop owns the run, and stopping it cancels the
//     run.
//
// # Liveness: leases and the reaper
//
// A run holds a lease on its message (Limits.RunLease, 15 seconds by
// default) and renews it every third of that. A process that dies or hangs
// stops renewing; [Service.RunReaper], a loop the host starts in each
// process (go svc.RunReaper(ctx)), fails the message of a run whose lease
// expired with code "lease_expired", ends its run log with that RunFailed
// (so its watchers stop) and frees the session. A question asked in a
// session whose previous run's lease expired does the same at once
// instead of waiting for the reaper. A runner that was merely slow finds
// its lease taken when it next renews or saves, and writes nothing more.
// The reaper also fails messages whose question or confirmation nobody
// answered within Limits.InterruptTTL (code "expired"; answering later
// yields [ErrExpired]). [Service.RecoverStale] fails, by age
// (Limits.StaleAfter), messages claimed without a lease: a host store
// without a RunRepository (Store.Runs nil) keeps that older behaviour,
// and Cancel then reaches only runs of its own process.
//
// # What survives what
//
// The run log is written in batches (group commit: at most 64 events or
// 50 ms per write) and always before a terminal or Interrupted event is
// published, and before the message is finalised. So:
//
//   - A dropped connection or a loop that stops reading loses nothing: the
//     run completes and Watch shows all of it.
//   - A crash of the process loses at most the last unwritten batch of the
//     run log (text deltas, tool events), never a terminal event; the
//     message is failed by the reaper of another process after one lease
//     (or, with one process, by the reaper after the restart), and its
//     watchers get that RunFailed.
//   - Close (a graceful shutdown) cancels the process's runs and records
//     them as failed with code "shutdown".
//
// A batch is encoded into one buffer that is reused for the next batch,
// so a host's RunEventRepository must copy what it keeps (the
// AppendRunEvents contract). Under load, runs starting in this process
// come first: while a Send is preparing a run that has not published its
// first event yet, runs already streaming yield the processor every
// other event, so with many runs started at once each one's first event
// is not queued behind the others' answers.
//
// What is kept where, with the defaults (all of it in process memory,
// lost on restart, unless the host supplies durable stores such as
// domain/postgres):
//
//   - Sessions, messages, checkpoints (pending questions and
//     confirmations), artifact metadata, run leases and the run log:
//     Config.Store, by default one domain/memory store.
//   - Artifact content (charts, workbooks, reports): Config.ArtifactStore,
//     by default memory.ArtifactStore; domain/fsartifacts keeps files on
//     disk.
//   - Query results that later tool calls name (result_1, result_2, ...):
//     the tools.Results given to the SQL, Python, chart and export tools,
//     by default tools.MemoryResults (the last 10 per session), in process
//     memory: a later question that names result_1 after a restart gets a
//     "not found" the model can recover from by querying again.
//   - Confirmation tokens: signed with Agent.ConfirmationKey, by default a
//     random key per Service, so a pending confirmation cannot be approved
//     after a restart (nor by another process) unless the host sets the
//     key; the guard that makes each token work once is in memory too.
//   - Runs in progress and their live watchers: in the memory of the
//     process that runs them; other processes see them through the store
//     (leases, the run log, cancel requests).
//   - Knowledge (catalog, recipes, documents) is whatever the host passes
//     in Config.Knowledge; the in-memory implementations are lost on
//     restart.
//
// # HTTP API
//
// [NewHandler] mounts a complete chat backend on net/http (Go 1.22
// routing, no framework): sessions (list with paging, search and sort;
// create, get, rename, delete), messages, runs streamed as server-sent
// events, answers to questions, approval or denial of confirmations,
// cancellation, artifacts served as attachments, models, recipes, and an
// OpenAPI 3.1 document of all of it at {prefix}/openapi.json. The host
// authenticates (HandlerOptions.Authenticate); the principal's permissions
// apply per route (a viewer reads only: 403). Posting a question starts a
// run that belongs to the service and answers 202 with the question and
// the answer's placeholder; GET {prefix}/messages/{id}/events replays the
// run and follows it live, and a client that reconnects with
// Last-Event-ID (or ?after=seq) resumes without a gap or a duplicate, on
// any replica sharing the store. Events are message_start, text,
// reasoning, tool_call, tool_result, token_update, provider_item and the
// terminal interrupt, confirmation_required, message_complete or
// message_error; the id is the run seq; a heartbeat comment goes out every
// 15 s. Every error is JSON {"error":{"code","message","fields"}}, with
// [HTTPStatus] giving the status of any Service error; a 500 says only
// "internal error" and the cause is logged. Hosts with their own routes
// use [WriteSSE] and [WriteError] directly.
//
// # Operations
//
// Every model call is priced (the model's prices; cached input and cache
// writes apart) and booked into the message (Metadata.CostUSD) and
// Config.Costs, a domain.CostLedger per session and per tenant per UTC day
// that [Service.Costs] reads back. Config.Budgets ([Budgets]) stop a run
// before a model call its message, session or tenant-day budget does not
// allow (code "budget_exceeded", [ErrBudgetExceeded]). Config.Quota (a
// quota.Limiter) limits requests and tokens per minute and concurrent runs
// per tenant and per user; a refusal is a [RateLimitError] (HTTP 429 with
// Retry-After) and creates nothing. Config.Attributes maps the caller to
// the data-scoping attributes every tool call carries (see
// tools/sqldb/postgres Options.Settings for row-level security).
// Config.Redactor (redact.Default() unless Config.DisableRedaction)
// scrubs secrets from prompts, streamed events, stored messages, errors
// and logs. Metrics, traces and the audit chain are bus handlers:
// hooks/prometheus, hooks/otel and hooks/audit.
//
// The layers below are importable on their own: package agents (models,
// tools, the executor), hooks (the event bus), domain (entities and
// repositories) and their adapters.
package bichat
