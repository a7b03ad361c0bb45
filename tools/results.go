package tools

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// StoreResults returns the Results that keeps tables in repo, so that
// named results (result_1, ...) outlive the process: a resumed run, a
// later message of the session or another process sharing the store can
// use them, and they are deleted with their session. Pass the same value
// to every tool that takes a Results (sqldb, python, chart, export), and
// pass the repo of the service's domain.Repositories (Results), so the
// sessions the tools see exist in it.
//
// The session is the tenant and session id of the tool call
// (agents.CallInfoFromContext); a context without a session yields an
// error matching domain.ErrInvalid. How many tables a session keeps and
// how large one may be are the repository's limits (domain/memory and
// domain/postgres: 10 tables, 8 MiB of JSON each); Put reports a larger
// table with an error matching domain.ErrTooLarge. Get of a name the
// session lacks returns an error matching domain.ErrNotFound that lists
// the names available, as MemoryResults does.
//
// Tables are stored as JSON that records the Go type of each column, so
// every cell comes back with the type it went in with: nil, bool, int64,
// float64 (NaN and ±Inf included), string, []byte and time.Time. A time
// comes back as the same instant with the same UTC offset: in time.UTC
// when it was in UTC, otherwise in time.Local when Local uses that offset
// at that instant, else in a fixed zone of that offset (the zone's name
// is not kept). Cells of other integer types come back as
// int64, float32 as float64, and any other type as the string FormatCell
// renders for it.
func StoreResults(repo domain.ResultRepository) Results {
	return &storeResults{repo: repo}
}

type storeResults struct {
	repo domain.ResultRepository
}

// callSession returns the tenant and session of the tool call in ctx.
func callSession(ctx context.Context, op string) (tenantID, sessionID string, err error) {
	info, _ := agents.CallInfoFromContext(ctx)
	if info.TenantID == "" || info.SessionID == "" {
		return "", "", fmt.Errorf("tools: %s: the context carries no tenant and session (agents.CallInfoFromContext), so there is no session to keep results in: %w",
			op, domain.ErrInvalid)
	}
	return info.TenantID, info.SessionID, nil
}

// Put implements Results.
func (s *storeResults) Put(ctx context.Context, t Table) (string, error) {
	const op = "store result"
	if t.Name != "" && !domain.ValidName(t.Name) {
		return "", domain.Invalid("name", fmt.Sprintf("%q is not a valid table name", t.Name))
	}
	tenantID, sessionID, err := callSession(ctx, op)
	if err != nil {
		return "", err
	}
	data, err := encodeTable(t)
	if err != nil {
		return "", fmt.Errorf("tools: %s: %w", op, err)
	}
	name, err := s.repo.PutResult(ctx, &domain.StoredResult{
		TenantID:  tenantID,
		SessionID: sessionID,
		Name:      t.Name,
		Data:      data,
	})
	if err != nil {
		if errors.Is(err, domain.ErrTooLarge) {
			return "", fmt.Errorf("tools: %s: the table is %s as JSON (%d rows), more than the result store keeps; fetch fewer rows or columns: %w",
				op, FormatSize(len(data)), len(t.Rows), err)
		}
		return "", fmt.Errorf("tools: %s: %w", op, err)
	}
	return name, nil
}

// Get implements Results.
func (s *storeResults) Get(ctx context.Context, name string) (Table, error) {
	const op = "get result"
	tenantID, sessionID, err := callSession(ctx, op)
	if err != nil {
		return Table{}, err
	}
	r, err := s.repo.GetResult(ctx, tenantID, sessionID, name)
	if errors.Is(err, domain.ErrNotFound) {
		avail, lerr := s.List(ctx)
		if lerr != nil {
			return Table{}, fmt.Errorf("tools: no result called %q (listing the others failed: %v): %w", name, lerr, domain.ErrNotFound)
		}
		if len(avail) == 0 {
			return Table{}, fmt.Errorf("tools: no result called %q: this session has no results yet; run query_database first: %w", name, domain.ErrNotFound)
		}
		return Table{}, fmt.Errorf("tools: no result called %q; available: %v: %w", name, avail, domain.ErrNotFound)
	}
	if err != nil {
		return Table{}, fmt.Errorf("tools: %s %q: %w", op, name, err)
	}
	t, err := decodeTable(r.Data)
	if err != nil {
		return Table{}, fmt.Errorf("tools: %s %q: %w", op, name, err)
	}
	t.Name = r.Name
	return t, nil
}

// List implements Results. A session the repository does not know has no
// results.
func (s *storeResults) List(ctx context.Context) ([]string, error) {
	const op = "list results"
	tenantID, sessionID, err := callSession(ctx, op)
	if err != nil {
		return nil, err
	}
	names, err := s.repo.ListResults(ctx, tenantID, sessionID)
	if errors.Is(err, domain.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tools: %s: %w", op, err)
	}
	return names, nil
}

// storedTable is the JSON document StoreResults keeps: the Table, with
// one kind per column telling decodeTable which Go type its cells have.
type storedTable struct {
	// Format is tableFormat; a later format bumps it.
	Format    int      `json:"format"`
	Columns   []Column `json:"columns"`
	Kinds     []string `json:"kinds"`
	Rows      [][]any  `json:"rows"`
	Truncated bool     `json:"truncated,omitempty"`
	SQL       string   `json:"sql,omitempty"`
	Datasets  []string `json:"datasets,omitempty"`
}

const tableFormat = 1

