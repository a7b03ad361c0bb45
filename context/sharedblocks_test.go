package context_test

import (
	stdctx "context"
	"encoding/json"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/bichat-go/bichat/agents"
	bcontext "github.com/bichat-go/bichat/context"
)

// countingCodec counts how often a codec canonicalizes a payload, that is
// how often a block of its kind is built.
type countingCodec struct {
	bcontext.Codec
	n atomic.Int32
}

func (c *countingCodec) Canonicalize(p any) (any, error) {
	c.n.Add(1)
	return c.Codec.Canonicalize(p)
}

func builtinCodec(t *testing.T, id string) bcontext.Codec {
	t.Helper()
	for _, c := range bcontext.DefaultCodecs() {
		if c.ID() == id {
			return c
		}
	}
	t.Fatalf("no built-in codec %q", id)
	return nil
}

func sharedSpecs() []agents.ToolSpec {
	return []agents.ToolSpec{
		{Name: "query_database", Description: "Run one read-only SQL query.", Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}}}`)},
		{Name: "get_schema", Description: "Describe datasets.", Schema: json.RawMessage(`{"type":"object","properties":{"names":{"type":"array","items":{"type":"string"}}}}`)},
		{Name: "fx_rate", Description: "Exchange rate.", Schema: json.RawMessage(`{"type":"object"}`)},
	}
}

// cloneSpecs deep-copies specs, so only their content, not their memory,
// is shared with the original.
func cloneSpecs(specs []agents.ToolSpec) []agents.ToolSpec {
	out := slices.Clone(specs)
	for i := range out {
		out[i].Schema = slices.Clone(out[i].Schema)
	}
	return out
}

// TestRequestBuilderSharesToolAndSystemBlocks checks that tool-schema and
// system-prompt blocks are built once per builder and reused by later
// runs with the same content (before, every run canonicalized, rendered
// and hashed them again), that a changed description or schema rebuilds
// the block of that tool only, and that the reused blocks give the same
// request as fresh ones.
func TestRequestBuilderSharesToolAndSystemBlocks(t *testing.T) {
	tools := &countingCodec{Codec: builtinCodec(t, bcontext.CodecToolSchema)}
	rules := &countingCodec{Codec: builtinCodec(t, bcontext.CodecRules)}
	info := agents.ModelInfo{Provider: "openai", Name: "gpt-4o", ContextWindow: 128000}
	r, err := bcontext.RendererFor(info)
	if err != nil {
		t.Fatal(err)
	}
	b := bcontext.NewRequestBuilder(r, bcontext.PolicyFor(info, bcontext.OverflowError))
	b.Codecs = bcontext.NewCodecs(tools, rules)
	build := func(runID string, specs []agents.ToolSpec) *agents.Request {
		t.Helper()
		tc := &agents.TurnContext{Input: &agents.Input{RunID: runID}, Turn: 1, System: "You are a data analyst.",
			Tools: specs, Messages: []agents.Message{agents.UserMessage("Revenue by region?")}}
		req, err := b.BuildRequest(stdctx.Background(), tc)
		if err != nil {
			t.Fatal(err)
		}
		return req
	}
	specs := sharedSpecs()
	first := build("run-1", specs)
	if n := tools.n.Load(); n != 3 {
		t.Fatalf("first run built %d tool blocks, want 3", n)
	}
	// Later runs, with the same slice or an equal copy, reuse every block.
	second := build("run-2", specs)
	third := build("run-3", cloneSpecs(specs))
	if n, m := tools.n.Load(), rules.n.Load(); n != 3 || m != 1 {
		t.Fatalf("three runs built %d tool blocks and %d system blocks, want 3 and 1", n, m)
	}
	for _, req := range []*agents.Request{second, third} {
		if req.System != first.System || !slices.EqualFunc(req.Tools, first.Tools, func(a, b agents.ToolSpec) bool {
			return a.Name == b.Name && a.Description == b.Description && string(a.Schema) == string(b.Schema)
		}) {
			t.Fatalf("a run with cached blocks sent another request:\n%+v\nwant\n%+v", req, first)
		}
	}
	// A changed description, then a changed schema, rebuild that tool's
	// block only, and the request carries the change.
	changed := cloneSpecs(specs)
	changed[1].Description = "Describe datasets and their fields."
	req := build("run-4", changed)
	if n := tools.n.Load(); n != 4 {
		t.Fatalf("a changed description built %d tool blocks in all, want 4", n)
	}
	if !slices.ContainsFunc(req.Tools, func(s agents.ToolSpec) bool { return s.Description == changed[1].Description }) {
		t.Fatalf("request tools %+v lack the changed description", req.Tools)
	}
	changed = cloneSpecs(changed)
	changed[2].Schema = json.RawMessage(`{"type":"object","properties":{"from":{"type":"string"}}}`)
	req = build("run-5", changed)
	if n := tools.n.Load(); n != 5 {
		t.Fatalf("a changed schema built %d tool blocks in all, want 5", n)
	}
	if !slices.ContainsFunc(req.Tools, func(s agents.ToolSpec) bool {
		return s.Name == "fx_rate" && json.Valid(s.Schema) && string(s.Schema) != string(specs[2].Schema)
	}) {
		t.Fatalf("request tools %+v lack the changed schema", req.Tools)
	}
	// Mutating a spec's schema in place after a run does not leak into
	// the cache: the next run compares against the cached copy.
	inPlace := cloneSpecs(specs)
	build("run-6", inPlace)
	before := tools.n.Load()
	copy(inPlace[0].Schema, `{"type":"object","properties":{"SQL":{"type":"string"}}}`)
	build("run-7", inPlace)
	if n := tools.n.Load(); n != before+1 {
		t.Fatalf("a schema changed in place built %d new tool blocks, want 1", n-before)
	}
	// Another system prompt gets its own block.
	tc := &agents.TurnContext{Input: &agents.Input{RunID: "run-8"}, Turn: 1, System: "You are a finance analyst.",
		Tools: specs, Messages: []agents.Message{agents.UserMessage("Revenue by region?")}}
	req, err = b.BuildRequest(stdctx.Background(), tc)
	if err != nil {
		t.Fatal(err)
	}
	if m := rules.n.Load(); m != 2 || req.System == first.System {
		t.Fatalf("a new system prompt built %d system blocks in all (want 2); system %q", m, req.System)
	}
}
