package openai

import (
	"bytes"
	"cmp"
	"encoding/json"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// annotationJSON reads the citation fields of an annotation, in both
// shapes: Chat Completions nests them ({"type":"url_citation",
// "url_citation":{"url","title",...}}), the Responses API has them flat.
type annotationJSON struct {
	Type     string `json:"type"`
	URL      string `json:"url"`
	Title    string `json:"title"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
	Nested   *struct {
		URL   string `json:"url"`
		Title string `json:"title"`
	} `json:"url_citation"`
}

// item returns the citation item for the annotation whose JSON is raw.
func (a *annotationJSON) item(provider string, raw json.RawMessage) *agents.ProviderItem {
	url, title := a.URL, a.Title
	if a.Nested != nil {
		url, title = cmp.Or(url, a.Nested.URL), cmp.Or(title, a.Nested.Title)
	}
	c := &domain.Citation{Source: "document", DocumentID: a.FileID, Title: cmp.Or(title, a.Filename), URL: url}
	if url != "" {
		c.Source = "web"
	}
	return &agents.ProviderItem{Provider: provider, Kind: agents.ItemCitation, Type: a.Type, Citation: c,
		Raw: bytes.Clone(raw)}
}

// annotationChunks returns one citation chunk per raw annotation.
func annotationChunks(provider string, raws []json.RawMessage) []agents.Chunk {
	var out []agents.Chunk
	for _, raw := range raws {
		if len(raw) == 0 || string(raw) == "null" {
			continue
		}
		var a annotationJSON
		_ = json.Unmarshal(raw, &a) // an unreadable annotation is still carried raw
		out = append(out, agents.Chunk{Type: agents.ChunkItem, Item: a.item(provider, raw)})
	}
	return out
}
