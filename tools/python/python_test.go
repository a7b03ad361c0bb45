package python_test

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/bwrap"
	"github.com/bichat-go/bichat/sandbox/sandboxtest"
	"github.com/bichat-go/bichat/tools"
	"github.com/bichat-go/bichat/tools/python"
)

var (
	once sync.Once
	sb   *bwrap.Sandbox
	sErr error
)

func sandboxFor(t *testing.T) *bwrap.Sandbox {
	t.Helper()
	once.Do(func() { sb, sErr = bwrap.New(bwrap.Config{PoolSize: 1}) })
	if sErr != nil {
		sandboxtest.Unavailable(t, sErr.Error())
	}
	return sb
}

func session(id string) context.Context {
	return agents.WithCallInfo(context.Background(), agents.CallInfo{TenantID: "t1", SessionID: id, Tool: python.Name})
}

func TestRunPython(t *testing.T) {
	res := tools.NewMemoryResults(0)
	ctx := session("s1")
	name, err := res.Put(ctx, tools.Table{Columns: []tools.Column{{Name: "city"}, {Name: "sales"}},
		Rows: [][]any{{"Zürich", int64(10)}, {"Łódź", int64(5)}, {"Zürich", 2.5}}})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.NewArtifactStore(0)
	tool, err := python.New(python.Config{Sandbox: sandboxFor(t), Results: res, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if s := tool.Spec(); !strings.Contains(string(s.Schema), "inputs") || !strings.Contains(s.Description, "inputs/result_1.csv") ||
		!strings.Contains(string(s.Schema), "pandas, numpy") {
		t.Fatalf("spec: %s %s", s.Description, s.Schema)
	}
	code := `
import pandas as pd, matplotlib.pyplot as plt
df = pd.read_csv("inputs/` + name + `.csv")
g = df.groupby("city")["sales"].sum()
print(g.to_string())
g.plot(kind="bar"); plt.savefig("sales.png")
g.to_csv("sales.csv")
`
	args, _ := json.Marshal(map[string]any{"code": code, "inputs": []string{name}})
	r, err := tool.Call(ctx, args)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Summary, "ok (") || !strings.Contains(r.Summary, "Zürich    12.5") ||
		!strings.Contains(r.Summary, "sales.png (image/png") || !strings.Contains(r.Summary, "sales.csv (text/csv") {
		t.Fatalf("summary:\n%s", r.Summary)
	}
	run := r.Payload.(*python.Run)
	if len(r.Artifacts) != 2 || len(run.Files) != 2 {
		t.Fatalf("artifacts %+v", r.Artifacts)
	}
	for i, a := range r.Artifacts {
		f := run.Files[i]
		if a.SHA256 != domain.ContentHash(f.Data) || a.Size != int64(len(f.Data)) || a.Name != f.Artifact.Name {
			t.Fatalf("artifact %+v", a)
		}
		// The bytes are in the store under the call's tenant.
		stored, err := store.Stat(ctx, a.TenantID, a.SHA256)
		if err != nil || a.URI == "" || stored.Size != a.Size {
			t.Fatalf("artifact %s not stored: %+v %v", a.Name, a, err)
		}
		switch a.Name {
		case "sales.png":
			if a.Kind != domain.ArtifactChart || a.MediaType != "image/png" {
				t.Fatalf("png artifact %+v", a)
			}
			if _, err := png.Decode(bytes.NewReader(f.Data)); err != nil {
				t.Fatal(err)
			}
		case "sales.csv":
			if a.Kind != domain.ArtifactFile || !strings.Contains(string(f.Data), "Łódź,5") {
				t.Fatalf("csv artifact %+v %q", a, f.Data)
			}
		}
	}
}

func TestErrorsReachTheModel(t *testing.T) {
	tool, err := python.New(python.Config{Sandbox: sandboxFor(t), Results: tools.NewMemoryResults(0), MaxStderr: 200})
	if err != nil {
		t.Fatal(err)
	}
	ctx := session("s2")
	r, err := tool.Call(ctx, json.RawMessage(`{"code":"import pandas as pd\nprint('start')\npd.read_csv('inputs/nope.csv')"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(r.Summary, "error: exited with status 1") || !strings.Contains(r.Summary, "FileNotFoundError") ||
		!strings.Contains(r.Summary, "earlier bytes not shown") || !strings.Contains(r.Summary, "stdout:\nstart") {
		t.Fatalf("summary:\n%s", r.Summary)
	}
	_, err = tool.Call(ctx, json.RawMessage(`{"code":"print(1)","inputs":["result_9"]}`))
	if err == nil || !strings.Contains(err.Error(), "result_9") {
		t.Fatalf("missing input: %v", err)
	}
	_, err = tool.Call(ctx, json.RawMessage(`{"code":"print(1)","inputs":["../etc/passwd"]}`))
	var ae *agents.ArgumentError
	if err == nil || !errorsAs(err, &ae) {
		t.Fatalf("bad input name: %v", err)
	}
}

func TestTimeoutReason(t *testing.T) {
	tool, err := python.New(python.Config{Sandbox: sandboxFor(t), Limits: sandbox.Limits{WallTime: time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tool.Call(session("s3"), json.RawMessage(`{"code":"print('x', flush=True)\nwhile True: pass"}`))
	if err != nil || !strings.HasPrefix(r.Summary, "error: timed out after 1") || !strings.Contains(r.Summary, "stdout:\nx") {
		t.Fatalf("%v\n%s", err, r.Summary)
	}
	if run := r.Payload.(*python.Run); !run.TimedOut || run.Reason == "" {
		t.Fatalf("payload %+v", run)
	}
}

func TestNeedsSandbox(t *testing.T) {
	if _, err := python.New(python.Config{}); err == nil {
		t.Fatal("no sandbox accepted")
	}
}
