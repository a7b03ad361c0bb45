package context

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/tools"
)

// TestBlockHashGolden pins block hashes: a change means every cached count
// and provider prompt cache is invalidated, so it must be deliberate (bump
// the codec version or hashDomain).
func TestBlockHashGolden(t *testing.T) {
	t.Parallel()
	c := NewCodecs()
	cases := []struct {
		name string
		b    Block
		want string
	}{
		{"rules", mustBlock(t, c, KindPinned, CodecRules, Rules{Text: "Be precise."}), "6f2ba0bea376fa82413d3c5b0785e5805e38083f225c049ee0805b425c354d11"},
		{"dataset", mustBlock(t, c, KindReference, CodecDataset, customersDataset), "38c28f3ac281c5264a48051e9cbc5f6d430f932c374c5b8bbd8d3c4459a2dd6f"},
		{"tool", mustBlock(t, c, KindReference, CodecToolSchema, ToolSchemaOf(sqlTool)), "f384f0ab4d527f9af3112c252eded6f835d786feee9c872647daff44cf5c93c5"},
		{"history", mustBlock(t, c, KindHistory, CodecMessage, MessageOf(agents.UserMessage("hi")), AtPosition(3)), "9bd47934bcfbc4e2630e4218f1a9bf80ec14aa778a53576743249af5e3e547ea"},
		{"restricted", mustBlock(t, c, KindMemory, CodecText, Text{Body: "salary bands"}, WithSensitivity(SensitivityRestricted)), "7123b93f61d9ea56b77df3c6f8f462435acfb92e7a61898a536633cf61ae44d7"},
	}
	for _, tc := range cases {
		if got := tc.b.HashHex(); got != tc.want {
			t.Errorf("%s hash = %s, want %s", tc.name, got, tc.want)
		}
	}
	// The documented construction, spelled out.
	input := "\x17bichat/context.Block/v1\x06pinned\x08internal\x05rules\x011\x010" + "\x16" + `{"text":"Be precise."}`
	if sum := sha256.Sum256([]byte(input)); hex.EncodeToString(sum[:]) != cases[0].want {
		t.Errorf("hash construction differs from the documented one")
	}
}

func TestBlockHashInputs(t *testing.T) {
	t.Parallel()
	c := NewCodecs()
	base := mustBlock(t, c, KindHistory, CodecMessage, MessageOf(agents.UserMessage("same")), AtPosition(1))
	again := mustBlock(t, c, KindHistory, CodecMessage, &HistoryMessage{Role: domain.RoleUser, Parts: []domain.Part{domain.TextPart("same")}}, AtPosition(1))
	if base.Hash != again.Hash {
		t.Fatal("equal content gave different hashes")
	}
	variants := map[string]Block{
		"position":    mustBlock(t, c, KindHistory, CodecMessage, MessageOf(agents.UserMessage("same")), AtPosition(2)),
		"sensitivity": mustBlock(t, c, KindHistory, CodecMessage, MessageOf(agents.UserMessage("same")), AtPosition(1), WithSensitivity(SensitivityPublic)),
		"kind":        mustBlock(t, c, KindTurn, CodecMessage, MessageOf(agents.UserMessage("same")), AtPosition(1)),
		"codec":       mustBlock(t, c, KindHistory, CodecStep, MessageOf(agents.UserMessage("same")), AtPosition(1)),
		"payload":     mustBlock(t, c, KindHistory, CodecMessage, MessageOf(agents.UserMessage("same.")), AtPosition(1)),
	}
	for name, v := range variants {
		if v.Hash == base.Hash {
			t.Errorf("changing the %s kept the hash", name)
		}
	}
	// Key order of tool arguments does not matter.
	a := mustBlock(t, c, KindHistory, CodecMessage, HistoryMessage{Role: domain.RoleAssistant, Parts: []domain.Part{call("c1", "q", `{"b":1,"a":[1,2]}`)}})
	b := mustBlock(t, c, KindHistory, CodecMessage, HistoryMessage{Role: domain.RoleAssistant, Parts: []domain.Part{call("c1", "q", `{ "a" : [1,2], "b" : 1.0 }`)}})
	if a.Hash != b.Hash {
		t.Error("argument key order or number format changed the hash")
	}
	// Length-prefixed fields: moving bytes between fields changes the input.
	x := HashInput(KindMemory, SensitivityPublic, "ab", 1, 0, []byte(`"c"`))
	y := HashInput(KindMemory, SensitivityPublic, "a", 1, 0, []byte(`b"c"`))
	if string(x) == string(y) {
		t.Error("hash input is ambiguous")
	}
}

