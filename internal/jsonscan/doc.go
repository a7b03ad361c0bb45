// Package jsonscan is a small, allocation-free JSON scanner for the hot
// paths of the LLM providers' stream decoders.
//
// A decoder built on it reads exactly the fields it needs and declines
// (reports false) on anything it does not expect: malformed JSON, escapes
// in object keys, numbers it cannot read exactly, invalid UTF-8, control
// characters in strings, nesting deeper than 64 levels. The caller then
// decodes the same bytes with encoding/json, which also produces the error
// message. A decoder on this scanner therefore changes speed, never
// results, with one documented leniency: object keys and the contents of
// strings that Skip passes over are not validated (a decoder compares keys
// with the names it knows and ignores skipped values either way).
//
// Object keys are handed to the caller unchanged. encoding/json matches
// field names case-insensitively, so a caller must decline a key that
// only folds to one it reads (see FoldsTo), or set
// Scanner.RejectFoldedKeys when every expected key is lower-case ASCII.
package jsonscan
