-- bichat domain/postgres, version 4: the cost ledger (domain.CostLedger,
-- implemented by *Store in cost.go). Money is whole nano-dollars
-- (domain.NanoUSD) in bigint, so sums are exact and AddCost is one
-- atomic upsert per table: usd_nanos = usd_nanos + EXCLUDED.usd_nanos.
-- No foreign keys: spend outlives the sessions it was made in.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.

-- cost_sessions holds each session's total, for per-session budgets.
CREATE TABLE cost_sessions (
	tenant_id  text        NOT NULL,
	session_id text        NOT NULL,
	usd_nanos  bigint      NOT NULL CHECK (usd_nanos >= 0),
	calls      bigint      NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, session_id)
);

-- cost_days holds each tenant's totals per UTC day, for per-tenant daily
-- budgets and reports.
CREATE TABLE cost_days (
	tenant_id          text   NOT NULL,
	day                date   NOT NULL,
	usd_nanos          bigint NOT NULL CHECK (usd_nanos >= 0),
	calls              bigint NOT NULL,
	prompt_tokens      bigint NOT NULL,
	completion_tokens  bigint NOT NULL,
	cached_tokens      bigint NOT NULL,
	cache_write_tokens bigint NOT NULL,
	reasoning_tokens   bigint NOT NULL,
	total_tokens       bigint NOT NULL,
	PRIMARY KEY (tenant_id, day)
);
