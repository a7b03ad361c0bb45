// Package agents is bichat's agent runtime: the provider-neutral [Model]
// interface, typed [Tool] values with JSON Schema validation, and the
// [Executor] that runs the ReAct loop and streams every step as an [Event].
//
// # Models
//
// A [Model] streams [Chunk] values (text, reasoning, tool-call fragments,
// usage, stop reason) for a [Request]. [Generate] drains a stream into a
// [Response]; [Accumulator] is the assembly logic both use, including the
// rules for fragmented and interleaved parallel tool calls. Provider data
// that must round-trip (reasoning signatures, opaque blocks, thought
// signatures) is kept verbatim in the domain parts.
//
// # Tools
//
// [NewTool] turns a typed Go function into a [Tool]: the JSON Schema of its
// input struct is generated once, and each call's arguments are validated
// against it before the function runs. A bad argument goes back to the
// model as a tool error naming the field; it never reaches the function and
// never aborts the run. Results are two-track ([Result]): a Summary for the
// model and a Payload (rows, a chart, a file) for the host, which the model
// never sees.
//
// # The executor
//
// [Executor.Run] returns an iter.Seq2[Event, error]. The consumer pulls, so
// backpressure is free, and breaking out of the loop stops the model stream
// and running tools. Parallel-safe tool calls run concurrently with results
// reported in call order; every call has a timeout and panic recovery;
// per-run caps on tool calls and turns end with a wrap-up turn and an
// explained stop; transient model errors are retried before anything was
// streamed.
//
// Runs stop for the user in two ways, both resumable from a serialisable
// [Checkpoint]: the built-in ask_user_question tool ([Executor.Resume]
// with [Answers]), and tools with write or destructive [Permission], which
// never run on the model's word: the run stops with a [ConfirmationRequest]
// whose token is bound to tenant, user, tool, arguments and expiry, and only
// [Executor.Approve] runs the tool ([Executor.Deny] refuses it).
// Checkpoints carry a format version ([CheckpointVersion]): decoding one
// (json.Unmarshal or [DecodeCheckpoint]) upgrades a checkpoint stored by an
// older release and refuses one from a newer release with
// [ErrCheckpointVersion].
//
// The built-in final_answer tool ends a run with an answer, and
// [NewTaskTool] lets the model delegate to sub-agents whose events are
// forwarded into the parent's stream.
//
// # Events on the wire
//
// [MarshalEvent] encodes an event as JSON with a "type" member (the form
// of bichat's run log), byte for byte what encoding/json produces; the
// frequent deltas are encoded without reflection, and [AppendEvent] lets a
// writer reuse one buffer for every event. [UnmarshalEvent] decodes it.
// The [Accumulator] appends fragments to per-part buffers, so assembling
// an answer costs time and memory linear in its length.
package agents
