package kb

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strings"

	"github.com/bichat-go/bichat/domain"
)

// canonVersion is part of the canonical form, so a future change of the
// form changes every fingerprint instead of colliding with old ones.
const canonVersion = "bichat-recipe-schema/v1"

type canonSchema struct {
	Version  string         `json:"version"`
	Datasets []canonDataset `json:"datasets"`
}

type canonDataset struct {
	Name          string      `json:"name"`
	Source        string      `json:"source"`
	Fields        [][2]string `json:"fields"`
	Relationships []canonRel  `json:"relationships"`
}

type canonRel struct {
	From        string   `json:"from"`
	FromColumns []string `json:"from_columns"`
	To          string   `json:"to"`
	ToColumns   []string `json:"to_columns"`
}

// CanonicalSchema returns the canonical form of the schema of datasets,
// the input of SchemaFingerprint: JSON of
//
//	{"version":"bichat-recipe-schema/v1","datasets":[
//	  {"name":..., "source":..., "fields":[[name, type], ...],
//	   "relationships":[{"from":..., "from_columns":[...], "to":..., "to_columns":[...]}, ...]}, ...]}
//
// with datasets sorted by name, fields sorted by name, field types lower
// case, names, sources and types trimmed of surrounding spaces, an empty
// relationship From replaced by the dataset's name, and relationships
// sorted (by from, to, then columns) and de-duplicated. Only what SQL
// depends on is included: descriptions, kinds, keys, nullability and row
// estimates are not, so editing documentation does not invalidate
// recipes, while renaming a column or changing its type does.
func CanonicalSchema(datasets []domain.Dataset) []byte {
	c := canonSchema{Version: canonVersion, Datasets: make([]canonDataset, 0, len(datasets))}
	for _, d := range datasets {
		cd := canonDataset{
			Name:          strings.TrimSpace(d.Name),
			Source:        strings.TrimSpace(d.Source),
			Fields:        make([][2]string, 0, len(d.Fields)),
			Relationships: []canonRel{},
		}
		for _, f := range d.Fields {
			cd.Fields = append(cd.Fields, [2]string{strings.TrimSpace(f.Name), strings.ToLower(strings.TrimSpace(f.Type))})
		}
		slices.SortFunc(cd.Fields, func(a, b [2]string) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
		for _, r := range d.Relationships {
			from := strings.TrimSpace(r.From)
			if from == "" {
				from = cd.Name
			}
			cd.Relationships = append(cd.Relationships, canonRel{
				From: from, FromColumns: trimAll(r.FromColumns),
				To: strings.TrimSpace(r.To), ToColumns: trimAll(r.ToColumns),
			})
		}
		slices.SortFunc(cd.Relationships, compareRel)
		cd.Relationships = slices.CompactFunc(cd.Relationships, func(a, b canonRel) bool { return compareRel(a, b) == 0 })
		c.Datasets = append(c.Datasets, cd)
	}
	slices.SortStableFunc(c.Datasets, func(a, b canonDataset) int { return cmp.Compare(a.Name, b.Name) })
	b, err := json.Marshal(c)
	if err != nil {
		panic("kb: canonical schema: " + err.Error()) // only strings and slices: cannot fail
	}
	return b
}

func compareRel(a, b canonRel) int {
	return cmp.Or(
		cmp.Compare(a.From, b.From),
		cmp.Compare(a.To, b.To),
		slices.Compare(a.FromColumns, b.FromColumns),
		slices.Compare(a.ToColumns, b.ToColumns),
	)
}

func trimAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strings.TrimSpace(s)
	}
	return out
}

// SchemaFingerprint returns the schema fingerprint of datasets: the
// lower-case hexadecimal SHA-256 of CanonicalSchema(datasets). The order of
// datasets, fields and relationships does not matter. Recipes are keyed by
// it (kb/recipes.Fingerprint) and so are description proposals
// (DescriptionFingerprint).
func SchemaFingerprint(datasets []domain.Dataset) string {
	sum := sha256.Sum256(CanonicalSchema(datasets))
	return hex.EncodeToString(sum[:])
}
