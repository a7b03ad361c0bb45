package sqldb

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

// Profile describes the values of a dataset, computed in SQL.
type Profile struct {
	Dataset string          `json:"dataset"`
	Rows    int64           `json:"rows"`
	Columns []ColumnProfile `json:"columns"`
}

// ColumnProfile describes one column. Pointers are nil when the statistic
// does not apply to the column's type.
type ColumnProfile struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Nulls    int64    `json:"nulls"`
	Distinct *int64   `json:"distinct,omitempty"`
	Min      any      `json:"min,omitempty"`
	Max      any      `json:"max,omitempty"`
	Mean     *float64 `json:"mean,omitempty"`
	Median   *float64 `json:"median,omitempty"`
	// Top are the most frequent values of text columns (not in
	// data-minimisation mode).
	Top []ValueCount `json:"top,omitempty"`
}

// ValueCount is a value and how often it occurs.
type ValueCount struct {
	Value any   `json:"value"`
	Count int64 `json:"count"`
}

type typeClass uint8

const (
	classOther typeClass = iota
	classNumber
	classText
	classTime
	classBool
	classUUID
)

func classify(typ string) typeClass {
	t := strings.ToLower(strings.TrimSpace(typ))
	switch {
	case strings.HasPrefix(t, "interval"), strings.HasSuffix(t, "[]"):
		return classOther
	case strings.Contains(t, "int") || strings.HasPrefix(t, "numeric") || strings.HasPrefix(t, "decimal") ||
		strings.Contains(t, "real") || strings.Contains(t, "double") || strings.Contains(t, "float") || strings.Contains(t, "serial"):
		return classNumber
	case strings.HasPrefix(t, "date") || strings.HasPrefix(t, "time"):
		return classTime
	case t == "" || strings.Contains(t, "char") || strings.Contains(t, "text") || t == "name" || strings.Contains(t, "clob"):
		return classText
	case strings.HasPrefix(t, "bool"):
		return classBool
	case t == "uuid":
		return classUUID
	}
	return classOther
}

// maxProfileColumns bounds the columns one profile covers; maxTopColumns
// the text columns that get top values.
const (
	maxProfileColumns = 60
	maxTopColumns     = 10
)

// ProfileDataset computes the profile of d on db within lim (one
// aggregate statement, plus one per text column for top values unless
// minimize, plus one per numeric column for the median on SQLite).
func ProfileDataset(ctx context.Context, db DB, d domain.Dataset, lim Limits, minimize bool) (*Profile, error) {
	pg := db.Dialect() == DialectPostgres
	src := QuoteQualified(d.Source)
	fields := d.Fields
	if len(fields) > maxProfileColumns {
		fields = fields[:maxProfileColumns]
	}
	lim.MaxRows = 1
	sel := []string{"count(*)"}
	type slot struct{ nonNull, distinct, min, max, mean, median int }
	slots := make([]slot, len(fields))
	add := func(expr string) int { sel = append(sel, expr); return len(sel) - 1 }
	for i, f := range fields {
		c := QuoteIdent(f.Name)
		s := slot{distinct: -1, min: -1, max: -1, mean: -1, median: -1}
		s.nonNull = add("count(" + c + ")")
		switch cl := classify(f.Type); cl {
		case classNumber, classText, classTime:
			s.distinct = add("count(DISTINCT " + c + ")")
			s.min = add("min(" + c + ")")
			s.max = add("max(" + c + ")")
			if cl == classNumber {
				if pg {
					s.mean = add("avg(" + c + ")::float8")
					s.median = add("percentile_cont(0.5) WITHIN GROUP (ORDER BY " + c + "::float8)")
				} else {
					s.mean = add("avg(" + c + ")")
				}
			}
		case classBool, classUUID:
			s.distinct = add("count(DISTINCT " + c + ")")
		}
		slots[i] = s
	}
	res, err := db.Query(ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+src, lim)
	if err != nil {
		return nil, err
	}
	if len(res.Rows) != 1 {
		return nil, fmt.Errorf("sqldb: profile of %s returned %d rows", d.Name, len(res.Rows))
	}
	row := res.Rows[0]
	p := &Profile{Dataset: d.Name, Rows: toInt(row[0])}
	tops := 0
	for i, f := range fields {
		s := slots[i]
		cp := ColumnProfile{Name: f.Name, Type: f.Type, Nulls: p.Rows - toInt(row[s.nonNull])}
		if s.distinct >= 0 {
			n := toInt(row[s.distinct])
			cp.Distinct = &n
		}
		if s.min >= 0 {
			cp.Min, cp.Max = row[s.min], row[s.max]
		}
		if s.mean >= 0 {
			cp.Mean = toFloat(row[s.mean])
		}
		if s.median >= 0 {
			cp.Median = toFloat(row[s.median])
		}
		nonNull := toInt(row[s.nonNull])
		if classify(f.Type) == classNumber && !pg && nonNull > 0 {
			c := QuoteIdent(f.Name)
			q := fmt.Sprintf("SELECT %s FROM %s WHERE %s IS NOT NULL ORDER BY %s LIMIT %d OFFSET %d", c, src, c, c, 2-nonNull%2, (nonNull-1)/2)
			mr, err := db.Query(ctx, q, Limits{MaxRows: 2, Timeout: lim.Timeout, Tables: lim.Tables, TenantID: lim.TenantID, Attributes: lim.Attributes})
			if err != nil {
				return nil, err
			}
			var sum float64
			for _, r := range mr.Rows {
				if v := toFloat(r[0]); v != nil {
					sum += *v
				}
			}
			if len(mr.Rows) > 0 {
				m := sum / float64(len(mr.Rows))
				cp.Median = &m
			}
		}
		if classify(f.Type) == classText && !minimize && tops < maxTopColumns && nonNull > 0 {
			tops++
			c := QuoteIdent(f.Name)
			q := fmt.Sprintf("SELECT %s, count(*) FROM %s WHERE %s IS NOT NULL GROUP BY %s ORDER BY 2 DESC, 1 LIMIT 5", c, src, c, c)
			tr, err := db.Query(ctx, q, Limits{MaxRows: 5, Timeout: lim.Timeout, Tables: lim.Tables, TenantID: lim.TenantID, Attributes: lim.Attributes, MaxCellBytes: 200})
			if err != nil {
				return nil, err
			}
			for _, r := range tr.Rows {
				cp.Top = append(cp.Top, ValueCount{Value: r[0], Count: toInt(r[1])})
			}
		}
		if minimize {
			cp.Min, cp.Max = nil, nil
		}
		p.Columns = append(p.Columns, cp)
	}
	return p, nil
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case float64:
		return int64(x)
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

func toFloat(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case int64:
		f = float64(x)
	case string:
		var err error
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			return nil
		}
	default:
		return nil
	}
	return &f
}

