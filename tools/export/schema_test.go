package export_test

import (
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools/export"
)

// TestSchemas: the tools describe every argument in full (a comma in a
// description must not cut it short) and are read tools.
func TestSchemas(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	xl, err := export.NewExcel(export.ExcelConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	pdf, err := export.NewPDF(export.PDFConfig{Store: f.store})
	if err != nil {
		t.Fatal(err)
	}
	for tool, wants := range map[agents.Tool][]string{
		xl:  {`"name":{"type":"string","description":"Sheet name (at most 31 characters; []:*?/\\ are replaced). Default: the result name."}`, `"minItems":1`, `"required":["title","sheets"]`},
		pdf: {`'- ' bullet items, '1. ' numbered items, **bold**."`, `(e.g. chart_1)`, `"required":["title","sections"]`},
	} {
		spec := tool.Spec()
		for _, w := range wants {
			if !strings.Contains(string(spec.Schema), w) {
				t.Errorf("%s schema lacks %s:\n%s", spec.Name, w, spec.Schema)
			}
		}
		if spec.Permission != agents.PermRead || !spec.ParallelSafe {
			t.Errorf("%s: permission %v, parallel %v", spec.Name, spec.Permission, spec.ParallelSafe)
		}
	}
}
