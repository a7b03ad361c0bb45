-- bichat domain/postgres, version 2: run leases and cancellation,
-- checkpoint expiry, named query results, and artifact content.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.

-- Run leases (domain.RunRepository). A NULL lease never expires.
ALTER TABLE messages
	ADD COLUMN lease_until      timestamptz,
	ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;

-- FailExpired: generating messages whose lease ran out, across tenants.
CREATE INDEX messages_lease ON messages (lease_until)
	WHERE status = 'generating' AND lease_until IS NOT NULL;

-- TakeExpiredCheckpoints: checkpoints by expiry, across tenants.
CREATE INDEX checkpoints_expiry ON checkpoints (expires_at, message_id)
	WHERE expires_at IS NOT NULL;

-- Named query results (domain.ResultRepository). sessions.last_result is
-- the N of the session's latest result_N, so names are never reused.
ALTER TABLE sessions ADD COLUMN last_result bigint NOT NULL DEFAULT 0;

CREATE SEQUENCE results_put_seq;

CREATE TABLE results (
	tenant_id  text        NOT NULL,
	session_id text        NOT NULL,
	name       text        NOT NULL,
	-- put_seq orders results by their latest put: the oldest go first
	-- when the session is over its caps.
	put_seq    bigint      NOT NULL DEFAULT nextval('results_put_seq'),
	size       bigint      NOT NULL,
	data       bytea       NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, session_id, name),
	FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);

CREATE INDEX results_age ON results (tenant_id, session_id, put_seq);

-- Artifact content (postgres.ArtifactStore): one row per distinct content
-- of a tenant, the bytes in chunks. Deleting an artifact or a session
-- frees content that no remaining artifact of the tenant refers to.
CREATE TABLE artifact_content (
	tenant_id  text        NOT NULL,
	sha256     text        NOT NULL,
	size       bigint      NOT NULL,
	media_type text        NOT NULL,
	chunks     integer     NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, sha256)
);

CREATE TABLE artifact_chunks (
	tenant_id text    NOT NULL,
	-- sha256 of the content, or a staging key while a Put is in progress.
	sha256    text    NOT NULL,
	idx       integer NOT NULL,
	data      bytea   NOT NULL,
	PRIMARY KEY (tenant_id, sha256, idx)
);

-- Reference counting: the artifacts of a tenant that use a content.
CREATE INDEX artifacts_content ON artifacts (tenant_id, sha256);
