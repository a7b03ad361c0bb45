package domain_test

import (
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v4"

	"github.com/bichat-go/bichat/domain"
)

func TestDatasetYAMLSynonymsAndValues(t *testing.T) {
	t.Parallel()
	d := domain.Dataset{
		Name: "sales.customers", Source: "sales.customers", Kind: "table",
		Database: "shop", Schema: "sales",
		Synonyms: []string{"clients", "buyers"},
		Fields: []domain.Field{
			{Name: "id", Type: "bigint", PrimaryKey: true},
			{Name: "segment", Type: "text", Synonyms: []string{"tier"}, Values: []string{"SMB", "enterprise"}},
			{Name: "email", Type: "text", Sensitive: true},
		},
		Relationships: []domain.Relationship{{From: "sales.customers", FromColumns: []string{"region_id"}, To: "sales.regions", ToColumns: []string{"id"},
			Cardinality: domain.CardinalityManyToOne, Inferred: true, Confidence: 0.97}},
	}
	want := `name: sales.customers
source: sales.customers
kind: table
synonyms: [clients, buyers]
fields:
  - name: id
    type: bigint
    primary_key: true
  - name: segment
    type: text
    synonyms: [tier]
    values: [SMB, enterprise]
  - name: email
    type: text
relationships:
  - to: sales.regions
    on: region_id = id
`
	if got := d.YAML(); got != want {
		t.Fatalf("YAML:\n%s\nwant:\n%s", got, want)
	}
	// Without the new fields the output is what it always was.
	plain := d
	plain.Synonyms, plain.Database, plain.Schema = nil, "", ""
	plain.Fields = []domain.Field{{Name: "segment", Type: "text"}}
	plain.Relationships = nil
	if got := plain.YAML(); got != "name: sales.customers\nsource: sales.customers\nkind: table\nfields:\n  - name: segment\n    type: text\n" {
		t.Errorf("plain YAML:\n%s", got)
	}
}

// The flow sequences read back as the same strings, whatever they hold.
func TestDatasetYAMLValuesRoundTrip(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		values []string
		line   string // the rendered values line, when checked
	}{
		{"plain words", []string{"North", "South West", "it's"}, "    values: [North, South West, it's]"},
		{"flow indicators", []string{"a, b", "[x]", "{y}", "a,b"}, `    values: ["a, b", "[x]", "{y}", "a,b"]`},
		{"numbers and booleans stay strings", []string{"5", "0.5", "true", "no", "null", "~"}, `    values: ["5", "0.5", "true", "no", "null", "~"]`},
		{"comments, colons and quotes", []string{"a #b", "k: v", `say "hi"`, "- x", "*ref", "&anchor", "!tag", "|", ">"}, ""},
		{"unicode and control", []string{"Müller", "東京", "tab\there", "line\nbreak", " padded "}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := domain.Dataset{Name: "t", Source: "t", Synonyms: tc.values, Fields: []domain.Field{{Name: "c", Type: "text", Synonyms: tc.values, Values: tc.values}}}
			y := d.YAML()
			if tc.line != "" && !strings.Contains(y, tc.line+"\n") {
				t.Errorf("YAML misses %q:\n%s", tc.line, y)
			}
			var back struct {
				Synonyms []string `yaml:"synonyms"`
				Fields   []struct {
					Synonyms []string `yaml:"synonyms"`
					Values   []string `yaml:"values"`
				} `yaml:"fields"`
			}
			if err := yaml.Unmarshal([]byte(y), &back); err != nil {
				t.Fatalf("the YAML does not parse: %v\n%s", err, y)
			}
			if !slices.Equal(back.Synonyms, tc.values) || len(back.Fields) != 1 ||
				!slices.Equal(back.Fields[0].Values, tc.values) || !slices.Equal(back.Fields[0].Synonyms, tc.values) {
				t.Errorf("read back %+v, want %q everywhere\n%s", back, tc.values, y)
			}
		})
	}
}
