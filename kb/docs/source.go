package docs

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

var (
	_ Source = (*FileSource)(nil)
	_ Source = (*SQLSource)(nil)
)

// DefaultMaxFileSize is the largest file FileSource reads when
// MaxFileSize is zero.
const DefaultMaxFileSize = 4 << 20

// FileSource reads Markdown and text files under a directory. The
// directory is opened with os.Root, so nothing outside it is ever read:
// a symbolic link that points outside the root and a name with ".." that
// climbs out of it are errors, not documents. Hidden files and
// directories (names starting with ".") are skipped.
//
// A document's id is its slash-separated path under the root. Markdown
// front matter (between "---" lines at the top) may set "title" and
// "tags" ("tags: [a, b]" or "tags: a, b"); otherwise the title is the
// first "# " heading, or the file name. Metadata carries "path",
// "modified" (RFC 3339, UTC) and "size".
type FileSource struct {
	// Root is the directory to read.
	Root string
	// Extensions lists the file name extensions to read, with the dot,
	// case-insensitive; empty means .md, .markdown and .txt.
	Extensions []string
	// MaxFileSize is the largest file read, in bytes; a larger file is an
	// error. 0 means DefaultMaxFileSize.
	MaxFileSize int64
	// BaseURL, when set, makes each document's Source BaseURL followed by
	// its path ("https://wiki.example.com/docs/" + "guides/revenue.md");
	// otherwise Source is the path.
	BaseURL string
}

// Documents walks the root in lexical order and yields one document per
// matching file. It stops at the first error, which it yields.
func (s *FileSource) Documents(ctx context.Context) iter.Seq2[Document, error] {
	return func(yield func(Document, error) bool) {
		root, err := os.OpenRoot(s.Root)
		if err != nil {
			yield(Document{}, fmt.Errorf("docs: file source: %w", err))
			return
		}
		defer root.Close()
		stop := errors.New("stop")
		err = fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if name != "." && strings.HasPrefix(d.Name(), ".") {
				if d.IsDir() {
					return fs.SkipDir
				}
				return nil
			}
			if d.IsDir() || !s.wanted(name) {
				return nil
			}
			doc, err := s.load(root, name)
			if errors.Is(err, errIsDir) {
				return nil // a link to a directory inside the root; WalkDir does not follow it
			}
			if err != nil {
				return err
			}
			if !yield(doc, nil) {
				return stop
			}
			return nil
		})
		if err != nil && !errors.Is(err, stop) {
			yield(Document{}, fmt.Errorf("docs: file source %s: %w", s.Root, err))
		}
	}
}

// Load reads one document by its slash-separated path under the root,
// for updating a single file in the index. A path that leaves the root
// ("../x.md", an absolute path, a link pointing outside) is an error.
func (s *FileSource) Load(name string) (Document, error) {
	if !s.wanted(name) {
		return Document{}, fmt.Errorf("docs: file source: %q does not have one of the extensions %v", name, s.extensions())
	}
	root, err := os.OpenRoot(s.Root)
	if err != nil {
		return Document{}, fmt.Errorf("docs: file source: %w", err)
	}
	defer root.Close()
	doc, err := s.load(root, name)
	if err != nil {
		return Document{}, fmt.Errorf("docs: file source %s: %w", s.Root, err)
	}
	return doc, nil
}

var errIsDir = errors.New("is a directory")

func (s *FileSource) extensions() []string {
	if len(s.Extensions) == 0 {
		return []string{".md", ".markdown", ".txt"}
	}
	return s.Extensions
}

func (s *FileSource) wanted(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return slices.ContainsFunc(s.extensions(), func(e string) bool { return strings.ToLower(e) == ext })
}

