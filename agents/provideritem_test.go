package agents_test

import (
	"context"
	"encoding/json"
	"iter"
	"reflect"
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// itemModel answers with text around a citation and a server tool call, as
// the provider adapters decode them.
type itemModel struct{ items []agents.ProviderItem }

func (m *itemModel) Info() agents.ModelInfo { return agents.ModelInfo{Provider: "test", Name: "items"} }

func (m *itemModel) Stream(ctx context.Context, _ *agents.Request) iter.Seq2[agents.Chunk, error] {
	return func(yield func(agents.Chunk, error) bool) {
		if !yield(agents.TextChunk("Revenue grew "), nil) {
			return
		}
		for i := range m.items {
			if !yield(agents.Chunk{Type: agents.ChunkItem, Item: &m.items[i]}, nil) {
				return
			}
		}
		if !yield(agents.TextChunk("12%."), nil) {
			return
		}
		yield(agents.Chunk{Type: agents.ChunkStop, Stop: agents.StopEndTurn}, nil)
	}
}

// TestProviderItemsReachTheHost: every item a provider sends besides text
// and client tool calls is yielded as a ProviderItemReported event, in
// order, between the text around it, and survives the run log's encoding.
func TestProviderItemsReachTheHost(t *testing.T) {
	t.Parallel()
	items := []agents.ProviderItem{
		{Provider: "anthropic", Kind: agents.ItemCitation, Type: "char_location", Text: "grew 12%",
			Citation: &domain.Citation{Source: "document", Title: "Q3 report", Snippet: "grew 12%"},
			Raw:      json.RawMessage(`{"type":"char_location","cited_text":"grew 12%"}`)},
		{Provider: "anthropic", Kind: agents.ItemServerToolCall, Type: "server_tool_use", ID: "srvtoolu_1",
			Name: "web_search", Input: json.RawMessage(`{"query":"q3 revenue"}`)},
		{Provider: "gemini", Kind: agents.ItemUnsupported, Type: "somethingNew", Raw: json.RawMessage(`{"somethingNew":{}}`)},
	}
	e := newExec(t, agents.Config{Model: &itemModel{items: items}})
	var got []agents.ProviderItem
	var order []agents.EventType
	for ev, err := range e.Run(context.Background(), agents.Input{Message: agents.UserMessage("How did revenue do?")}) {
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, ev.Type())
		if pi, ok := ev.(*agents.ProviderItemReported); ok {
			got = append(got, pi.Item)
			data, err := agents.MarshalEvent(pi)
			if err != nil {
				t.Fatalf("MarshalEvent: %v", err)
			}
			back, err := agents.UnmarshalEvent(data)
			if err != nil {
				t.Fatalf("UnmarshalEvent(%s): %v", data, err)
			}
			if b, ok := back.(*agents.ProviderItemReported); !ok || !reflect.DeepEqual(b.Item, pi.Item) {
				t.Errorf("item did not survive the run log:\n got %+v\nwant %+v", back, pi.Item)
			}
		}
	}
	if !reflect.DeepEqual(got, items) {
		t.Fatalf("items reported:\n got %+v\nwant %+v", got, items)
	}
	want := []agents.EventType{agents.EventRunStarted, agents.EventTextDelta, agents.EventProviderItem,
		agents.EventProviderItem, agents.EventProviderItem, agents.EventTextDelta}
	if len(order) < len(want) || !reflect.DeepEqual(order[:len(want)], want) {
		t.Errorf("event order %v, want it to start with %v", order, want)
	}
}
