package agents_test

import (
	"testing"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
)

// TestAccumulatorIncompleteCall: a call marked Incomplete is dropped with
// its arguments, other calls keep theirs, and the stop reason stays
// max_tokens instead of becoming tool_use.
func TestAccumulatorIncompleteCall(t *testing.T) {
	t.Parallel()
	cut := agents.Chunk{Type: agents.ChunkToolCall, ToolCall: agents.ToolCallDelta{Index: 1, Incomplete: true}}
	resp := accMust(t, agents.TextChunk("Saving."), accCall(0, "c1", "a", `{"x":1}`), accCall(1, "c2", "b", `{"lines":["a`),
		agents.TextChunk(""), cut, accStop(agents.StopMaxTokens))
	calls := resp.Message.ToolCalls()
	if len(calls) != 1 || calls[0].ID != "c1" || string(calls[0].Arguments) != `{"x":1}` {
		t.Errorf("calls = %+v, want c1 only", calls)
	}
	if resp.Stop != agents.StopMaxTokens || resp.Message.Text() != "Saving." {
		t.Errorf("stop %q text %q", resp.Stop, resp.Message.Text())
	}
	only := accMust(t, accCall(0, "c1", "a", `{"q":`), agents.Chunk{Type: agents.ChunkToolCall,
		ToolCall: agents.ToolCallDelta{Index: 0, Incomplete: true}}, accStop(agents.StopEndTurn))
	if len(only.Message.ToolCalls()) != 0 || only.Stop != agents.StopMaxTokens {
		t.Errorf("only call cut: %+v", only)
	}
	// An Incomplete marker for an unknown index changes nothing.
	kept := accMust(t, accCall(0, "c1", "a", `{}`), agents.Chunk{Type: agents.ChunkToolCall,
		ToolCall: agents.ToolCallDelta{Index: 7, Incomplete: true}})
	if len(kept.Message.ToolCalls()) != 1 || kept.Stop != agents.StopToolUse {
		t.Errorf("unknown index: %+v", kept)
	}
}

// TestAccumulatorItems: ChunkItem chunks are collected in order in
// Response.Items and do not touch the message.
func TestAccumulatorItems(t *testing.T) {
	t.Parallel()
	c1 := &agents.ProviderItem{Provider: "p", Kind: agents.ItemCitation, Citation: &domain.Citation{Source: "web", URL: "https://a"}}
	c2 := &agents.ProviderItem{Provider: "p", Kind: agents.ItemServerToolCall, ID: "s1", Name: "web_search"}
	resp := accMust(t, agents.TextChunk("a"), agents.Chunk{Type: agents.ChunkItem, Item: c1}, agents.Chunk{Type: agents.ChunkItem},
		agents.TextChunk("b"), agents.Chunk{Type: agents.ChunkItem, Item: c2})
	if resp.Message.Text() != "ab" || len(resp.Message.Parts) != 1 {
		t.Errorf("message = %+v", resp.Message)
	}
	if len(resp.Items) != 2 || resp.Items[0].Citation.URL != "https://a" || resp.Items[1].ID != "s1" {
		t.Errorf("items = %+v", resp.Items)
	}
}
