// Package postgres keeps the recipe memory of package kb/recipes in
// PostgreSQL: a [recipes.Store] with the behaviour of [recipes.Memory]
// (the same ranking code, recipes.Rank, and the same tests,
// kb/recipes/recipestest), durable and shared by every process of a
// deployment.
//
// The table, recipes, is created by domain/postgres.Migrate (migration
// version 3) in the same schema as the other bichat tables; run it before
// New. Recipes are scoped by kb.Scope (tenant and ontology): every
// statement filters by both. Embeddings are stored as real[] (float4),
// which round-trips float32 exactly. Recall loads the scope's recipes and
// ranks them in Go; scopes hold at most Options.Capacity recipes (500 by
// default), so that stays cheap. Writes to one scope are serialised by a
// transaction-scoped advisory lock, which keeps the least-recently-used
// order exact when several processes save and recall at once.
//
// New takes the host's pool; the store never opens connections of its
// own.
package postgres
