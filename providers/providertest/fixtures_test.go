package providertest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/providers/providertest"
)

// recTB records Fatal and Skip instead of ending the test.
type recTB struct {
	testing.TB
	fatal, skip string
}

type stopped struct{}

func (r *recTB) Helper() {}
func (r *recTB) Fatal(args ...any) {
	r.fatal = fmt.Sprint(args...)
	panic(stopped{})
}
func (r *recTB) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }
func (r *recTB) Skip(args ...any) {
	r.skip = fmt.Sprint(args...)
	panic(stopped{})
}

func run(tb *recTB, f func(testing.TB)) {
	defer func() {
		if v := recover(); v != nil {
			if _, ok := v.(stopped); !ok {
				panic(v)
			}
		}
	}()
	f(tb)
}

// TestFixtureDir: absent fixtures skip the test with a message, except
// under CI=true where they fail it; present ones are found.
func TestFixtureDir(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nowhere")
	t.Setenv(providertest.EnvFixtures, missing)
	t.Setenv("CI", "")
	tb := &recTB{TB: t}
	run(tb, func(tb testing.TB) { providertest.FixtureDir(tb) })
	if tb.fatal != "" || !strings.Contains(tb.skip, missing) {
		t.Errorf("outside CI: skip %q fatal %q, want a skip naming %s", tb.skip, tb.fatal, missing)
	}
	t.Setenv("CI", "true")
	tb = &recTB{TB: t}
	run(tb, func(tb testing.TB) { providertest.FixtureDir(tb) })
	if tb.skip != "" || !strings.Contains(tb.fatal, missing) {
		t.Errorf("under CI: skip %q fatal %q, want a failure naming %s", tb.skip, tb.fatal, missing)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv(providertest.EnvFixtures, dir)
	if got := providertest.FixtureDir(t); got != dir {
		t.Errorf("FixtureDir = %q, want %q", got, dir)
	}
	var cov providertest.Coverage
	files := providertest.FixtureFiles(t, dir, ".")
	if len(files) != 1 || files[0] != "a.txt" {
		t.Fatalf("files = %v", files)
	}
	et := &errTB{recTB: &recTB{TB: t}}
	cov.Check(et, files)
	if len(et.errs) != 1 || !strings.Contains(et.errs[0], "a.txt") {
		t.Errorf("an uncovered file: errors %q, want one naming a.txt", et.errs)
	}
	cov.NotApplicable("a.txt", "test file")
	et = &errTB{recTB: &recTB{TB: t}}
	cov.Check(et, files)
	if len(et.errs) != 0 {
		t.Errorf("a covered file: errors %q", et.errs)
	}
}

// errTB turns Errorf into a recorded failure.
type errTB struct {
	*recTB
	errs []string
}

func (e *errTB) Errorf(format string, args ...any) {
	e.errs = append(e.errs, fmt.Sprintf(format, args...))
}
