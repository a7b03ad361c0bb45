package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/recipes"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Options configures a Store.
type Options struct {
	// Schema holds the recipes table (see domain/postgres.Migrate); empty
	// means "bichat".
	Schema string
	// Capacity is the most recipes kept per scope; saving one more evicts
	// the least recently used. 0 means recipes.DefaultCapacity.
	Capacity int
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Store is the PostgreSQL recipes.Store. It is safe for concurrent use,
// also from several processes.
type Store struct {
	pool     *pgxpool.Pool
	embedder kb.Embedder
	schema   string
	table    string
	capacity int
	now      func() time.Time

	upgradeMu sync.Mutex
	upgraded  bool
}

var _ recipes.Store = (*Store)(nil)

var schemaRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// New returns a Store over pool that embeds questions with e (nil, or an
// embedder that fails, leaves recipes to word matching, as in
// recipes.Memory).
func New(pool *pgxpool.Pool, e kb.Embedder, opts Options) (*Store, error) {
	if pool == nil {
		return nil, errors.New("recipes/postgres: new store: pool is nil")
	}
	if opts.Schema == "" {
		opts.Schema = "bichat"
	}
	if !schemaRE.MatchString(opts.Schema) {
		return nil, fmt.Errorf("recipes/postgres: new store: %w",
			domain.Invalid("schema", "must be 1 to 40 lowercase letters, digits or underscores, not starting with a digit"))
	}
	if opts.Capacity <= 0 {
		opts.Capacity = recipes.DefaultCapacity
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{pool: pool, embedder: e, schema: opts.Schema,
		table: pgx.Identifier{opts.Schema, "recipes"}.Sanitize(), capacity: opts.Capacity, now: opts.Now}, nil
}

const cols = `id, fingerprint, question, embedding, datasets, statements, success_count, verified, created_at, last_used_at`

func scanRecipe(row pgx.Row) (recipes.Recipe, error) {
	var r recipes.Recipe
	err := row.Scan(&r.ID, &r.Fingerprint, &r.Question, &r.Embedding, &r.Datasets, &r.SQL, &r.SuccessCount, &r.Verified, &r.CreatedAt, &r.LastUsedAt)
	if len(r.Embedding) == 0 {
		r.Embedding = nil
	}
	return r, err
}

func (s *Store) q(stmt string) string { return strings.ReplaceAll(stmt, "{T}", s.table) }

// upgrade brings a recipes table created before the verified column
// existed (domain/postgres migration 3) up to date, once per Store: when
// the column is missing it adds it (boolean, NOT NULL, default false, so
// existing recipes are unverified). A table that has it is left alone
// without taking any lock; a failure is retried on the next call.
// Several processes upgrading at once is safe (ADD COLUMN IF NOT EXISTS).
func (s *Store) upgrade(ctx context.Context) error {
	s.upgradeMu.Lock()
	defer s.upgradeMu.Unlock()
	if s.upgraded {
		return nil
	}
	var table *string
	var has bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass($1)::text, EXISTS (SELECT 1 FROM pg_attribute
			WHERE attrelid = to_regclass($1) AND attname = 'verified' AND NOT attisdropped)`, s.table).Scan(&table, &has); err != nil {
		return fmt.Errorf("inspect %s: %w", s.table, err)
	}
	if table == nil {
		return fmt.Errorf("table %s does not exist: run domain/postgres.Migrate on schema %q first", s.table, s.schema)
	}
	if !has {
		if _, err := s.pool.Exec(ctx, s.q(`ALTER TABLE {T} ADD COLUMN IF NOT EXISTS verified boolean NOT NULL DEFAULT false`)); err != nil {
			return fmt.Errorf("add column verified to %s: %w", s.table, err)
		}
	}
	s.upgraded = true
	return nil
}

// begin validates scope, checks ctx and upgrades the table: the start of
// every method.
func (s *Store) begin(ctx context.Context, scope kb.Scope) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := s.upgrade(ctx); err != nil {
		return fmt.Errorf("recipes/postgres: %w", err)
	}
	return nil
}

// lock serialises the writes to one scope, across processes.
func (s *Store) lock(ctx context.Context, tx pgx.Tx, scope kb.Scope) error {
	h := fnv.New64a()
	fmt.Fprintf(h, "bichat recipes\x00%s\x00%s\x00%s", s.schema, scope.TenantID, scope.Ontology)
	_, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(h.Sum64()))
	return err
}

// inScope runs fn in a transaction that holds the scope's lock, so the
// writers of one scope (in this process or another) take turns.
func (s *Store) inScope(ctx context.Context, scope kb.Scope, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := s.lock(ctx, tx, scope); err != nil {
			return err
		}
		return fn(tx)
	})
}

// nextUse returns the scope's next used_seq; the scope lock is held.
func (s *Store) nextUse(ctx context.Context, tx pgx.Tx, scope kb.Scope) (int64, error) {
	var n int64
	err := tx.QueryRow(ctx, s.q(`SELECT coalesce(max(used_seq), 0) + 1 FROM {T} WHERE tenant_id = $1 AND ontology = $2`),
		scope.TenantID, scope.Ontology).Scan(&n)
	return n, err
}

// evict drops the least recently used recipes beyond the capacity.
func (s *Store) evict(ctx context.Context, tx pgx.Tx, scope kb.Scope) error {
	_, err := tx.Exec(ctx, s.q(`DELETE FROM {T} WHERE tenant_id = $1 AND ontology = $2 AND used_seq <= (
			SELECT used_seq FROM {T} WHERE tenant_id = $1 AND ontology = $2
			ORDER BY used_seq DESC OFFSET $3 LIMIT 1)`), scope.TenantID, scope.Ontology, s.capacity)
	return err
}

func embeddingArg(v []float32) any {
	if v == nil {
		return nil
	}
	return v
}

// SaveRecipe implements recipes.Store like recipes.Memory.SaveRecipe.
func (s *Store) SaveRecipe(ctx context.Context, scope kb.Scope, n recipes.NewRecipe) (recipes.Recipe, error) {
	if err := scope.Validate(); err != nil {
		return recipes.Recipe{}, err
	}
	if err := n.Validate(); err != nil {
		return recipes.Recipe{}, err
	}
	if err := s.begin(ctx, scope); err != nil {
		return recipes.Recipe{}, err
	}
	question := strings.TrimSpace(n.Question)
	fp := recipes.Fingerprint(n.Datasets)
	names := n.DatasetNames()
	vec := recipes.Embed(ctx, s.embedder, question)
	var out recipes.Recipe
	err := s.inScope(ctx, scope, func(tx pgx.Tx) error {
		use, err := s.nextUse(ctx, tx, scope)
		if err != nil {
			return err
		}
		now := s.now()
		out, err = scanRecipe(tx.QueryRow(ctx, s.q(`UPDATE {T} SET statements = $5, success_count = success_count + 1,
				last_used_at = $6, used_seq = $7, embedding = coalesce($8, embedding), verified = verified OR $9
			WHERE tenant_id = $1 AND ontology = $2 AND fingerprint = $3 AND question_key = $4
			RETURNING `+cols), scope.TenantID, scope.Ontology, fp, recipes.QuestionKey(question), n.SQL, now, use, embeddingArg(vec), n.Verified))
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		out = recipes.Recipe{ID: domain.NewID(), Fingerprint: fp, Question: question, Embedding: vec, Datasets: names,
			SQL: slices.Clone(n.SQL), SuccessCount: 1, Verified: n.Verified, CreatedAt: now, LastUsedAt: now}
		if err := s.insert(ctx, tx, scope, out, use); err != nil {
			return err
		}
		return s.evict(ctx, tx, scope)
	})
	if err != nil {
		return recipes.Recipe{}, fmt.Errorf("recipes/postgres: save recipe: %w", err)
	}
	return out, nil
}

func (s *Store) insert(ctx context.Context, tx pgx.Tx, scope kb.Scope, r recipes.Recipe, use int64) error {
	_, err := tx.Exec(ctx, s.q(`INSERT INTO {T} (tenant_id, ontology, id, fingerprint, question, question_key, embedding,
			datasets, statements, success_count, verified, created_at, last_used_at, used_seq)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`),
		scope.TenantID, scope.Ontology, r.ID, r.Fingerprint, r.Question, recipes.QuestionKey(r.Question), embeddingArg(r.Embedding),
		r.Datasets, r.SQL, r.SuccessCount, r.Verified, r.CreatedAt, r.LastUsedAt, use)
	return err
}

// Recall implements recipes.Store like recipes.Memory.Recall: it loads
// the scope's recipes, ranks them with recipes.Rank, and marks the
// returned ones used, in one transaction under the scope's lock.
func (s *Store) Recall(ctx context.Context, scope kb.Scope, q recipes.Query) ([]recipes.Match, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	q, err := q.Normalize()
	if err != nil {
		return nil, err
	}
	if err := s.begin(ctx, scope); err != nil {
		return nil, err
	}
	var has bool
	if err := s.pool.QueryRow(ctx, s.q(`SELECT EXISTS (SELECT 1 FROM {T} WHERE tenant_id = $1 AND ontology = $2)`),
		scope.TenantID, scope.Ontology).Scan(&has); err != nil {
		return nil, fmt.Errorf("recipes/postgres: recall: %w", err)
	}
	if !has {
		return []recipes.Match{}, nil
	}
	vec := recipes.Embed(ctx, s.embedder, q.Question)
	out := []recipes.Match{}
	err = s.inScope(ctx, scope, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.q(`SELECT `+cols+` FROM {T} WHERE tenant_id = $1 AND ontology = $2`),
			scope.TenantID, scope.Ontology)
		if err != nil {
			return err
		}
		all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recipes.Recipe, error) { return scanRecipe(r) })
		if err != nil {
			return err
		}
		ptrs := make([]*recipes.Recipe, len(all))
		for i := range all {
			ptrs[i] = &all[i]
		}
		ranked := recipes.Rank(q, vec, ptrs)
		if len(ranked) == 0 {
			return nil
		}
		use, err := s.nextUse(ctx, tx, scope)
		if err != nil {
			return err
		}
		now := s.now()
		ids := make([]string, len(ranked))
		uses := make([]int64, len(ranked))
		for i, c := range ranked {
			c.Recipe.LastUsedAt = now
			ids[i], uses[i] = c.Recipe.ID, use+int64(i)
			out = append(out, recipes.Match{Recipe: *c.Recipe, Similarity: c.Similarity, SchemaMatch: c.SchemaMatch})
		}
		_, err = tx.Exec(ctx, s.q(`UPDATE {T} r SET last_used_at = $3, used_seq = u.use
			FROM unnest($4::text[], $5::bigint[]) AS u(id, use)
			WHERE r.tenant_id = $1 AND r.ontology = $2 AND r.id = u.id`), scope.TenantID, scope.Ontology, now, ids, uses)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("recipes/postgres: recall: %w", err)
	}
	return out, nil
}

func notFound(id string) error { return fmt.Errorf("recipes: recipe %q: %w", id, domain.ErrNotFound) }

// RecordSuccess implements recipes.Store.
func (s *Store) RecordSuccess(ctx context.Context, scope kb.Scope, id string) (recipes.Recipe, error) {
	if err := s.begin(ctx, scope); err != nil {
		return recipes.Recipe{}, err
	}
	var out recipes.Recipe
	err := s.inScope(ctx, scope, func(tx pgx.Tx) error {
		use, err := s.nextUse(ctx, tx, scope)
		if err != nil {
			return err
		}
		out, err = scanRecipe(tx.QueryRow(ctx, s.q(`UPDATE {T} SET success_count = success_count + 1, last_used_at = $4, used_seq = $5
			WHERE tenant_id = $1 AND ontology = $2 AND id = $3 RETURNING `+cols), scope.TenantID, scope.Ontology, id, s.now(), use))
		if errors.Is(err, pgx.ErrNoRows) {
			return notFound(id)
		}
		return err
	})
	if err != nil {
		if errors.Is(err, domain.ErrNotFound) {
			return recipes.Recipe{}, err
		}
		return recipes.Recipe{}, fmt.Errorf("recipes/postgres: record success of %q: %w", id, err)
	}
	return out, nil
}

// SetVerified implements recipes.Store like recipes.Memory.SetVerified:
// it sets or clears the verified mark without counting a use.
func (s *Store) SetVerified(ctx context.Context, scope kb.Scope, id string, verified bool) (recipes.Recipe, error) {
	if err := s.begin(ctx, scope); err != nil {
		return recipes.Recipe{}, err
	}
	r, err := scanRecipe(s.pool.QueryRow(ctx, s.q(`UPDATE {T} SET verified = $4
		WHERE tenant_id = $1 AND ontology = $2 AND id = $3 RETURNING `+cols), scope.TenantID, scope.Ontology, id, verified))
	if errors.Is(err, pgx.ErrNoRows) {
		return recipes.Recipe{}, notFound(id)
	}
	if err != nil {
		return recipes.Recipe{}, fmt.Errorf("recipes/postgres: set verified of %q: %w", id, err)
	}
	return r, nil
}

// Get implements recipes.Store; it does not count as a use.
func (s *Store) Get(ctx context.Context, scope kb.Scope, id string) (recipes.Recipe, error) {
	if err := s.begin(ctx, scope); err != nil {
		return recipes.Recipe{}, err
	}
	r, err := scanRecipe(s.pool.QueryRow(ctx, s.q(`SELECT `+cols+` FROM {T} WHERE tenant_id = $1 AND ontology = $2 AND id = $3`),
		scope.TenantID, scope.Ontology, id))
	if errors.Is(err, pgx.ErrNoRows) {
		return recipes.Recipe{}, notFound(id)
	}
	if err != nil {
		return recipes.Recipe{}, fmt.Errorf("recipes/postgres: get recipe %q: %w", id, err)
	}
	return r, nil
}

// Delete implements recipes.Store.
func (s *Store) Delete(ctx context.Context, scope kb.Scope, id string) error {
	if err := s.begin(ctx, scope); err != nil {
		return err
	}
	tag, err := s.pool.Exec(ctx, s.q(`DELETE FROM {T} WHERE tenant_id = $1 AND ontology = $2 AND id = $3`),
		scope.TenantID, scope.Ontology, id)
	if err != nil {
		return fmt.Errorf("recipes/postgres: delete recipe %q: %w", id, err)
	}
	if tag.RowsAffected() == 0 {
		return notFound(id)
	}
	return nil
}

// List implements recipes.Store: most recently used first.
func (s *Store) List(ctx context.Context, scope kb.Scope) ([]recipes.Recipe, error) {
	if err := s.begin(ctx, scope); err != nil {
		return nil, err
	}
	rows, err := s.pool.Query(ctx, s.q(`SELECT `+cols+` FROM {T} WHERE tenant_id = $1 AND ontology = $2 ORDER BY used_seq DESC`),
		scope.TenantID, scope.Ontology)
	if err != nil {
		return nil, fmt.Errorf("recipes/postgres: list recipes: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (recipes.Recipe, error) { return scanRecipe(r) })
	if err != nil {
		return nil, fmt.Errorf("recipes/postgres: list recipes: %w", err)
	}
	if out == nil {
		out = []recipes.Recipe{}
	}
	return out, nil
}

// Restore implements recipes.Store like recipes.Memory.Restore: restored
// recipes replace those with the same id or the same question and
// fingerprint; the scope's use order becomes most recently used first by
// LastUsedAt (stable: the existing recipes in use order, then the
// restored ones in input order), and the least recently used beyond the
// capacity are dropped. Invalid input restores nothing.
func (s *Store) Restore(ctx context.Context, scope kb.Scope, rs []recipes.Recipe) error {
	if err := scope.Validate(); err != nil {
		return err
	}
	if err := recipes.ValidateRestore(rs); err != nil {
		return err
	}
	if err := s.begin(ctx, scope); err != nil {
		return err
	}
	type entry struct {
		id, key  string
		lastUsed time.Time
		restored *recipes.Recipe
	}
	err := s.inScope(ctx, scope, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, s.q(`SELECT id, fingerprint, question_key, last_used_at FROM {T}
			WHERE tenant_id = $1 AND ontology = $2 ORDER BY used_seq DESC`), scope.TenantID, scope.Ontology)
		if err != nil {
			return err
		}
		var list []entry
		for rows.Next() {
			var e entry
			var fp, qk string
			if err := rows.Scan(&e.id, &fp, &qk, &e.lastUsed); err != nil {
				rows.Close()
				return err
			}
			e.key = fp + "\x00" + qk
			list = append(list, e)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		for i := range rs {
			c := rs[i]
			c.Embedding = slices.Clone(c.Embedding)
			c.Datasets = slices.Clone(c.Datasets)
			c.SQL = slices.Clone(c.SQL)
			slices.Sort(c.Datasets)
			key := c.Fingerprint + "\x00" + recipes.QuestionKey(c.Question)
			list = slices.DeleteFunc(list, func(e entry) bool { return e.id == c.ID || e.key == key })
			list = append(list, entry{id: c.ID, key: key, lastUsed: c.LastUsedAt, restored: &c})
		}
		slices.SortStableFunc(list, func(a, b entry) int { return -a.lastUsed.Compare(b.lastUsed) })
		if len(list) > s.capacity {
			list = list[:s.capacity]
		}
		// Remove every existing row that is not kept as it is, then
		// insert the restored ones and renumber the use order.
		keep := make([]string, 0, len(list))
		for _, e := range list {
			if e.restored == nil {
				keep = append(keep, e.id)
			}
		}
		if _, err := tx.Exec(ctx, s.q(`DELETE FROM {T} WHERE tenant_id = $1 AND ontology = $2 AND NOT (id = ANY($3))`),
			scope.TenantID, scope.Ontology, keep); err != nil {
			return err
		}
		ids := make([]string, len(list))
		uses := make([]int64, len(list))
		for i, e := range list {
			ids[i], uses[i] = e.id, int64(len(list)-i)
			if e.restored != nil {
				if err := s.insert(ctx, tx, scope, *e.restored, uses[i]); err != nil {
					return err
				}
			}
		}
		_, err = tx.Exec(ctx, s.q(`UPDATE {T} r SET used_seq = u.use
			FROM unnest($3::text[], $4::bigint[]) AS u(id, use)
			WHERE r.tenant_id = $1 AND r.ontology = $2 AND r.id = u.id`), scope.TenantID, scope.Ontology, ids, uses)
		return err
	})
	if err != nil {
		return fmt.Errorf("recipes/postgres: restore: %w", err)
	}
	return nil
}
