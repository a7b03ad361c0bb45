// Package recipes is the agent's memory of what worked: questions the
// user approved answers to, with the SQL that answered them, recalled for
// similar questions on the same schema.
//
// A [Recipe] carries a schema fingerprint ([Fingerprint]: SHA-256 of the
// canonical schema of the datasets involved, see [CanonicalSchema]), the
// question and its embedding, the SQL statements, a success count, a
// verified mark and created / last-used times. The host saves one only on
// explicit approval ([Memory.SaveRecipe], or the save_recipe tool in
// package tools/knowledge, which needs confirmation). [Memory.Recall]
// returns the top matches for a new question: recipes whose datasets are
// in view and unchanged (fingerprint match) first; within each of those
// two groups, verified recipes relevant to the question first; then by
// cosine similarity of the question embeddings (word overlap when there
// are none); ties go to more successes, then more recent use, then
// question text, fingerprint and id, so equal recipes always come back in
// the same order. The context compiler receives them as memory blocks.
//
// # Verified recipes
//
// A verified recipe is a query the host checked (a verified query, for
// example one of an evaluation set): save it with [NewRecipe].Verified,
// or mark or unmark a stored one with [Memory.SetVerified], which does
// not count as a use. Saving the same question on the same schema again
// with Verified set marks the recipe; a save without it keeps an earlier
// mark, so routine approvals never clear a host's check.
//
// Recall prefers a verified recipe only when it matches the question:
// its similarity must reach [Query].VerifiedMinSimilarity (by default
// [DefaultVerifiedMinSimilarity]) and MinSimilarity; an unrelated
// verified recipe ranks like any other, by similarity. The schema rule
// comes first and applies to verified recipes as to any other: a
// verified recipe whose datasets changed since it was saved (another
// fingerprint) or are not in view ranks after every schema match, and
// [Query].RequireSchemaMatch drops it; the mark itself stays, and counts
// again once the schema is back. A save on a changed schema makes a new
// recipe, verified only if that save says so: the check was for the old
// schema. Verified recipes
// are evicted like others when a scope is over capacity (recalling one
// counts as a use and keeps it).
//
// [Memory] keeps recipes in memory, scoped by [kb.Scope], bounded per
// scope with least-recently-used eviction, and is safe for concurrent
// use. Package kb/recipes/postgres keeps them in PostgreSQL with the same
// behaviour; both implement [Store], rank with the shared [Rank], and
// pass the suite in package kb/recipes/recipestest.
package recipes
