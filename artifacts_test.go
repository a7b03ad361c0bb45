package bichat_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// fileTool writes its content into store under the caller's tenant, the
// way draw_chart and the export tools do, and returns the artifact.
func fileTool(store func() domain.ArtifactStore) agents.Tool {
	type in struct {
		Text string `json:"text"`
	}
	return agents.MustTool("make_file", "Writes a text file.", func(ctx context.Context, a in) (agents.Result, error) {
		info, _ := agents.CallInfoFromContext(ctx)
		art, err := store().Put(ctx, info.TenantID, domain.Artifact{Kind: domain.ArtifactFile, Name: "note.txt", MediaType: "text/plain"}, strings.NewReader(a.Text))
		if err != nil {
			return agents.Result{}, err
		}
		return agents.Result{Summary: "wrote note.txt", Artifacts: []domain.Artifact{art}}, nil
	})
}

func TestArtifactContent(t *testing.T) {
	t.Parallel()
	var f *fixture
	model := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{Name: "make_file", Args: `{"text":"hello, artifacts"}`}}},
		{Text: "Done."},
	}}
	f = newFixture(t, model, []agents.Tool{fileTool(func() domain.ArtifactStore { return f.svc.ArtifactStore() })})
	sess := f.session(t, alice, "files")
	items := collect(t, f.svc.Send(t.Context(), alice, sess.ID, "write a note"))
	_, fin := finished(t, items)
	if fin == nil {
		t.Fatalf("run did not finish: %s", describe(items))
	}
	msgs := f.messages(t, alice, sess.ID)
	asst := msgs[len(msgs)-1]
	arts, err := f.svc.Artifacts(t.Context(), alice, asst.ID)
	if err != nil || len(arts) != 1 {
		t.Fatalf("Artifacts: %v %v", arts, err)
	}
	rc, meta, err := f.svc.ArtifactContent(t.Context(), aliceViewer, arts[0].ID)
	if err != nil {
		t.Fatalf("ArtifactContent: %v", err)
	}
	body, _ := io.ReadAll(rc)
	rc.Close()
	if string(body) != "hello, artifacts" || meta.Name != "note.txt" || meta.MediaType != "text/plain" || meta.Size != int64(len(body)) {
		t.Fatalf("content %q meta %+v", body, meta)
	}
	for name, p := range map[string]domain.Principal{"other user": bob, "other tenant": stranger} {
		if _, _, err := f.svc.ArtifactContent(t.Context(), p, arts[0].ID); !errors.Is(err, domain.ErrNotFound) {
			t.Errorf("%s: want ErrNotFound, got %v", name, err)
		}
	}
	if _, _, err := f.svc.ArtifactContent(t.Context(), alice, "not-an-id"); !errors.Is(err, domain.ErrInvalid) {
		t.Errorf("bad id: %v", err)
	}
	noRole := domain.Principal{TenantID: "acme", UserID: "alice"}
	if _, _, err := f.svc.ArtifactContent(t.Context(), noRole, arts[0].ID); !errors.Is(err, domain.ErrForbidden) {
		t.Errorf("no role: %v", err)
	}
	// Content removed from the store: not found, not a crash.
	if err := f.svc.ArtifactStore().Delete(t.Context(), "acme", meta.SHA256); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.svc.ArtifactContent(t.Context(), alice, arts[0].ID); !errors.Is(err, domain.ErrNotFound) {
		t.Errorf("deleted content: %v", err)
	}
}
