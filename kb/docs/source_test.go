package docs_test

import (
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/bichat-go/bichat/kb/docs"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func collect(t *testing.T, src docs.Source) ([]docs.Document, error) {
	t.Helper()
	var out []docs.Document
	for d, err := range src.Documents(t.Context()) {
		if err != nil {
			return out, err
		}
		out = append(out, d)
	}
	return out, nil
}

// docTree makes base/outside/secret.md and a documentation root
// base/root with Markdown, text, hidden and ignored files.
func docTree(t *testing.T) (base, root string) {
	base = t.TempDir()
	root = filepath.Join(base, "root")
	writeFile(t, filepath.Join(base, "outside", "secret.md"), "# Secret\nThe launch code is swordfish.")
	writeFile(t, filepath.Join(base, "secret.md"), "# Secret\nThe launch code is swordfish.")
	writeFile(t, filepath.Join(root, "guides", "revenue.md"), "---\ntitle: \"Revenue policy\"\ntags: [finance, policy]\n---\n# Ignored heading\n\nRecognise revenue at shipment.\n")
	writeFile(t, filepath.Join(root, "guides", "churn.markdown"), "Intro line.\n\n# Churn definition\n\nCustomers who do not renew.")
	writeFile(t, filepath.Join(root, "notes.txt"), "# not a heading in text\nPlain text notes.")
	writeFile(t, filepath.Join(root, "tagged.md"), "---\ntags: ops, runbook\n---\nRestart the job.")
	writeFile(t, filepath.Join(root, ".hidden", "h.md"), "hidden")
	writeFile(t, filepath.Join(root, ".draft.md"), "draft")
	writeFile(t, filepath.Join(root, "image.png"), "png")
	return base, root
}

func TestFileSource(t *testing.T) {
	t.Parallel()
	_, root := docTree(t)
	// A link inside the root is followed.
	if err := os.Symlink("guides/revenue.md", filepath.Join(root, "alias.md")); err != nil {
		t.Fatal(err)
	}
	src := &docs.FileSource{Root: root, BaseURL: "https://wiki.example.com/"}
	got, err := collect(t, src)
	if err != nil {
		t.Fatal(err)
	}
	type row struct{ id, title, content, tags, source string }
	var rows []row
	for _, d := range got {
		rows = append(rows, row{d.ID, d.Title, d.Content, strings.Join(d.Tags, ","), d.Source})
		if d.Metadata["path"] != d.ID || d.Metadata["modified"] == "" || d.Metadata["size"] == "" {
			t.Errorf("%s metadata = %v", d.ID, d.Metadata)
		}
	}
	want := []row{
		{"alias.md", "Revenue policy", "# Ignored heading\n\nRecognise revenue at shipment.", "finance,policy", "https://wiki.example.com/alias.md"},
		{"guides/churn.markdown", "Churn definition", "Intro line.\n\n# Churn definition\n\nCustomers who do not renew.", "", "https://wiki.example.com/guides/churn.markdown"},
		{"guides/revenue.md", "Revenue policy", "# Ignored heading\n\nRecognise revenue at shipment.", "finance,policy", "https://wiki.example.com/guides/revenue.md"},
		{"notes.txt", "notes", "# not a heading in text\nPlain text notes.", "", "https://wiki.example.com/notes.txt"},
		{"tagged.md", "tagged", "Restart the job.", "ops,runbook", "https://wiki.example.com/tagged.md"},
	}
	if !slices.Equal(rows, want) {
		t.Errorf("documents:\n got %q\nwant %q", rows, want)
	}
	idx := newIndex(t, docs.Options{})
	if st, err := idx.Rebuild(t.Context(), tenantA, src); err != nil || st.Documents != 5 {
		t.Fatalf("rebuild from files = %+v, %v", st, err)
	}
	r := search(t, idx, tenantA, "shipment", docs.SearchOptions{})
	if got := ids(r); !slices.Equal(got, []string{"alias.md", "guides/revenue.md"}) && !slices.Equal(got, []string{"guides/revenue.md", "alias.md"}) {
		t.Errorf("search after rebuild from files = %v", got)
	}
	if u := r.Hits[0].Document.URL(); !strings.HasPrefix(u, "https://wiki.example.com/") {
		t.Errorf("URL = %q", u)
	}
	d, err := src.Load("guides/revenue.md")
	if err != nil || d.Title != "Revenue policy" {
		t.Errorf("Load = %+v, %v", d, err)
	}
	if _, err := src.Load("image.png"); err == nil {
		t.Error("Load of an unlisted extension succeeded")
	}
	if _, err := collect(t, &docs.FileSource{Root: filepath.Join(root, "missing")}); err == nil {
		t.Error("missing root: no error")
	}
	// Size limit.
	if _, err := collect(t, &docs.FileSource{Root: root, MaxFileSize: 10}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("size limit: %v", err)
	}
	// Extensions.
	got, err = collect(t, &docs.FileSource{Root: root, Extensions: []string{".TXT"}})
	if err != nil || len(got) != 1 || got[0].ID != "notes.txt" {
		t.Errorf("txt only: %v, %v", got, err)
	}
}

