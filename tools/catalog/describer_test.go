package catalog_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/catalog"
)

func crypticOrders() domain.Dataset {
	return domain.Dataset{
		Name: "sales.t_ord_h", Source: "sales.t_ord_h",
		Fields: []domain.Field{
			{Name: "ord_id", Type: "bigint", PrimaryKey: true},
			{Name: "cst_cd", Type: "text", Values: []string{"C001", "C002", "C003"}},
			{Name: "st_cd", Type: "text", Values: []string{"OPEN", "SHIPPED", "CANCELLED"}},
			{Name: "cc_nbr", Type: "text", Sensitive: true, Values: []string{"4111111111111111"}},
			{Name: "amt1", Type: "numeric(12,2)", Description: "Net amount in EUR."},
		},
		Relationships: []domain.Relationship{{
			From: "sales.t_ord_h", FromColumns: []string{"cst_cd"}, To: "sales.t_cst", ToColumns: []string{"cd"},
			Cardinality: domain.CardinalityManyToOne,
		}},
	}
}

func TestModelDescriberPromptAndAnswer(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("word ", 100)
	m := &scripted.Model{Turns: []scripted.Turn{{Text: `{"description": "Order headers:\n one row per order.",
		"fields": {"ord_id": "Order number.", "cst_cd": "Customer code.", "st_cd": "` + long + `",
		"cc_nbr": "", "ghost": "A column that does not exist."}}`}}}
	got, err := catalog.ModelDescriber{Model: m, MaxValues: 2}.Describe(context.Background(), crypticOrders())
	if err != nil {
		t.Fatal(err)
	}
	if m.Calls() != 1 {
		t.Fatalf("model called %d times, want once", m.Calls())
	}
	req := m.Requests()[0]
	if !strings.Contains(req.System, "JSON") || len(req.Messages) != 1 {
		t.Fatalf("request = %+v, want a JSON instruction and one user message", req)
	}
	prompt := req.Messages[0].Text()
	for _, want := range []string{
		"table: sales.t_ord_h",
		"- ord_id bigint primary key | needs a description",
		`- cst_cd text values: "C001", "C002" | needs a description`,
		"- cc_nbr text | needs a description",
		"- amt1 numeric(12,2) | described: Net amount in EUR.",
		"- cst_cd = cd -> sales.t_cst (many_to_one)",
	} {
		if !strings.Contains(prompt, want) {
			t.Errorf("prompt lacks %q:\n%s", want, prompt)
		}
	}
	for _, banned := range []string{"4111111111111111", "C003"} {
		if strings.Contains(prompt, banned) {
			t.Errorf("prompt shows %q (a sensitive value or one beyond MaxValues):\n%s", banned, prompt)
		}
	}
	if got.Dataset != "sales.t_ord_h" || got.Text != "Order headers: one row per order." {
		t.Errorf("description = %q of %q", got.Text, got.Dataset)
	}
	if _, ok := got.Fields["ghost"]; ok {
		t.Error("an unknown column was kept")
	}
	if _, ok := got.Fields["cc_nbr"]; ok {
		t.Error("an empty description was kept")
	}
	if got.Fields["ord_id"] != "Order number." || got.Fields["cst_cd"] != "Customer code." {
		t.Errorf("fields = %v", got.Fields)
	}
	if n := utf8.RuneCountInString(got.Fields["st_cd"]); n != catalog.MaxFieldDescription || !strings.HasSuffix(got.Fields["st_cd"], "…") {
		t.Errorf("long description kept %d characters (%q), want it cut to %d", n, got.Fields["st_cd"], catalog.MaxFieldDescription)
	}
}

func TestModelDescriberMaxValues(t *testing.T) {
	t.Parallel()
	tests := []struct {
		max        int
		want, none []string
	}{
		{0, []string{`"OPEN", "SHIPPED", "CANCELLED"`}, nil},
		{1, []string{`values: "OPEN" |`}, []string{"SHIPPED"}},
		{-1, nil, []string{"values:", "OPEN", "C001"}},
	}
	for _, tt := range tests {
		prompt := catalog.ModelDescriber{MaxValues: tt.max}.Prompt(crypticOrders())
		for _, w := range tt.want {
			if !strings.Contains(prompt, w) {
				t.Errorf("MaxValues %d: prompt lacks %q:\n%s", tt.max, w, prompt)
			}
		}
		for _, n := range tt.none {
			if strings.Contains(prompt, n) {
				t.Errorf("MaxValues %d: prompt shows %q:\n%s", tt.max, n, prompt)
			}
		}
	}
}

