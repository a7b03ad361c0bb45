package tools

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// Column is one column of a Table.
type Column struct {
	Name string `json:"name"`
	// Type is the database type name as the driver reports it ("int8",
	// "numeric", "timestamptz", "TEXT"); empty when unknown.
	Type string `json:"type,omitempty"`
}

// Table is a rectangular result: what query_database fetched, or rows a
// tool was given inline. Cell values are nil, bool, int64, float64,
// string, time.Time or []byte; adapters convert everything else (numeric,
// uuid, json) to one of these.
type Table struct {
	// Name is how later tools refer to the table ("result_1").
	Name    string   `json:"name,omitempty"`
	Columns []Column `json:"columns"`
	Rows    [][]any  `json:"rows"`
	// Truncated is true when the source had more rows than Rows holds.
	Truncated bool `json:"truncated,omitempty"`
	// SQL is the statement that produced the table, when one did.
	SQL string `json:"sql,omitempty"`
	// Datasets lists the datasets the statement read, when known.
	Datasets []string `json:"datasets,omitempty"`
}

// ColumnIndex returns the index of the column called name, or -1.
func (t *Table) ColumnIndex(name string) int {
	for i, c := range t.Columns {
		if c.Name == name {
			return i
		}
	}
	return -1
}

// CSV encodes the table with a header row. Times are RFC 3339, bytes are
// base64, floats use the shortest representation that reads back exactly,
// nil is the empty field.
func (t *Table) CSV() ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	head := make([]string, len(t.Columns))
	for i, c := range t.Columns {
		head[i] = c.Name
	}
	if err := w.Write(head); err != nil {
		return nil, err
	}
	rec := make([]string, len(t.Columns))
	for r, row := range t.Rows {
		if len(row) != len(t.Columns) {
			return nil, fmt.Errorf("tools: table %q row %d has %d cells for %d columns", t.Name, r, len(row), len(t.Columns))
		}
		for i, v := range row {
			rec[i] = FormatCell(v)
		}
		if err := w.Write(rec); err != nil {
			return nil, err
		}
	}
	w.Flush()
	return buf.Bytes(), w.Error()
}

// FormatCell renders one cell value as text, the way CSV and markdown
// tables show it.
func FormatCell(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case bool:
		return strconv.FormatBool(x)
	case int64:
		return strconv.FormatInt(x, 10)
	case int:
		return strconv.Itoa(x)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
		return strconv.FormatFloat(x, 'f', -1, 64)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	default:
		return fmt.Sprint(x)
	}
}

// Results keeps the latest tables of each session so later tool calls can
// name them. Implementations must be safe for concurrent use.
type Results interface {
	// Put stores t under the session of ctx (see agents.CallInfoFromContext)
	// and returns the name it is known by: t.Name when set, otherwise the
	// next "result_N".
	Put(ctx context.Context, t Table) (string, error)
	// Get returns the table called name in the session of ctx, or an error
	// matching domain.ErrNotFound that lists the names available.
	Get(ctx context.Context, name string) (Table, error)
	// List returns the session's table names, oldest first.
	List(ctx context.Context) ([]string, error)
}

// MemoryResults is the in-memory Results: per session (tenant + session id
// from the call context), the last Keep tables, oldest evicted first.
type MemoryResults struct {
	// Keep bounds the tables per session; 0 means 10.
	Keep int

	mu       sync.Mutex
	sessions map[string]*sessionTables
}

type sessionTables struct {
	next   int
	names  []string
	tables map[string]Table
}

// NewMemoryResults returns an empty store keeping keep tables per session
// (0 means 10).
func NewMemoryResults(keep int) *MemoryResults { return &MemoryResults{Keep: keep} }

func sessionKey(ctx context.Context) string {
	info, _ := agents.CallInfoFromContext(ctx)
	return info.TenantID + "\x00" + info.SessionID
}

// Put implements Results.
func (m *MemoryResults) Put(ctx context.Context, t Table) (string, error) {
	if t.Name != "" && !domain.ValidName(t.Name) {
		return "", domain.Invalid("name", fmt.Sprintf("%q is not a valid table name", t.Name))
	}
	keep := m.Keep
	if keep <= 0 {
		keep = 10
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions == nil {
		m.sessions = make(map[string]*sessionTables)
	}
	key := sessionKey(ctx)
	s := m.sessions[key]
	if s == nil {
		s = &sessionTables{tables: make(map[string]Table)}
		m.sessions[key] = s
	}
	if t.Name == "" {
		for {
			s.next++
			t.Name = "result_" + strconv.Itoa(s.next)
			if _, taken := s.tables[t.Name]; !taken {
				break
			}
		}
	}
	if _, exists := s.tables[t.Name]; exists {
		for i, n := range s.names {
			if n == t.Name {
				s.names = append(s.names[:i], s.names[i+1:]...)
				break
			}
		}
	}
	s.tables[t.Name] = t
	s.names = append(s.names, t.Name)
	for len(s.names) > keep {
		delete(s.tables, s.names[0])
		s.names = s.names[1:]
	}
	return t.Name, nil
}

// Get implements Results.
func (m *MemoryResults) Get(ctx context.Context, name string) (Table, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionKey(ctx)]
	if s != nil {
		if t, ok := s.tables[name]; ok {
			return t, nil
		}
	}
	var avail []string
	if s != nil {
		avail = append(avail, s.names...)
	}
	if len(avail) == 0 {
		return Table{}, fmt.Errorf("tools: no result called %q: this session has no results yet; run query_database first: %w", name, domain.ErrNotFound)
	}
	return Table{}, fmt.Errorf("tools: no result called %q; available: %v: %w", name, avail, domain.ErrNotFound)
}

// List implements Results.
func (m *MemoryResults) List(ctx context.Context) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[sessionKey(ctx)]
	if s == nil {
		return nil, nil
	}
	return append([]string(nil), s.names...), nil
}

// FormatSize renders a byte count the way tool summaries show file sizes:
// "532 bytes", "12 KB" (rounded), "1.4 MB".
func FormatSize(n int) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", (n+512)>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// SaveArtifact stores content in store under the tenant of the tool call
// (agents.CallInfoFromContext) and returns the artifact with its hash, size
// and URI set. Every tool that produces a file saves it this way, so the
// service can serve it to the tenant's users and to nobody else.
func SaveArtifact(ctx context.Context, store domain.ArtifactStore, meta domain.Artifact, content []byte) (domain.Artifact, error) {
	info, _ := agents.CallInfoFromContext(ctx)
	return store.Put(ctx, info.TenantID, meta, bytes.NewReader(content))
}