func TestFileSourceCannotEscapeRoot(t *testing.T) {
	t.Parallel()
	t.Run("dot-dot", func(t *testing.T) {
		t.Parallel()
		_, root := docTree(t)
		src := &docs.FileSource{Root: root}
		for _, name := range []string{"../secret.md", "guides/../../secret.md", "../outside/secret.md", "/etc/passwd.md", filepath.Join(root, "..", "secret.md")} {
			d, err := src.Load(name)
			if err == nil || strings.Contains(d.Content, "swordfish") {
				t.Errorf("Load(%q) = %+v, %v; want an error", name, d, err)
			}
		}
	})
	t.Run("symlink to a file outside", func(t *testing.T) {
		t.Parallel()
		base, root := docTree(t)
		if err := os.Symlink(filepath.Join(base, "secret.md"), filepath.Join(root, "guides", "leak.md")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("../../secret.md", filepath.Join(root, "guides", "relative-leak.md")); err != nil {
			t.Fatal(err)
		}
		src := &docs.FileSource{Root: root}
		got, err := collect(t, src)
		if err == nil || !strings.Contains(err.Error(), "leak.md") {
			t.Errorf("walk over an escaping link: err = %v", err)
		}
		for _, d := range got {
			if strings.Contains(d.Content, "swordfish") {
				t.Errorf("escaped through %s", d.ID)
			}
		}
		for _, name := range []string{"guides/leak.md", "guides/relative-leak.md"} {
			if d, err := src.Load(name); err == nil || strings.Contains(d.Content, "swordfish") {
				t.Errorf("Load(%s) = %+v, %v", name, d, err)
			}
		}
		// Rebuild from it fails and leaves the index as it was.
		idx := newIndex(t, docs.Options{})
		if err := idx.AddBatch(t.Context(), tenantA, sampleDocs()); err != nil {
			t.Fatal(err)
		}
		if _, err := idx.Rebuild(t.Context(), tenantA, src); err == nil {
			t.Error("rebuild over an escaping link succeeded")
		}
		if got := ids(search(t, idx, tenantA, "swordfish", docs.SearchOptions{})); len(got) != 0 {
			t.Errorf("indexed %v", got)
		}
		if st, _ := idx.Stats(t.Context(), tenantA); st.Documents != 3 {
			t.Errorf("documents = %d after the failed rebuild", st.Documents)
		}
	})
	t.Run("symlink to a directory outside", func(t *testing.T) {
		t.Parallel()
		base, root := docTree(t)
		if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "linked")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(base, "outside"), filepath.Join(root, "linked.md")); err != nil {
			t.Fatal(err)
		}
		src := &docs.FileSource{Root: root}
		got, err := collect(t, src)
		if err == nil {
			t.Error("a link named .md to an outside directory was not reported")
		}
		for _, d := range got {
			if strings.Contains(d.Content, "swordfish") || strings.HasPrefix(d.ID, "linked") {
				t.Errorf("escaped through %s", d.ID)
			}
		}
		if d, err := src.Load("linked/secret.md"); err == nil || strings.Contains(d.Content, "swordfish") {
			t.Errorf("Load(linked/secret.md) = %+v, %v", d, err)
		}
	})
}

