package spidertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// Dir is where the Spider development set is read from.
const Dir = "/work/shared/datasets/spider-dev"

// Question is one dev.json question and the tables its gold SQL reads
// ("db.table", sorted).
type Question struct {
	Question string
	DB       string
	Gold     []string
}

// Set is the loaded data set.
type Set struct {
	// Datasets are every table of every database, in tables.json order,
	// with their columns, primary keys and declared foreign keys
	// (Relationships). Spider's natural-language names become
	// descriptions when they differ from the identifiers' words.
	// Database is left empty, as in the benchmark's earlier figures: set,
	// the database ids become searchable location words (LocationBoost),
	// which measured recall@5 0.897 instead of 0.906 on the pooled
	// catalog. DBs holds the database ids.
	Datasets []domain.Dataset
	// DBs holds, per dataset, the Spider database id.
	DBs []string
	// Natural holds, per dataset, Spider's natural-language table and
	// column names ("singer in concert", "singer id").
	Natural []string
	// Questions are dev.json's questions in order.
	Questions []Question
	// DevDBs are the databases the questions are about.
	DevDBs map[string]bool
}

// DevOnly returns the set restricted to the tables of the databases the
// questions are about.
func (s *Set) DevOnly() *Set {
	out := &Set{Questions: s.Questions, DevDBs: s.DevDBs}
	for i, d := range s.Datasets {
		if s.DevDBs[s.DBs[i]] {
			out.Datasets = append(out.Datasets, d)
			out.Natural = append(out.Natural, s.Natural[i])
			out.DBs = append(out.DBs, s.DBs[i])
		}
	}
	return out
}

// WithoutForeignKeys returns a copy of the datasets with their declared
// relationships dropped.
func (s *Set) WithoutForeignKeys() []domain.Dataset {
	out := make([]domain.Dataset, len(s.Datasets))
	for i, d := range s.Datasets {
		d.Relationships = nil
		out[i] = d
	}
	return out
}

var (
	once   sync.Once
	loaded *Set
	errLd  error
)

// Load returns the data set, read once per test binary. It skips tb when
// the files are absent, or fails it when BICHAT_REQUIRE_INTEGRATION=1.
func Load(tb testing.TB) *Set {
	tb.Helper()
	if _, err := os.Stat(filepath.Join(Dir, "tables.json")); err != nil {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			tb.Fatalf("spider-dev dataset missing at %s (BICHAT_REQUIRE_INTEGRATION=1)", Dir)
		}
		tb.Skipf("spider-dev dataset not found at %s; skipping the Spider benchmark", Dir)
	}
	once.Do(func() { loaded, errLd = read() })
	if errLd != nil {
		tb.Fatal(errLd)
	}
	return loaded
}

type spiderDB struct {
	DBID               string   `json:"db_id"`
	TableNames         []string `json:"table_names"`
	TableNamesOriginal []string `json:"table_names_original"`
	ColumnNames        [][2]any `json:"column_names"`
	ColumnNamesOrig    [][2]any `json:"column_names_original"`
	ColumnTypes        []string `json:"column_types"`
	PrimaryKeys        []any    `json:"primary_keys"`
	ForeignKeys        [][2]int `json:"foreign_keys"`
}

