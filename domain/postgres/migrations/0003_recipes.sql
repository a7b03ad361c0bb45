-- bichat domain/postgres, version 3: the recipe memory of package
-- kb/recipes/postgres (questions answered well, with their SQL), scoped by
-- tenant and ontology.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.

CREATE TABLE recipes (
	tenant_id     text        NOT NULL,
	-- ontology is kb.Scope.Ontology; '' when the scope has none.
	ontology      text        NOT NULL DEFAULT '',
	id            text        NOT NULL,
	fingerprint   text        NOT NULL,
	question      text        NOT NULL,
	-- question_key is recipes.QuestionKey(question): a re-save of the same
	-- question on the same schema updates the recipe.
	question_key  text        NOT NULL,
	embedding     real[],
	datasets      text[]      NOT NULL,
	statements    text[]      NOT NULL,
	success_count integer     NOT NULL,
	created_at    timestamptz NOT NULL,
	last_used_at  timestamptz NOT NULL,
	-- used_seq orders the scope's recipes by use, most recent highest:
	-- List's order and least-recently-used eviction.
	used_seq      bigint      NOT NULL,
	PRIMARY KEY (tenant_id, ontology, id),
	UNIQUE (tenant_id, ontology, fingerprint, question_key)
);

CREATE INDEX recipes_use ON recipes (tenant_id, ontology, used_seq DESC);
