-- bichat domain/postgres, version 8: verified recipes (kb/recipes
-- Recipe.Verified). A recipe the host checked (a verified query) is
-- offered before unverified ones for matching questions. kb/recipes/postgres
-- also adds the column itself when it meets a table migrated before this
-- file; both are idempotent.
--
-- Unqualified like 0001: run it with search_path set to the store's schema.
ALTER TABLE recipes ADD COLUMN IF NOT EXISTS verified boolean NOT NULL DEFAULT false;
