// Package canonjson writes JSON in one canonical form, so equal content has
// equal bytes and therefore equal hashes: object keys sorted (by UTF-16 code
// units, as RFC 8785 does), no insignificant whitespace, minimal string
// escaping and a stable number format.
//
// The context compiler hashes block payloads with it; anything else that
// needs content addressing of JSON values can use it too.
package canonjson
