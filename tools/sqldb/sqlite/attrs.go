package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	msqlite "modernc.org/sqlite"

	"github.com/bichat-go/bichat/tools/sqldb"
)

// AttrFunction is the SQL function through which views read the caller's
// data-scoping attributes: bichat_attr('user_id') is the value of
// sqldb.Limits.Attributes["user_id"] of the statement running on that
// connection, and an error (which fails the statement) when the statement
// carries no such attribute or it is empty.
const AttrFunction = "bichat_attr"

// attrMarker starts the message of the function's error, so that Query
// reports it as a refusal.
const attrMarker = "bichat_attr: "

var (
	registerOnce sync.Once
	registerErr  error
)

// RegisterAttrFunction registers bichat_attr on the process-wide "sqlite"
// driver of modernc.org/sqlite, for the connections a host opens with
// sql.Open("sqlite", ...) to create the views that call it (SQLite
// refuses CREATE VIEW with an unknown function). There it has no caller
// and always fails; only statements run through DB.Query see attributes.
// Call it before opening those connections; calling it again does
// nothing.
func RegisterAttrFunction() error {
	registerOnce.Do(func() {
		registerErr = msqlite.RegisterScalarFunction(AttrFunction, 1, func(*msqlite.FunctionContext, []driver.Value) (driver.Value, error) {
			return nil, errors.New(attrMarker + "no caller: the function has values only in statements run by bichat's sqlite.DB")
		})
		if registerErr != nil {
			registerErr = fmt.Errorf("sqlite: register %s: %w", AttrFunction, registerErr)
		}
	})
	return registerErr
}

// attrSlot holds the attributes of the statement running on one
// connection (nil between statements).
type attrSlot struct {
	attrs atomic.Pointer[map[string]string]
}

func (s *attrSlot) call(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	name, ok := args[0].(string)
	if !ok {
		return nil, errors.New(attrMarker + "the argument must be an attribute name (text), e.g. bichat_attr('user_id')")
	}
	m := s.attrs.Load()
	if m == nil {
		return nil, errors.New(attrMarker + "no caller attributes on this connection")
	}
	v := (*m)[name]
	if v == "" {
		return nil, fmt.Errorf(attrMarker+"the data-scoping attribute %q is missing from the call", name)
	}
	return v, nil
}

// connector opens connections each through a driver of its own, which
// carries a bichat_attr bound to that connection's slot: modernc.org/sqlite
// registers functions per driver and tells a function nothing of the
// connection it runs on. Each opened connection costs the driver's
// registration for the life of the process, so the pool keeps its
// connections (see Open).
type connector struct {
	dsn   string
	slots *sync.Map // driver.Conn -> *attrSlot
}

func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	slot := &attrSlot{}
	d := &msqlite.Driver{}
	if err := d.RegisterFunction(AttrFunction, &msqlite.FunctionImpl{NArgs: 1, Scalar: slot.call}); err != nil {
		return nil, err
	}
	conn, err := d.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	c.slots.Store(conn, slot)
	return conn, nil
}

func (c *connector) Driver() driver.Driver { return &msqlite.Driver{} }

// checkAttributes refuses a statement whose call lacks one of the
// attributes the views need (Options.Attributes).
func (db *DB) checkAttributes(lim sqldb.Limits) error {
	for _, a := range db.required {
		v := lim.Attributes[a]
		if v == "" {
			return sqldb.Rejected(fmt.Sprintf("the data-scoping attribute %q is missing from the call; the statement was not run", a),
				"the host maps its caller to attributes (bichat.Config.Attributes); without "+a+" no data is shown")
		}
		if strings.IndexByte(v, 0) >= 0 {
			return sqldb.Rejected(fmt.Sprintf("the data-scoping attribute %q holds a NUL byte; the statement was not run", a), "")
		}
	}
	return nil
}

// bindAttributes gives the statement about to run on conn its
// attributes and returns the function that takes them away again.
func (db *DB) bindAttributes(raw any, attrs map[string]string) (func(), error) {
	v, ok := db.slots.Load(raw)
	if !ok {
		return nil, errors.New("sqlite: the connection was not opened by this DB")
	}
	slot := v.(*attrSlot)
	m := make(map[string]string, len(attrs))
	for k, val := range attrs {
		m[k] = val
	}
	slot.attrs.Store(&m)
	return func() { slot.attrs.Store(nil) }, nil
}

// cteShadowing returns the name of a real view that stmt redefines as a
// common table expression (name AS (...), name(cols) AS (...)), or "".
// SQLite's authorizer names a CTE where it names a view, so such a CTE
// over a base table would pass for the view in the allowlist.
func cteShadowing(stmt string, views map[string]bool) string {
	toks, err := tokens(stmt)
	if err != nil {
		return ""
	}
	for i, tk := range toks {
		if tk.kind != tokWord && tk.kind != tokIdent {
			continue
		}
		name := strings.ToLower(unquote(tk.text))
		if !views[name] || i+1 >= len(toks) {
			continue
		}
		next := toks[i+1]
		if next.kind == tokPunct && next.text == "(" {
			return name
		}
		if next.kind != tokWord || !strings.EqualFold(next.text, "AS") {
			continue
		}
		j := i + 2
		for j < len(toks) && toks[j].kind == tokWord && (strings.EqualFold(toks[j].text, "NOT") || strings.EqualFold(toks[j].text, "MATERIALIZED")) {
			j++
		}
		if j < len(toks) && toks[j].kind == tokPunct && toks[j].text == "(" {
			return name
		}
	}
	return ""
}

// unquote strips SQLite identifier quotes ("x", `x`, [x]).
func unquote(s string) string {
	if len(s) < 2 {
		return s
	}
	switch s[0] {
	case '"', '`':
		q := string(s[0])
		return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
	case '[':
		return s[1 : len(s)-1]
	}
	return s
}
