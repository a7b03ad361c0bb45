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
// The verified mark (recipes.Recipe.Verified) is the column verified
// (boolean NOT NULL DEFAULT false). A table created before it existed is
// upgraded on a Store's first call: when the column is missing, the store
// adds it (ALTER TABLE ... ADD COLUMN IF NOT EXISTS, so existing recipes
// read as unverified and several processes may upgrade at once); a table
// that has it is only inspected. The upgrade needs the right to alter the
// table; a store whose role lacks it fails with an error naming the
// table until the column exists. A schema that was never migrated yields
// an error saying to run domain/postgres.Migrate.
//
// New takes the host's pool; the store never opens connections of its
// own.
package postgres
