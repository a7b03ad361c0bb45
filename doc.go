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
// lost its stream can [Service.Replay] from the last sequence number it
// saw) and
// persists the final message: its parts, tool calls with results, token
// usage, datasets used and artifacts. A run that fails or is cancelled marks
// its message failed with a reason; a run that waits for the user (a
// question, or a confirmation of a write tool) leaves the message
// awaiting input with a checkpoint that [Service.Resume], [Service.Approve]
// and [Service.Deny] continue. [Service.RecoverStale] fails messages left
// generating by a crashed process.
//
// # What is kept where, and what survives what
//
// Until runs become durable (they are not yet), this is exactly what a
// Service built with the defaults keeps, all of it in the memory of the
// process:
//
//   - Sessions, messages, checkpoints (pending questions and
//     confirmations), artifact metadata and the run log: Config.Store,
//     by default one domain/memory store. Nothing of it survives a process
//     restart; a host that needs that supplies its own domain.Repositories.
//   - Artifact content (charts, workbooks, reports): Config.ArtifactStore,
//     by default memory.ArtifactStore, lost on restart; domain/fsartifacts
//     keeps files on disk.
//   - Query results that later tool calls name (result_1, result_2, ...):
//     the tools.Results given to the SQL, Python, chart and export tools,
//     by default tools.MemoryResults (the last 10 per session). They live
//     only in process memory, are not persisted with the message, and
//     vanish on restart: a later question that names result_1 then gets a
//     "not found" the model can recover from by querying again.
//   - Confirmation tokens: signed with Agent.ConfirmationKey, by default a
//     random key per Service, so a pending confirmation cannot be approved
//     after a restart (nor by another process) unless the host sets the
//     key; the guard that makes each token work once is in memory too.
//   - Which sessions have a run in progress: in memory, per process
//     (StaleAfter protects runs of other processes sharing a store).
//   - Knowledge (catalog, recipes, documents) is whatever the host passes
//     in Config.Knowledge; the in-memory implementations are lost on
//     restart.
//
// A run belongs to the call that started it: Send, Resume, Approve and
// Deny run the agent while the caller ranges over the iterator. Breaking
// out of the loop or cancelling ctx stops the run (the message is failed
// with code "cancelled"); nothing keeps running in the background. Replay
// reads the run log, so it serves a client that lost its stream with
// everything logged so far, and always ends with the run's terminal event
// once the run is over (a stopped run ends with RunFailed "cancelled"),
// but it cannot re-attach to a run, and it finds only runs in the store
// the service uses: with the default memory store, runs of this process
// since it started. A process that dies mid-run leaves its message
// generating until RecoverStale fails it.
//
// The layers below are importable on their own: package agents (models,
// tools, the executor), hooks (the event bus), domain (entities and
// repositories) and their adapters.
package bichat
