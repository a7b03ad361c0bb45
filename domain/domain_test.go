package domain_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/bichat-go/bichat/domain"
)

func TestValidationError(t *testing.T) {
	t.Parallel()
	var ve domain.ValidationError
	if ve.Err() != nil {
		t.Fatal("empty ValidationError.Err() must be nil")
	}
	ve.Add("title", "must not be empty")
	ve.Add("page", "must be 1 or greater")
	err := ve.Err()
	if !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("errors.Is(%v, ErrInvalid) = false", err)
	}
	if errors.Is(err, domain.ErrNotFound) {
		t.Fatal("a validation error must not match ErrNotFound")
	}
	if got, want := err.Error(), "invalid input: title: must not be empty; page: must be 1 or greater"; got != want {
		t.Fatalf("Error() = %q, want %q", got, want)
	}
	wrapped := fmt.Errorf("service: %w", err)
	fields := domain.FieldErrors(wrapped)
	if len(fields) != 2 || fields[0].Field != "title" || fields[1].Field != "page" {
		t.Fatalf("FieldErrors = %+v", fields)
	}
	if domain.FieldErrors(errors.New("other")) != nil {
		t.Fatal("FieldErrors of a plain error must be nil")
	}
	single := domain.Invalid("text", "too long")
	if !errors.Is(single, domain.ErrInvalid) || domain.FieldErrors(single)[0].Reason != "too long" {
		t.Fatalf("Invalid = %v", single)
	}
}

func TestNewIDIsValidUniqueAndOrdered(t *testing.T) {
	t.Parallel()
	const n = 20000
	ids := make([]string, n)
	for i := range ids {
		ids[i] = domain.NewID()
	}
	seen := make(map[string]bool, n)
	for i, id := range ids {
		if !domain.ValidID(id) {
			t.Fatalf("NewID() = %q is not a valid id", id)
		}
		if id[14] != '7' {
			t.Fatalf("NewID() = %q is not version 7", id)
		}
		if c := id[19]; c != '8' && c != '9' && c != 'a' && c != 'b' {
			t.Fatalf("NewID() = %q has the wrong variant", id)
		}
		if seen[id] {
			t.Fatalf("duplicate id %q", id)
		}
		seen[id] = true
		if i > 0 && ids[i-1] >= id {
			t.Fatalf("ids not increasing: %q then %q", ids[i-1], id)
		}
	}
}

func TestNewIDConcurrentUnique(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	seen := map[string]bool{}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			local := make([]string, 2000)
			for i := range local {
				local[i] = domain.NewID()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, id := range local {
				if seen[id] {
					t.Errorf("duplicate id %q", id)
				}
				seen[id] = true
			}
		})
	}
	wg.Wait()
}

func TestValidID(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"01890a5d-ac96-774b-bcce-b302099a8057":  true,
		"00000000-0000-0000-0000-000000000000":  true,
		"01890A5D-AC96-774B-BCCE-B302099A8057":  false, // upper case
		"01890a5d-ac96-774b-bcce-b302099a805":   false, // short
		"01890a5d-ac96-774b-bcce-b302099a80577": false, // long
		"01890a5dxac96-774b-bcce-b302099a8057":  false,
		"01890a5d-ac96-774b-bcce-b302099a805g":  false,
		"":                                      false,
		"../../etc/passwd":                      false,
	}
	for s, want := range cases {
		if got := domain.ValidID(s); got != want {
			t.Errorf("ValidID(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestValidName(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"acme": true, "user@example.com": true, "t-1_2": true,
		"": false, "a b": false, "tab\t": false, "é": false, strings.Repeat("x", 128): true, strings.Repeat("x", 129): false,
	}
	for s, want := range cases {
		if got := domain.ValidName(s); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", s, got, want)
		}
	}
}

