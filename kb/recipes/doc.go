// Package recipes is the agent's memory of what worked: questions the
// user approved answers to, with the SQL that answered them, recalled for
// similar questions on the same schema.
//
// A [Recipe] carries a schema fingerprint ([Fingerprint]: SHA-256 of the
// canonical schema of the datasets involved, see [CanonicalSchema]), the
// question and its embedding, the SQL statements, a success count and
// created / last-used times. The host saves one only on explicit approval
// ([Memory.SaveRecipe], or the save_recipe tool in package
// tools/knowledge, which needs confirmation). [Memory.Recall] returns the
// top matches for a new question: recipes whose datasets are in view and
// unchanged (fingerprint match) first, then by cosine similarity of the
// question embeddings (word overlap when there are none); ties go to
// more successes, then more recent use, then question text, fingerprint
// and id, so equal recipes always come back in the same order. The context
// compiler receives them as memory blocks.
//
// [Memory] keeps recipes in memory, scoped by [kb.Scope], bounded per
// scope with least-recently-used eviction, and is safe for concurrent
// use. Package kb/recipes/postgres keeps them in PostgreSQL with the same
// behaviour; both implement [Store], rank with the shared [Rank], and
// pass the suite in package kb/recipes/recipestest.
package recipes
