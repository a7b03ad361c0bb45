-- bichat domain/postgres, version 7: the rate limits and quotas of package
-- quota/postgres, shared by every replica.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.

-- One row per scope: a tenant (user_id '') or one user of a tenant. The
-- levels are those of the request and token buckets at updated_at, in
-- units of 1/60e9 of a request or token (a limit of N per minute refills
-- N units per nanosecond); 9223372036854775807 is a bucket with no limit
-- (full whatever limit it gets). A missing row is a scope whose buckets
-- are full. Admit and Charge lock the rows of a tenant in user_id order,
-- the tenant's ('') first.
CREATE TABLE quota_scopes (
	tenant_id  text        NOT NULL,
	user_id    text        NOT NULL,
	req_level  bigint      NOT NULL,
	tok_level  bigint      NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, user_id)
);

-- One row per admitted run not yet released: a concurrent-run slot of its
-- tenant and of its user. A slot past expires_at is free (its replica died
-- without releasing it); Renew moves expires_at on.
CREATE TABLE quota_slots (
	tenant_id  text        NOT NULL,
	run_id     text        NOT NULL,
	user_id    text        NOT NULL,
	-- admission identifies the Admit holding the slot: a release frees it
	-- only while it is still that admission's.
	admission  bigint      NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, run_id)
);

CREATE INDEX quota_slots_user ON quota_slots (tenant_id, user_id, expires_at);