func TestCodecsValidation(t *testing.T) {
	t.Parallel()
	c := NewCodecs()
	bad := []struct {
		kind  Kind
		codec string
		p     any
	}{
		{KindPinned, CodecRules, Rules{Text: "  "}},
		{KindPinned, CodecRules, "not a Rules"},
		{KindReference, CodecDataset, domain.Dataset{Name: "x"}},
		{KindReference, CodecJoinHint, domain.Relationship{From: "a", To: "b", FromColumns: []string{"x"}}},
		{KindReference, CodecToolSchema, ToolSchema{Name: "t", Schema: json.RawMessage(`{bad`)}},
		{KindMemory, CodecRecipe, Recipe{Question: "q"}},
		{KindMemory, CodecKBHit, KBHit{}},
		{KindState, CodecState, State{}},
		{KindHistory, CodecMessage, HistoryMessage{Role: "robot", Parts: []domain.Part{domain.TextPart("x")}}},
		{KindHistory, CodecMessage, HistoryMessage{Role: domain.RoleUser}},
		{KindTurn, CodecTurn, Turn{Parts: []domain.Part{call("a", "b", "{}")}}},
		{KindToolOutput, CodecQueryResult, QueryResult{}},
		{KindMemory, "nope", Text{Body: "x"}},
		{Kind(99), CodecText, Text{Body: "x"}},
	}
	for _, tc := range bad {
		if _, err := c.NewBlock(tc.kind, tc.codec, tc.p); !errors.Is(err, ErrInvalidBlock) {
			t.Errorf("NewBlock(%s, %s, %#v) error = %v, want ErrInvalidBlock", tc.kind, tc.codec, tc.p, err)
		}
	}
	if err := c.Register(NewCodec(CodecText, 1, canonText, renderText)); !errors.Is(err, ErrCodecExists) {
		t.Errorf("Register duplicate: %v", err)
	}
}

func TestThirdPartyCodec(t *testing.T) {
	t.Parallel()
	type KPI struct {
		Name  string  `json:"name"`
		Value float64 `json:"value"`
	}
	c := NewCodecs()
	kpi := NewCodec("kpi", 1, func(k KPI) (KPI, error) {
		if k.Name == "" {
			return k, errors.New("kpi needs a name")
		}
		return k, nil
	}, func(k KPI) (string, error) {
		return k.Name + " = " + strings.TrimRight(strings.TrimRight(jsonNum(k.Value), "0"), "."), nil
	})
	if err := c.Register(kpi); err != nil {
		t.Fatal(err)
	}
	b, err := c.NewBlock(KindMemory, "kpi", KPI{Name: "churn", Value: 0.042})
	if err != nil {
		t.Fatal(err)
	}
	if b.Text() != "churn = 0.042" || string(b.CanonicalJSON()) != `{"name":"churn","value":0.042}` {
		t.Fatalf("text %q json %s", b.Text(), b.CanonicalJSON())
	}
	if _, err := c.NewBlock(KindMemory, "kpi", KPI{}); err == nil {
		t.Error("invalid KPI accepted")
	}
}

func jsonNum(f float64) string { b, _ := json.Marshal(f); return string(b) }

