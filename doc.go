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
// reconnects can [Service.Replay] from the last sequence number it saw) and
// persists the final message: its parts, tool calls with results, token
// usage, datasets used and artifacts. A run that fails or is cancelled marks
// its message failed with a reason; a run that waits for the user (a
// question, or a confirmation of a write tool) leaves the message
// awaiting input with a checkpoint that [Service.Resume], [Service.Approve]
// and [Service.Deny] continue. [Service.RecoverStale] fails messages left
// generating by a crashed process.
//
// The layers below are importable on their own: package agents (models,
// tools, the executor), hooks (the event bus), domain (entities and
// repositories) and their adapters.
package bichat
