-- bichat domain/postgres, version 6: the tamper-evident audit chains of
-- package hooks/audit/postgres. Each tenant's entries form a hash chain
-- (see hooks/audit.Entry for what is hashed); audit_heads keeps each
-- chain's last seq and hash apart from the entries, so entries deleted
-- from the end of a chain are detected, and its row is the lock that
-- serialises the appends to one tenant's chain across processes.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.

CREATE TABLE audit_entries (
	tenant_id   text        NOT NULL,
	seq         bigint      NOT NULL CHECK (seq > 0),
	-- occurred_at is Entry.Time (microsecond precision, as hashed).
	occurred_at timestamptz NOT NULL,
	type        text        NOT NULL,
	user_id     text        NOT NULL,
	session_id  text        NOT NULL,
	message_id  text        NOT NULL,
	run_id      text        NOT NULL,
	-- data is Entry.Data, the canonical JSON text that was hashed (text,
	-- not jsonb, so the stored bytes are exactly the hashed ones; query it
	-- with data::jsonb).
	data        text        NOT NULL,
	prev        text        NOT NULL,
	hash        text        NOT NULL,
	PRIMARY KEY (tenant_id, seq)
);

CREATE TABLE audit_heads (
	tenant_id  text        PRIMARY KEY,
	seq        bigint      NOT NULL CHECK (seq >= 0),
	hash       text        NOT NULL,
	updated_at timestamptz NOT NULL DEFAULT now()
);