func TestBuilderCollectsErrors(t *testing.T) {
	t.Parallel()
	_, err := NewBuilder(nil).Rules("ok", "").Datasets(domain.Dataset{}).QueryResult(nil, 0).Turn(TextTurn("q")).Blocks()
	if err == nil {
		t.Fatal("Builder accepted invalid input")
	}
	for _, want := range []string{"rules text is empty", "source", "nil table"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	blocks, err := NewBuilder(nil).Rules("r").History(history(3)...).Turn(TextTurn("q")).Blocks()
	if err != nil || len(blocks) != 5 {
		t.Fatalf("blocks %d err %v", len(blocks), err)
	}
	for i, b := range blocks[1:4] {
		if b.Kind != KindHistory || b.Position != i+1 {
			t.Errorf("history block %d: %s", i, b)
		}
	}
}

func TestQueryResultCodec(t *testing.T) {
	t.Parallel()
	c := NewCodecs(&QueryResultCodec{MaxRows: 3, MaxChars: 200})
	rows := make([][]any, 10)
	for i := range rows {
		rows[i] = []any{int64(i), "a|b\nc"}
	}
	b := mustBlock(t, c, KindToolOutput, CodecQueryResult, QueryResult{Name: "r1", SQL: "SELECT n, s FROM t",
		Columns: []tools.Column{{Name: "n"}, {Name: "s"}}, Rows: rows, Duration: 1234567 * time.Microsecond}, AtPosition(1))
	want := "Query result r1: 10 rows, 1235 ms\nSQL: SELECT n, s FROM t\n| n | s |\n|---|---|\n| 0 | a\\|b c |\n| 1 | a\\|b c |\n| 2 | a\\|b c |\n[showing 3 of 10 rows; 7 rows omitted]"
	if b.Text() != want {
		t.Errorf("query result text:\n%s\nwant:\n%s", b.Text(), want)
	}
	// The character cap cuts rows too, with the note.
	small := NewCodecs(&QueryResultCodec{MaxRows: 100, MaxChars: 90})
	b = mustBlock(t, small, KindToolOutput, CodecQueryResult, QueryResult{Columns: []tools.Column{{Name: "n"}, {Name: "s"}}, Rows: rows}, AtPosition(1))
	if !strings.Contains(b.Text(), "rows omitted]") || strings.Count(b.Text(), "\n| ") >= 10 {
		t.Errorf("char cap not applied:\n%s", b.Text())
	}
	if _, err := c.NewBlock(KindToolOutput, CodecQueryResult, QueryResult{Columns: []tools.Column{{Name: "n"}}, Rows: [][]any{{1, 2}}}); err == nil {
		t.Error("ragged row accepted")
	}
}

func TestMessageCodecCaps(t *testing.T) {
	t.Parallel()
	c := NewCodecs(&MessageCodec{Name: CodecMessage, MaxToolArgs: 40, MaxToolResult: 30})
	long := strings.Repeat("y", 100)
	m := HistoryMessage{Role: domain.RoleAssistant, Parts: []domain.Part{call("c1", "q", `{"sql":"`+long+`"}`), call("c2", "q", `not json`)}}
	b := mustBlock(t, c, KindHistory, CodecMessage, m, AtPosition(1))
	got := b.Payload.(HistoryMessage)
	var obj map[string]string
	if err := json.Unmarshal(got.Parts[0].ToolCall.Arguments, &obj); err != nil || !strings.Contains(obj["_truncated"], "[truncated") {
		t.Errorf("long arguments not cut into valid JSON: %s", got.Parts[0].ToolCall.Arguments)
	}
	if string(got.Parts[1].ToolCall.Arguments) != `{"_invalid_json":"not json"}` {
		t.Errorf("invalid arguments: %s", got.Parts[1].ToolCall.Arguments)
	}
	r := mustBlock(t, c, KindHistory, CodecMessage, HistoryMessage{Role: domain.RoleTool, Parts: []domain.Part{result("c1", "q", long)}}, AtPosition(2))
	if content := r.Payload.(HistoryMessage).Parts[0].ToolResult.Content; !strings.HasPrefix(content, strings.Repeat("y", 30)+"\n[truncated: 70 of 100 bytes") {
		t.Errorf("result not cut: %q", content)
	}
	// Steps keep everything; the input is not modified.
	s := mustBlock(t, c, KindTurn, CodecStep, m, AtPosition(1))
	if !strings.Contains(string(s.Payload.(HistoryMessage).Parts[0].ToolCall.Arguments), long) || !strings.Contains(string(m.Parts[0].ToolCall.Arguments), long) {
		t.Error("step was cut or input modified")
	}
}
