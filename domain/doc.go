// Package domain holds bichat's entities and the repository interfaces that
// persist them. It is the centre of the dependency graph: every other package
// may import it, and it imports nothing but the standard library.
//
// # Entities
//
// A [Session] is one conversation owned by a user inside a tenant. It holds
// [Message] values; each message has a [Role], an ordered list of [Part]
// values (text, reasoning, tool calls, tool results, file references), a
// [MessageStatus] and [MessageMetadata] (tool calls, token usage, datasets
// used, errors). [Artifact] values (tables, charts, reports, files) hang off
// messages. A [Principal] says who is calling and what they may do.
//
// # Repositories
//
// [SessionRepository], [MessageRepository], [CheckpointRepository],
// [ArtifactRepository] and [RunEventRepository] are the persistence seams.
// Every method takes the tenant id and returns [ErrNotFound] for ids that
// belong to another tenant, so a cross-tenant read yields nothing. The
// in-memory implementation lives in package domain/memory; package
// domain/domaintest holds the conformance suite every implementation must
// pass.
//
// # Errors
//
// Callers branch on the sentinel errors [ErrNotFound], [ErrForbidden],
// [ErrConflict] and [ErrInvalid] with errors.Is. Validation failures are
// [*ValidationError] values that name each offending field.
package domain