func read() (*Set, error) {
	raw, err := os.ReadFile(filepath.Join(Dir, "tables.json"))
	if err != nil {
		return nil, err
	}
	var dbs []spiderDB
	if err := json.Unmarshal(raw, &dbs); err != nil {
		return nil, fmt.Errorf("tables.json: %w", err)
	}
	set := &Set{}
	tableNames := map[string][]string{}
	for _, db := range dbs {
		names := make([]string, len(db.TableNamesOriginal))
		for i, t := range db.TableNamesOriginal {
			names[i] = db.DBID + "." + t
		}
		tableNames[db.DBID] = names
		pk := map[int]bool{}
		for _, p := range db.PrimaryKeys {
			if f, ok := p.(float64); ok {
				pk[int(f)] = true
			}
		}
		natural := make([]string, len(names))
		copy(natural, db.TableNames)
		for _, c := range db.ColumnNames {
			if ti := int(c[0].(float64)); ti >= 0 {
				natural[ti] += " " + c[1].(string)
			}
		}
		set.Natural = append(set.Natural, natural...)
		ds := make([]domain.Dataset, len(names))
		for i := range names {
			ds[i] = domain.Dataset{Name: names[i], Source: names[i], Kind: "table"}
			set.DBs = append(set.DBs, db.DBID)
			if natural := db.TableNames[i]; !slices.Equal(kb.Words(natural), kb.Words(db.TableNamesOriginal[i])) {
				ds[i].Description = natural
			}
		}
		colTable := map[int]int{}
		for ci, c := range db.ColumnNamesOrig {
			ti := int(c[0].(float64))
			if ti < 0 {
				continue
			}
			colTable[ci] = ti
			f := domain.Field{Name: c[1].(string), Type: db.ColumnTypes[ci], PrimaryKey: pk[ci]}
			if natural := db.ColumnNames[ci][1].(string); !slices.Equal(kb.Words(natural), kb.Words(f.Name)) {
				f.Description = natural
			}
			if _, dup := ds[ti].Field(f.Name); !dup {
				ds[ti].Fields = append(ds[ti].Fields, f)
			}
		}
		for _, fk := range db.ForeignKeys {
			from, to := colTable[fk[0]], colTable[fk[1]]
			ds[from].Relationships = append(ds[from].Relationships, domain.Relationship{
				From: names[from], FromColumns: []string{db.ColumnNamesOrig[fk[0]][1].(string)},
				To: names[to], ToColumns: []string{db.ColumnNamesOrig[fk[1]][1].(string)},
			})
		}
		set.Datasets = append(set.Datasets, ds...)
	}
	raw, err = os.ReadFile(filepath.Join(Dir, "dev.json"))
	if err != nil {
		return nil, err
	}
	var dev []struct {
		DBID     string         `json:"db_id"`
		Question string         `json:"question"`
		SQL      map[string]any `json:"sql"`
	}
	if err := json.Unmarshal(raw, &dev); err != nil {
		return nil, fmt.Errorf("dev.json: %w", err)
	}
	set.DevDBs = map[string]bool{}
	for _, q := range dev {
		set.DevDBs[q.DBID] = true
		idx := map[int]bool{}
		collectTables(q.SQL, idx)
		var gold []string
		for i := range idx {
			gold = append(gold, tableNames[q.DBID][i])
		}
		slices.Sort(gold)
		if len(gold) == 0 {
			return nil, fmt.Errorf("question %q: no tables in its gold SQL", q.Question)
		}
		set.Questions = append(set.Questions, Question{Question: q.Question, DB: q.DBID, Gold: gold})
	}
	return set, nil
}

// collectTables walks a parsed Spider SQL tree (subqueries, set
// operations) and records every table unit.
func collectTables(v any, into map[int]bool) {
	switch x := v.(type) {
	case map[string]any:
		if from, ok := x["from"].(map[string]any); ok {
			if units, ok := from["table_units"].([]any); ok {
				for _, u := range units {
					if pair, ok := u.([]any); ok && len(pair) == 2 && pair[0] == "table_unit" {
						into[int(pair[1].(float64))] = true
					}
				}
			}
		}
		for _, c := range x {
			collectTables(c, into)
		}
	case []any:
		for _, c := range x {
			collectTables(c, into)
		}
	}
}

// Recalls returns, for each k in ks, the share of questions whose gold
// tables are all among the first k names rank returns. rank is called
// once per question with the largest k when prefix is set (its first k
// results do not depend on k), once per question and k otherwise.
func Recalls(qs []Question, ks []int, prefix bool, rank func(q string, k int) []string) []float64 {
	ok := make([]int, len(ks))
	for _, q := range qs {
		var top []string
		for i, k := range ks {
			if !prefix || top == nil {
				n := k
				if prefix {
					n = slices.Max(ks)
				}
				top = rank(q.Question, n)
			}
			got := top[:min(k, len(top))]
			all := true
			for _, g := range q.Gold {
				if !slices.Contains(got, g) {
					all = false
					break
				}
			}
			if all {
				ok[i]++
			}
		}
	}
	out := make([]float64, len(ks))
	for i := range ks {
		out[i] = float64(ok[i]) / float64(len(qs))
	}
	return out
}