func openSQLite(t *testing.T) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(t.TempDir(), "kb.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func exec(t *testing.T, db *sql.DB, stmt string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(t.Context(), stmt, args...); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func TestSQLSource(t *testing.T) {
	t.Parallel()
	db := openSQLite(t)
	// Identifiers that need quoting: spaces, a double quote, a keyword.
	exec(t, db, `CREATE TABLE "kb ""docs""" ("doc id" INTEGER PRIMARY KEY, "title" TEXT, "body text" TEXT, "select" TEXT, url TEXT, owner TEXT, views INTEGER)`)
	exec(t, db, `CREATE TABLE keep (x INTEGER)`)
	ins := `INSERT INTO "kb ""docs""" VALUES (?, ?, ?, ?, ?, ?, ?)`
	exec(t, db, ins, 2, "Churn", "Customers who do not renew.", `["metrics","saas"]`, "https://wiki/churn", "growth", 10)
	exec(t, db, ins, 1, "Revenue", "Recognise revenue at shipment.", "finance, policy", nil, nil, nil)
	src := &docs.SQLSource{
		DB: db, Table: `kb "docs"`,
		IDColumn: "doc id", ContentColumn: "body text", TagsColumn: "select", SourceColumn: "url",
		MetadataColumns: []string{"owner", "views"},
	}
	got, err := collect(t, src)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("got %d documents", len(got))
	}
	if d := got[0]; d.ID != "1" || d.Title != "Revenue" || strings.Join(d.Tags, "|") != "finance|policy" || d.Source != "" || d.Metadata != nil {
		t.Errorf("row 1 = %+v", d)
	}
	if d := got[1]; d.ID != "2" || d.Content != "Customers who do not renew." || strings.Join(d.Tags, "|") != "metrics|saas" ||
		d.Source != "https://wiki/churn" || d.Metadata["owner"] != "growth" || d.Metadata["views"] != "10" {
		t.Errorf("row 2 = %+v", d)
	}
	// Index it and search.
	idx := newIndex(t, docs.Options{})
	if st, err := idx.Rebuild(t.Context(), tenantA, src); err != nil || st.Documents != 2 {
		t.Fatalf("rebuild = %+v, %v", st, err)
	}
	if got := ids(search(t, idx, tenantA, "renew", docs.SearchOptions{})); !slices.Equal(got, []string{"2"}) {
		t.Errorf("search = %v", got)
	}

	// A query with parameters, columns matched by name.
	q := &docs.SQLSource{DB: db, Query: `SELECT "doc id" AS id, title, "body text" AS content FROM "kb ""docs""" WHERE views > ?`, Args: []any{5}}
	if got, err := collect(t, q); err != nil || len(got) != 1 || got[0].ID != "2" {
		t.Errorf("query source = %+v, %v", got, err)
	}

	// A table name is an identifier, never SQL.
	inj := &docs.SQLSource{DB: db, Table: `keep; DROP TABLE keep; --`}
	if _, err := collect(t, inj); err == nil || !strings.Contains(err.Error(), "no such table") {
		t.Errorf("injection attempt: %v", err)
	}
	inj = &docs.SQLSource{DB: db, Table: `kb "docs"`, IDColumn: `"doc id" FROM "kb ""docs"""; DROP TABLE keep; --`}
	if _, err := collect(t, inj); err == nil {
		t.Error("injection through a column name ran")
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM keep`).Scan(&n); err != nil {
		t.Errorf("table keep is gone: %v", err)
	}

	// Errors name the problem.
	for name, tc := range map[string]struct {
		src  *docs.SQLSource
		want string
	}{
		"missing column": {&docs.SQLSource{DB: db, Table: `kb "docs"`, IDColumn: "doc id"}, `"content"`},
		"no table":       {&docs.SQLSource{DB: db}, "Table or a Query"},
		"no db":          {&docs.SQLSource{Table: "x"}, "no database"},
		"nul":            {&docs.SQLSource{DB: db, Table: "a\x00b"}, "invalid identifier"},
		"null id":        {&docs.SQLSource{DB: db, Query: `SELECT NULL AS id, 't' AS title, 'c' AS content`}, "empty"},
		"query columns":  {&docs.SQLSource{DB: db, Query: `SELECT 1 AS id, 't' AS title`}, `"content"`},
	} {
		if _, err := collect(t, tc.src); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to mention %s", name, err, tc.want)
		}
	}
	if docs.QuoteIdent(`a"b`) != `"a""b"` {
		t.Errorf("QuoteIdent = %s", docs.QuoteIdent(`a"b`))
	}
}