// Cell kinds. A column whose non-nil cells share one kind has it; every
// cell of a "mixed" column is a [kind, value] pair (nil stays null); a
// column of nil cells only has "".
const (
	kindBool   = "bool"
	kindInt    = "int"
	kindFloat  = "float"
	kindString = "string"
	kindTime   = "time"
	kindBytes  = "bytes"
	kindMixed  = "mixed"
)

// normCell returns v as one of the Table cell types and its kind.
func normCell(v any) (any, string) {
	switch x := v.(type) {
	case nil:
		return nil, ""
	case bool:
		return x, kindBool
	case int64:
		return x, kindInt
	case int:
		return int64(x), kindInt
	case int32:
		return int64(x), kindInt
	case int16:
		return int64(x), kindInt
	case int8:
		return int64(x), kindInt
	case uint8:
		return int64(x), kindInt
	case uint16:
		return int64(x), kindInt
	case uint32:
		return int64(x), kindInt
	case uint64:
		if x <= math.MaxInt64 {
			return int64(x), kindInt
		}
		return float64(x), kindFloat
	case uint:
		if uint64(x) <= math.MaxInt64 {
			return int64(x), kindInt
		}
		return float64(x), kindFloat
	case float64:
		return x, kindFloat
	case float32:
		return float64(x), kindFloat
	case string:
		return x, kindString
	case time.Time:
		return x, kindTime
	case []byte:
		return x, kindBytes
	}
	return FormatCell(v), kindString
}

// encodeCell returns the JSON form of a normalized cell of kind k.
func encodeCell(v any, k string) any {
	switch k {
	case kindFloat:
		f := v.(float64)
		switch {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "+Inf"
		case math.IsInf(f, -1):
			return "-Inf"
		}
		return f
	case kindTime:
		return v.(time.Time).Format(time.RFC3339Nano)
	}
	return v // bool, int64, string; []byte encodes as base64
}

func encodeTable(t Table) ([]byte, error) {
	width := len(t.Columns)
	for _, row := range t.Rows {
		width = max(width, len(row))
	}
	kinds := make([]string, width)
	rows := make([][]any, len(t.Rows))
	for r, row := range t.Rows {
		out := make([]any, len(row))
		for c, v := range row {
			nv, k := normCell(v)
			out[c] = nv
			switch {
			case k == "" || kinds[c] == k:
			case kinds[c] == "":
				kinds[c] = k
			default:
				kinds[c] = kindMixed
			}
		}
		rows[r] = out
	}
	for _, row := range rows {
		for c, v := range row {
			if v == nil {
				continue
			}
			if kinds[c] == kindMixed {
				_, k := normCell(v)
				row[c] = []any{k, encodeCell(v, k)}
			} else {
				row[c] = encodeCell(v, kinds[c])
			}
		}
	}
	return json.Marshal(storedTable{
		Format:    tableFormat,
		Columns:   t.Columns,
		Kinds:     kinds,
		Rows:      rows,
		Truncated: t.Truncated,
		SQL:       t.SQL,
		Datasets:  t.Datasets,
	})
}

func decodeTable(data []byte) (Table, error) {
	var st struct {
		storedTable
		Rows [][]json.RawMessage `json:"rows"`
	}
	if err := json.Unmarshal(data, &st); err != nil {
		return Table{}, fmt.Errorf("stored result is not a table: %w", err)
	}
	if st.Format != tableFormat {
		return Table{}, fmt.Errorf("stored result has table format %d, this version reads format %d", st.Format, tableFormat)
	}
	t := Table{
		Columns:   st.Columns,
		Rows:      make([][]any, len(st.Rows)),
		Truncated: st.Truncated,
		SQL:       st.SQL,
		Datasets:  st.Datasets,
	}
	for r, row := range st.Rows {
		out := make([]any, len(row))
		for c, raw := range row {
			k := ""
			if c < len(st.Kinds) {
				k = st.Kinds[c]
			}
			v, err := decodeCell(raw, k)
			if err != nil {
				return Table{}, fmt.Errorf("stored result row %d column %d: %w", r, c, err)
			}
			out[c] = v
		}
		t.Rows[r] = out
	}
	return t, nil
}

func decodeCell(raw json.RawMessage, k string) (any, error) {
	if string(raw) == "null" {
		return nil, nil
	}
	switch k {
	case kindBool:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case kindInt:
		return strconv.ParseInt(string(raw), 10, 64)
	case kindFloat:
		if strings.HasPrefix(string(raw), `"`) {
			var s string
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, err
			}
			switch s {
			case "NaN":
				return math.NaN(), nil
			case "+Inf":
				return math.Inf(1), nil
			case "-Inf":
				return math.Inf(-1), nil
			}
			return nil, fmt.Errorf("%q is not a number", s)
		}
		return strconv.ParseFloat(string(raw), 64)
	case kindString:
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case kindTime:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return time.Parse(time.RFC3339Nano, s)
	case kindBytes:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, err
		}
		return base64.StdEncoding.DecodeString(s)
	case kindMixed:
		var pair []json.RawMessage
		if err := json.Unmarshal(raw, &pair); err != nil || len(pair) != 2 {
			return nil, fmt.Errorf("mixed cell %s is not a [kind, value] pair", raw)
		}
		var inner string
		if err := json.Unmarshal(pair[0], &inner); err != nil || inner == "" || inner == kindMixed {
			return nil, fmt.Errorf("mixed cell %s has no valid kind", raw)
		}
		return decodeCell(pair[1], inner)
	}
	return nil, fmt.Errorf("unknown cell kind %q", k)
}
