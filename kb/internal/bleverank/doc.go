// Package bleverank runs Bleve searches whose ranked hits do not depend
// on how the index happens to be laid out.
//
// Bleve orders hits of equal score by the order it visits documents,
// which follows the index's internal document numbers; those depend on
// the order a batch's documents finished analysis (concurrently) and on
// background segment merges, so they differ between two builds of the
// same index. Bleve also sums a document's per-term scores in an order
// that depends on that numbering (its disjunction heap), so two
// mathematically equal scores can differ in their last bits. Search
// removes both: scores are rounded to float32 precision, hits are
// ordered by score then by document ID, and a tie at the cut is resolved
// by fetching more hits, so the first n hits are always the same n.
package bleverank