func TestPrincipalPermissions(t *testing.T) {
	t.Parallel()
	type perms struct{ read, write, del bool }
	cases := []struct {
		name string
		p    domain.Principal
		want perms
	}{
		{"admin", domain.Principal{Roles: []domain.AccessRole{domain.AccessAdmin}}, perms{true, true, true}},
		{"contributor", domain.Principal{Roles: []domain.AccessRole{domain.AccessContributor}}, perms{true, true, true}},
		{"viewer", domain.Principal{Roles: []domain.AccessRole{domain.AccessViewer}}, perms{true, false, false}},
		{"no roles", domain.Principal{}, perms{false, false, false}},
		{"unknown role", domain.Principal{Roles: []domain.AccessRole{"owner"}}, perms{false, false, false}},
		{"viewer plus contributor", domain.Principal{Roles: []domain.AccessRole{domain.AccessViewer, domain.AccessContributor}}, perms{true, true, true}},
		{"explicit permissions override roles", domain.Principal{Roles: []domain.AccessRole{domain.AccessAdmin},
			Permissions: []domain.Permission{domain.PermRead}}, perms{true, false, false}},
		{"explicit write only", domain.Principal{Permissions: []domain.Permission{domain.PermWrite}}, perms{false, true, false}},
	}
	for _, c := range cases {
		got := perms{c.p.Can(domain.PermRead), c.p.Can(domain.PermWrite), c.p.Can(domain.PermDelete)}
		if got != c.want {
			t.Errorf("%s: read/write/delete = %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestPrincipalValidate(t *testing.T) {
	t.Parallel()
	if err := (domain.Principal{TenantID: "acme", UserID: "ana"}).Validate(); err != nil {
		t.Fatalf("valid principal: %v", err)
	}
	err := domain.Principal{TenantID: "", UserID: "a b"}.Validate()
	if !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("Validate = %v, want ErrInvalid", err)
	}
	f := domain.FieldErrors(err)
	if len(f) != 2 || f[0].Field != "principal.tenant_id" || f[1].Field != "principal.user_id" {
		t.Fatalf("fields = %+v", f)
	}
}

func TestListOptionsNormalize(t *testing.T) {
	t.Parallel()
	got, err := domain.ListOptions{}.Normalize()
	if err != nil {
		t.Fatal(err)
	}
	want := domain.ListOptions{Page: 1, PageSize: 20, Sort: domain.SortUpdated, Order: domain.Desc}
	if got != want {
		t.Fatalf("zero value normalizes to %+v, want %+v", got, want)
	}
	got, err = domain.ListOptions{Page: 3, PageSize: 100, Search: "  q3  ", Sort: domain.SortTitle, Order: domain.Asc}.Normalize()
	if err != nil || got.Search != "q3" || got.PageSize != 100 {
		t.Fatalf("Normalize = %+v, %v", got, err)
	}
	bad := []struct {
		opts  domain.ListOptions
		field string
	}{
		{domain.ListOptions{Page: -1}, "page"},
		{domain.ListOptions{PageSize: 101}, "page_size"},
		{domain.ListOptions{PageSize: -5}, "page_size"},
		{domain.ListOptions{Sort: "size"}, "sort"},
		{domain.ListOptions{Order: "up"}, "order"},
		{domain.ListOptions{Search: strings.Repeat("x", 2000)}, "search"},
	}
	for _, b := range bad {
		_, err := b.opts.Normalize()
		f := domain.FieldErrors(err)
		if !errors.Is(err, domain.ErrInvalid) || len(f) != 1 || f[0].Field != b.field {
			t.Errorf("Normalize(%+v) = %v, want one error on %q", b.opts, err, b.field)
		}
	}
}

func TestNewPage(t *testing.T) {
	t.Parallel()
	all := []int{1, 2, 3, 4, 5}
	cases := []struct {
		page, size int
		items      []int
		pages      int
	}{
		{1, 2, []int{1, 2}, 3},
		{3, 2, []int{5}, 3},
		{4, 2, []int{}, 3},
		{1, 5, []int{1, 2, 3, 4, 5}, 1},
		{1, 100, []int{1, 2, 3, 4, 5}, 1},
		{math.MaxInt, 20, []int{}, 1},
	}
	for _, c := range cases {
		p := domain.NewPage(all, domain.ListOptions{Page: c.page, PageSize: c.size})
		if fmt.Sprint(p.Items) != fmt.Sprint(c.items) || p.Total != 5 || p.TotalPages != c.pages || p.Items == nil {
			t.Errorf("NewPage(page %d, size %d) = %+v, want items %v, %d pages", c.page, c.size, p, c.items, c.pages)
		}
	}
	empty := domain.NewPage([]int(nil), domain.ListOptions{Page: 1, PageSize: 20})
	if empty.Items == nil || len(empty.Items) != 0 || empty.Total != 0 || empty.TotalPages != 0 {
		t.Fatalf("empty page = %+v", empty)
	}
}

func TestUsageAdd(t *testing.T) {
	t.Parallel()
	a := domain.Usage{PromptTokens: 100, CompletionTokens: 20, CachedTokens: 50, TotalTokens: 120}
	b := domain.Usage{PromptTokens: 10, CompletionTokens: 5, ReasoningTokens: 2, CacheWriteTokens: 3}
	got := a.Add(b)
	want := domain.Usage{PromptTokens: 110, CompletionTokens: 25, CachedTokens: 50, CacheWriteTokens: 3, ReasoningTokens: 2, TotalTokens: 135}
	if got != want {
		t.Fatalf("Add = %+v, want %+v", got, want)
	}
	if !(domain.Usage{}).IsZero() || got.IsZero() {
		t.Fatal("IsZero wrong")
	}
}

func TestMessageText(t *testing.T) {
	t.Parallel()
	m := domain.Message{Parts: []domain.Part{
		domain.TextPart("Revenue "),
		{Type: domain.PartToolCall, ToolCall: &domain.ToolCall{ID: "c", Name: "q", Arguments: []byte(`{}`)}},
		{Type: domain.PartReasoning, Reasoning: &domain.Reasoning{Text: "hidden"}},
		domain.TextPart("rose 5%."),
	}}
	if got := m.Text(); got != "Revenue rose 5%." {
		t.Fatalf("Text() = %q", got)
	}
	if got := (&domain.Message{}).Text(); got != "" {
		t.Fatalf("empty Text() = %q", got)
	}
}

func TestEnumsValid(t *testing.T) {
	t.Parallel()
	for _, r := range []domain.Role{domain.RoleUser, domain.RoleAssistant, domain.RoleSystem, domain.RoleTool} {
		if !r.Valid() {
			t.Errorf("%s not valid", r)
		}
	}
	if domain.Role("bot").Valid() || domain.MessageStatus("done").Valid() || domain.ArtifactKind("video").Valid() {
		t.Error("unknown values must not be valid")
	}
	for _, s := range []domain.MessageStatus{domain.StatusGenerating, domain.StatusComplete, domain.StatusFailed, domain.StatusAwaitingInput} {
		if !s.Valid() {
			t.Errorf("%s not valid", s)
		}
	}
	for _, k := range []domain.ArtifactKind{domain.ArtifactTable, domain.ArtifactChart, domain.ArtifactReport, domain.ArtifactFile} {
		if !k.Valid() {
			t.Errorf("%s not valid", k)
		}
	}
}

func TestContentHash(t *testing.T) {
	t.Parallel()
	if got := domain.ContentHash([]byte("abc")); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("ContentHash(abc) = %s", got)
	}
}

func ExamplePrincipal_Can() {
	viewer := domain.Principal{TenantID: "acme", UserID: "vic", Roles: []domain.AccessRole{domain.AccessViewer}}
	fmt.Println(viewer.Can(domain.PermRead), viewer.Can(domain.PermWrite))
	// Output: true false
}

func ExampleListOptions_Normalize() {
	opts, err := domain.ListOptions{Search: " revenue ", Sort: domain.SortTitle, Order: domain.Asc}.Normalize()
	fmt.Println(opts.Page, opts.PageSize, opts.Search, opts.Sort, opts.Order, err)
	_, err = domain.ListOptions{PageSize: 500}.Normalize()
	fmt.Println(err)
	// Output:
	// 1 20 revenue title asc <nil>
	// invalid input: page_size: must be between 1 and 100
}

func ExampleNewID() {
	id := domain.NewID()
	fmt.Println(len(id), domain.ValidID(id))
	// Output: 36 true
}

func TestDatasetYAMLAndValidate(t *testing.T) {
	d := domain.Dataset{
		Name: "sales.orders", Source: "sales.orders", Kind: "table",
		Description: "One row per order: placed, paid or cancelled.",
		RowEstimate: 1200,
		Fields: []domain.Field{
			{Name: "id", Type: "bigint", PrimaryKey: true},
			{Name: "status", Type: "text", Description: "true", Nullable: true},
			{Name: "customer_id", Type: "bigint", Description: "Buyer: see customers # ref"},
		},
		Relationships: []domain.Relationship{{From: "sales.orders", FromColumns: []string{"customer_id"}, To: "sales.customers", ToColumns: []string{"id"}}},
	}
	want := `name: sales.orders
source: sales.orders
kind: table
description: "One row per order: placed, paid or cancelled."
row_estimate: 1200
fields:
  - name: id
    type: bigint
    primary_key: true
  - name: status
    type: text
    description: "true"
    nullable: true
  - name: customer_id
    type: bigint
    description: "Buyer: see customers # ref"
relationships:
  - to: sales.customers
    on: customer_id = id
`
	if got := d.YAML(); got != want {
		t.Fatalf("YAML:\n%s\nwant:\n%s", got, want)
	}
	if err := d.Validate(); err != nil {
		t.Fatal(err)
	}
	bad := domain.Dataset{Fields: []domain.Field{{Name: "a"}, {Name: "a"}}, Relationships: []domain.Relationship{{From: "x", To: "y", FromColumns: []string{"a"}}}}
	err := bad.Validate()
	if !errors.Is(err, domain.ErrInvalid) {
		t.Fatalf("want ErrInvalid, got %v", err)
	}
	for _, f := range []string{"name", "source", "fields[1].name", "relationships[0]"} {
		if !strings.Contains(err.Error(), f) {
			t.Errorf("error %q does not name %s", err, f)
		}
	}
}
