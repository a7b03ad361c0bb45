-- bichat domain/postgres, version 5: data sources (package secrets), the
-- databases a tenant's agent may query. The connection settings are
-- stored sealed (AES-256-GCM, bound to tenant and id): this table never
-- holds a plaintext DSN or password.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.

CREATE TABLE datasources (
	-- "C" collation: ScanDataSources pages by (tenant_id, id) and
	-- ListDataSources orders by name, both comparing bytes, on the
	-- indexes below.
	tenant_id     text COLLATE "C" NOT NULL,
	id            text COLLATE "C" NOT NULL,
	name          text COLLATE "C" NOT NULL,
	dialect       text        NOT NULL CHECK (dialect IN ('postgres', 'sqlite')),
	-- sealed_config is secrets.Keyring output: "v1.<key_id>.<ciphertext>".
	sealed_config text        NOT NULL,
	key_id        text        NOT NULL,
	created_at    timestamptz NOT NULL,
	updated_at    timestamptz NOT NULL,
	PRIMARY KEY (tenant_id, id),
	UNIQUE (tenant_id, name)
);

-- How many data sources each key still seals: what a rotation has left.
CREATE INDEX datasources_key_id ON datasources (key_id);