func TestModelDescriberAnswers(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, answer string
		wantErr      string // empty: success
		wantText     string
	}{
		{"plain object", `{"description": "Orders.", "fields": {}}`, "", "Orders."},
		{"fenced", "```json\n{\"description\": \"Orders.\"}\n```", "", "Orders."},
		{"fields only", `{"fields": {"cst_cd": "Customer code."}}`, "", ""},
		{"prose", `Sure! This table holds orders.`, "want a JSON object", ""},
		{"empty", `  `, "empty answer", ""},
		{"null", `null`, "want a JSON object", ""},
		{"array", `[{"description": "Orders."}]`, "want a JSON object", ""},
		{"trailing text", `{"description": "Orders."} Hope this helps!`, "text after the JSON object", ""},
		{"unknown key", `{"description": "Orders.", "notes": "x"}`, "unknown field", ""},
		{"fields not an object", `{"description": "Orders.", "fields": ["a"]}`, "want a JSON object", ""},
		{"truncated", `{"description": "Ord`, "want a JSON object", ""},
		{"nothing usable", `{"description": " ", "fields": {"ghost": "x"}}`, "no description", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := &scripted.Model{Turns: []scripted.Turn{{Text: tt.answer}}}
			got, err := catalog.ModelDescriber{Model: m}.Describe(context.Background(), crypticOrders())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if got.Text != tt.wantText {
					t.Errorf("text = %q, want %q", got.Text, tt.wantText)
				}
				return
			}
			if err == nil {
				t.Fatalf("answer %q accepted as %+v", tt.answer, got)
			}
			if msg := err.Error(); !strings.Contains(msg, `"sales.t_ord_h"`) || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("err = %v, want it to name the table and say %q", err, tt.wantErr)
			}
		})
	}
}

func TestModelDescriberErrors(t *testing.T) {
	t.Parallel()
	if _, err := (catalog.ModelDescriber{}).Describe(context.Background(), crypticOrders()); err == nil || !strings.Contains(err.Error(), "nil Model") {
		t.Errorf("nil model: err = %v", err)
	}
	boom := errors.New("rate limited")
	m := &scripted.Model{Turns: []scripted.Turn{{Err: boom}}}
	_, err := catalog.ModelDescriber{Model: m}.Describe(context.Background(), crypticOrders())
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"sales.t_ord_h"`) {
		t.Errorf("model error: err = %v, want it wrapped and naming the table", err)
	}
}

// TestModelDescriberWithPropose runs the whole flow: only the cryptic
// dataset is sent to the model, the answer is cached, a second Propose
// does not call the model, and Apply keeps the host's descriptions.
func TestModelDescriberWithPropose(t *testing.T) {
	t.Parallel()
	m := &scripted.Model{Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
		if !strings.Contains(req.Messages[0].Text(), "table: sales.t_ord_h") {
			t.Errorf("unexpected dataset sent to the model:\n%s", req.Messages[0].Text())
		}
		return scripted.Turn{Text: `{"description": "Order headers.", "fields": {"cst_cd": "Customer code.", "amt1": "Amount."}}`}, nil
	}}
	datasets := []domain.Dataset{
		crypticOrders(),
		{Name: "sales.customers", Source: "sales.customers", Fields: []domain.Field{{Name: "customer_id", Type: "bigint"}, {Name: "name", Type: "text"}}},
	}
	var cache kb.DescriptionCache
	d := catalog.ModelDescriber{Model: m}
	for range 2 {
		got, err := kb.Propose(context.Background(), datasets, d, &cache)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0].Text != "Order headers." || !maps.Equal(got[0].Fields, map[string]string{"cst_cd": "Customer code."}) {
			t.Fatalf("proposals = %+v", got)
		}
		applied := kb.Apply(datasets, got)
		if f, _ := applied[0].Field("amt1"); f.Description != "Net amount in EUR." {
			t.Errorf("Apply overwrote the host's description: %q", f.Description)
		}
		if f, _ := applied[0].Field("cst_cd"); f.Description != "Customer code." {
			t.Errorf("cst_cd description = %q", f.Description)
		}
	}
	if m.Calls() != 1 {
		t.Errorf("model called %d times for one dataset over two Propose calls, want 1", m.Calls())
	}
}
