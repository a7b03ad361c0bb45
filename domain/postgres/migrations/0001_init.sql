-- bichat domain/postgres, version 1: the core tables.
--
-- Statements are unqualified: postgres.Migrate runs them with search_path
-- set to the store's schema. A host applying this file with its own
-- migration tool must do the same (SET search_path TO <schema>).
--
-- Every table carries tenant_id, leads its primary key with it, and every
-- statement of the SDK filters by it. Ids are scoped by tenant.

CREATE TABLE sessions (
	tenant_id  text        NOT NULL,
	id         text        NOT NULL,
	owner_id   text        NOT NULL,
	title      text        NOT NULL,
	model      text        NOT NULL DEFAULT '',
	created_at timestamptz NOT NULL,
	updated_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, id)
);

-- ListSessions: one owner's sessions, most recently updated first (the
-- default), ties by id. Created-time and title sorts use the same prefix.
CREATE INDEX sessions_owner_updated ON sessions (tenant_id, owner_id, updated_at DESC, id);

CREATE TABLE messages (
	tenant_id   text        NOT NULL,
	id          text        NOT NULL,
	session_id  text        NOT NULL,
	-- seq numbers insertions: ListMessages orders by created_at, then by
	-- insertion order.
	seq         bigint      GENERATED ALWAYS AS IDENTITY,
	role        text        NOT NULL,
	status      text        NOT NULL,
	run_id      text        NOT NULL DEFAULT '',
	-- JSON written by encoding/json and read back verbatim (json, not
	-- jsonb, so raw provider data keeps its bytes).
	parts       json        NOT NULL,
	metadata    json        NOT NULL,
	-- error is Metadata.Error, kept apart so FailStale can set it in SQL.
	error       json,
	citations   json,
	attachments json,
	created_at  timestamptz NOT NULL,
	updated_at  timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, id),
	FOREIGN KEY (tenant_id, session_id) REFERENCES sessions (tenant_id, id) ON DELETE CASCADE
);

-- ListMessages: a session's messages in time order.
CREATE INDEX messages_session_time ON messages (tenant_id, session_id, created_at, seq);
-- FailStale: generating messages by age, across tenants.
CREATE INDEX messages_generating_updated ON messages (updated_at) WHERE status = 'generating';

CREATE TABLE checkpoints (
	-- One checkpoint per message; the message need not exist.
	tenant_id  text        NOT NULL,
	message_id text        NOT NULL,
	id         text        NOT NULL,
	session_id text        NOT NULL DEFAULT '',
	owner_id   text        NOT NULL DEFAULT '',
	run_id     text        NOT NULL DEFAULT '',
	kind       text        NOT NULL DEFAULT '',
	data       bytea,
	created_at timestamptz NOT NULL,
	expires_at timestamptz,
	PRIMARY KEY (tenant_id, message_id)
);

CREATE INDEX checkpoints_session ON checkpoints (tenant_id, session_id);

CREATE TABLE artifacts (
	tenant_id  text        NOT NULL,
	id         text        NOT NULL,
	session_id text        NOT NULL DEFAULT '',
	message_id text        NOT NULL,
	seq        bigint      GENERATED ALWAYS AS IDENTITY,
	kind       text        NOT NULL DEFAULT '',
	name       text        NOT NULL DEFAULT '',
	media_type text        NOT NULL DEFAULT '',
	sha256     text        NOT NULL DEFAULT '',
	size       bigint      NOT NULL DEFAULT 0,
	uri        text        NOT NULL DEFAULT '',
	metadata   json,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, id)
);

-- ListArtifacts: a message's artifacts in creation order.
CREATE INDEX artifacts_message ON artifacts (tenant_id, message_id, created_at, seq);
CREATE INDEX artifacts_session ON artifacts (tenant_id, session_id);

CREATE TABLE run_events (
	tenant_id  text        NOT NULL,
	run_id     text        NOT NULL,
	seq        bigint      NOT NULL,
	session_id text        NOT NULL DEFAULT '',
	message_id text        NOT NULL DEFAULT '',
	type       text        NOT NULL DEFAULT '',
	time       timestamptz NOT NULL,
	data       bytea,
	PRIMARY KEY (tenant_id, run_id, seq)
);

-- DeleteSession removes a session's run events.
CREATE INDEX run_events_session ON run_events (tenant_id, session_id);