// Markdown renders the profile for the model.
func (p *Profile) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Profile of %s: %d rows.\n\n", p.Dataset, p.Rows)
	b.WriteString("| column | type | nulls | distinct | min | max | mean | median | top values |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | --- | --- | --- |\n")
	for _, c := range p.Columns {
		dist, mean, median := "", "", ""
		if c.Distinct != nil {
			dist = strconv.FormatInt(*c.Distinct, 10)
		}
		if c.Mean != nil {
			mean = strconv.FormatFloat(*c.Mean, 'g', 6, 64)
		}
		if c.Median != nil {
			median = strconv.FormatFloat(*c.Median, 'g', 6, 64)
		}
		var top []string
		for _, t := range c.Top {
			top = append(top, fmt.Sprintf("%s (%d)", tools.FormatCell(t.Value), t.Count))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %s |\n", mdCell(c.Name), mdCell(c.Type), c.Nulls, mdCell(dist),
			mdCell(cellText(c.Min)), mdCell(cellText(c.Max)), mdCell(mean), mdCell(median), mdCell(strings.Join(top, ", ")))
	}
	return b.String()
}

func cellText(v any) string {
	if v == nil {
		return ""
	}
	return tools.FormatCell(v)
}

// ProfileArgs are the arguments of profile_dataset.
type ProfileArgs struct {
	Dataset string `json:"dataset" jsonschema:"minLength=1,description=The dataset to profile."`
}

// ProfileTool returns profile_dataset.
func (t *Tools) ProfileTool() agents.Tool {
	return agents.MustTool(ToolProfile, "Profile a dataset: per column its type, null count, distinct count, min and max, mean and median for numbers and the most frequent text values.",
		func(ctx context.Context, in ProfileArgs) (agents.Result, error) {
			d, err := t.Dataset(ctx, in.Dataset)
			if err != nil {
				return agents.Result{}, err
			}
			lim := t.limits(ctx)
			p, err := ProfileDataset(ctx, t.cfg.DB, d, lim, t.cfg.Minimize)
			var res *Result
			if p != nil {
				res = &Result{Rows: make([][]any, len(p.Columns))}
			}
			t.publish(ctx, ToolProfile, "", res, err)
			if err != nil {
				return agents.Result{}, err
			}
			return agents.Result{Summary: p.Markdown(), Payload: p, Datasets: []string{d.Name}}, nil
		}, agents.WithParallel(), agents.WithTimeout(t.toolTimeout()))
}