func (s *FileSource) load(root *os.Root, name string) (Document, error) {
	f, err := root.Open(name) // os.Root refuses paths and links that leave the root
	if err != nil {
		return Document{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Document{}, err
	}
	if info.IsDir() {
		return Document{}, fmt.Errorf("%s: %w", name, errIsDir)
	}
	limit := s.MaxFileSize
	if limit <= 0 {
		limit = DefaultMaxFileSize
	}
	if info.Size() > limit {
		return Document{}, fmt.Errorf("%s: %d bytes is over the %d-byte limit", name, info.Size(), limit)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return Document{}, fmt.Errorf("%s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return Document{}, fmt.Errorf("%s: over the %d-byte limit", name, limit)
	}
	if !utf8.Valid(b) {
		return Document{}, fmt.Errorf("%s: not UTF-8 text", name)
	}
	doc := parseText(name, string(b))
	doc.Metadata = map[string]string{
		"path":     name,
		"modified": info.ModTime().UTC().Format(time.RFC3339),
		"size":     strconv.FormatInt(info.Size(), 10),
	}
	doc.Source = s.BaseURL + name
	return doc, nil
}

// parseText splits front matter from the body and finds the title.
func parseText(name, text string) Document {
	doc := Document{ID: name}
	text = strings.TrimPrefix(text, "\ufeff")
	if body, fm, ok := frontMatter(text); ok {
		text = body
		for _, line := range strings.Split(fm, "\n") {
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			v = strings.TrimSpace(v)
			switch strings.TrimSpace(k) {
			case "title":
				doc.Title = unquote(v)
			case "tags":
				v = strings.TrimSuffix(strings.TrimPrefix(v, "["), "]")
				for _, t := range strings.Split(v, ",") {
					if t = unquote(strings.TrimSpace(t)); t != "" {
						doc.Tags = append(doc.Tags, t)
					}
				}
			}
		}
	}
	doc.Content = strings.TrimSpace(text)
	if doc.Title == "" && isMarkdown(name) {
		for _, line := range strings.Split(doc.Content, "\n") {
			if t, ok := strings.CutPrefix(strings.TrimSpace(line), "# "); ok {
				doc.Title = strings.TrimSpace(t)
				break
			}
		}
	}
	if doc.Title == "" {
		base := path.Base(name)
		doc.Title = strings.TrimSuffix(base, path.Ext(base))
	}
	return doc
}

func isMarkdown(name string) bool {
	ext := strings.ToLower(path.Ext(name))
	return ext == ".md" || ext == ".markdown"
}

func frontMatter(text string) (body, fm string, ok bool) {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return text, "", false
	}
	fm, body, ok = strings.Cut(rest, "\n---\n")
	if !ok {
		if fm, ok = strings.CutSuffix(rest, "\n---"); !ok {
			return text, "", false
		}
		body = ""
	}
	return body, fm, true
}

func unquote(s string) string {
	if len(s) >= 2 && (s[0] == '"' && s[len(s)-1] == '"' || s[0] == '\'' && s[len(s)-1] == '\'') {
		return s[1 : len(s)-1]
	}
	return s
}

// SQLSource reads documents from a database table, or from a query, one
// row per document. Column values are matched by name: IDColumn,
// TitleColumn and ContentColumn are required, TagsColumn, SourceColumn
// and MetadataColumns are read when set. Tags are a JSON array of strings
// or a comma-separated list. Non-text values are formatted (numbers as
// digits, times as RFC 3339); NULL is empty.
//
// With Table, SQLSource builds the SELECT itself, quoting every
// identifier (the SQL standard's double quotes, which SQLite and
// PostgreSQL use; set Quote for other databases), so table and column
// names are never interpreted as SQL. With Query, the host's statement
// runs as given, with Args as its parameters.
type SQLSource struct {
	DB *sql.DB
	// Schema optionally qualifies Table.
	Schema string
	Table  string
	// Query replaces the generated SELECT when set (Schema and Table are
	// then ignored).
	Query string
	Args  []any
	// Column names; IDColumn defaults to "id", TitleColumn to "title",
	// ContentColumn to "content".
	IDColumn        string
	TitleColumn     string
	ContentColumn   string
	TagsColumn      string
	SourceColumn    string
	MetadataColumns []string
	// Quote quotes an identifier; nil means QuoteIdent.
	Quote func(string) string
}

// QuoteIdent quotes a SQL identifier the standard way: in double quotes,
// with embedded double quotes doubled.
func QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

func (s *SQLSource) columns() (id, title, content string) {
	return cmpOr(s.IDColumn, "id"), cmpOr(s.TitleColumn, "title"), cmpOr(s.ContentColumn, "content")
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// statement returns the SQL to run and validates the configuration.
func (s *SQLSource) statement() (string, error) {
	if s.DB == nil {
		return "", errors.New("docs: SQL source has no database")
	}
	if s.Query != "" {
		return s.Query, nil
	}
	id, title, content := s.columns()
	cols := []string{id, title, content}
	for _, c := range []string{s.TagsColumn, s.SourceColumn} {
		if c != "" {
			cols = append(cols, c)
		}
	}
	cols = append(cols, s.MetadataColumns...)
	names := append(slices.Clone(cols), s.Schema, s.Table)
	if s.Table == "" {
		return "", errors.New("docs: SQL source needs a Table or a Query")
	}
	for i, n := range names {
		if strings.ContainsRune(n, 0) || (n == "" && i != len(names)-2) {
			return "", fmt.Errorf("docs: SQL source: invalid identifier %q", n)
		}
	}
	quote := s.Quote
	if quote == nil {
		quote = QuoteIdent
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	seen := map[string]bool{}
	first := true
	for _, c := range cols {
		if seen[c] {
			continue
		}
		seen[c] = true
		if !first {
			b.WriteString(", ")
		}
		first = false
		b.WriteString(quote(c))
	}
	b.WriteString(" FROM ")
	if s.Schema != "" {
		b.WriteString(quote(s.Schema))
		b.WriteByte('.')
	}
	b.WriteString(quote(s.Table))
	b.WriteString(" ORDER BY ")
	b.WriteString(quote(id))
	return b.String(), nil
}

// Documents runs the statement and yields one document per row. It stops
// at the first error (a missing column, a NULL or empty id, a database
// error), which it yields.
func (s *SQLSource) Documents(ctx context.Context) iter.Seq2[Document, error] {
	return func(yield func(Document, error) bool) {
		stmt, err := s.statement()
		if err != nil {
			yield(Document{}, err)
			return
		}
		rows, err := s.DB.QueryContext(ctx, stmt, s.Args...)
		if err != nil {
			yield(Document{}, fmt.Errorf("docs: SQL source: %w", err))
			return
		}
		defer rows.Close()
		names, err := rows.Columns()
		if err != nil {
			yield(Document{}, fmt.Errorf("docs: SQL source: %w", err))
			return
		}
		index := map[string]int{}
		for i, n := range names {
			if _, dup := index[n]; !dup {
				index[n] = i
			}
		}
		id, title, content := s.columns()
		for _, c := range append([]string{id, title, content}, s.MetadataColumns...) {
			if _, ok := index[c]; !ok {
				yield(Document{}, fmt.Errorf("docs: SQL source: the result has no column %q (columns: %s)", c, strings.Join(names, ", ")))
				return
			}
		}
		for _, c := range []string{s.TagsColumn, s.SourceColumn} {
			if _, ok := index[c]; c != "" && !ok {
				yield(Document{}, fmt.Errorf("docs: SQL source: the result has no column %q (columns: %s)", c, strings.Join(names, ", ")))
				return
			}
		}
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				yield(Document{}, fmt.Errorf("docs: SQL source: %w", err))
				return
			}
			col := func(name string) string { return text(vals[index[name]]) }
			doc := Document{ID: col(id), Title: col(title), Content: col(content)}
			if vals[index[id]] == nil || doc.ID == "" {
				yield(Document{}, fmt.Errorf("docs: SQL source: a row has an empty %q", id))
				return
			}
			if s.TagsColumn != "" {
				doc.Tags = parseTags(col(s.TagsColumn))
			}
			if s.SourceColumn != "" {
				doc.Source = col(s.SourceColumn)
			}
			for _, c := range s.MetadataColumns {
				if v := vals[index[c]]; v != nil {
					if doc.Metadata == nil {
						doc.Metadata = map[string]string{}
					}
					doc.Metadata[c] = text(v)
				}
			}
			if !yield(doc, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(Document{}, fmt.Errorf("docs: SQL source: %w", err))
		}
	}
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case []byte:
		return string(x)
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

func parseTags(s string) []string {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil
	}
	var tags []string
	if !strings.HasPrefix(s, "[") || json.Unmarshal([]byte(s), &tags) != nil {
		tags = strings.Split(s, ",")
	}
	out := tags[:0]
	for _, t := range tags {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}
