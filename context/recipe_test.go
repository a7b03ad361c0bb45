package context

import (
	"strings"
	"testing"
)

// TestRecipeVerified: a verified recipe carries a compact "verified query"
// marker; an unverified one renders and hashes exactly as it did before
// the field existed (its hashes are pinned), so prompt caches and cached
// token counts of existing recipe blocks stay valid, and only a change of
// the mark changes a block's hash.
func TestRecipeVerified(t *testing.T) {
	t.Parallel()
	c := NewCodecs()
	monthly := Recipe{Question: "monthly revenue", SQL: []string{"SELECT date_trunc('month', created_at), sum(total) FROM sales.orders GROUP BY 1;"},
		Successes: 3, Datasets: []string{"sales.orders", "sales.customers"}}
	bare := Recipe{Question: "q", SQL: []string{"SELECT 1"}}
	cases := []struct {
		name     string
		r        Recipe
		wantText string
		wantHash string
	}{
		{"unverified", monthly,
			"Recipe (worked 3 times): monthly revenue\nDatasets: sales.customers, sales.orders\n```sql\nSELECT date_trunc('month', created_at), sum(total) FROM sales.orders GROUP BY 1;\n```",
			"d8c3f1033714a5ff3673e5776e59e2d3080de13efcd6f15557d4676cde93ffa0"},
		{"unverified, no successes", bare, "Recipe: q\n```sql\nSELECT 1;\n```",
			"cd31e809ee85e1669fa05dca852583f697e401bd2449e04ef9e43b03e696ed1e"},
		{"verified", withVerified(monthly),
			"Recipe (verified query, worked 3 times): monthly revenue\nDatasets: sales.customers, sales.orders\n```sql\nSELECT date_trunc('month', created_at), sum(total) FROM sales.orders GROUP BY 1;\n```",
			"7e8b3e507a9527a6a5aa638fc616fa3b6b3d6020d6595d0c2e7df46b36eaa24d"},
		{"verified, no successes", withVerified(bare), "Recipe (verified query): q\n```sql\nSELECT 1;\n```",
			"8e645ecae8ca583b5fe8ff7f738ba24e88240db2d3e80c9fc6274f5aac888d95"},
	}
	hashes := map[string]string{}
	for _, tc := range cases {
		b := mustBlock(t, c, KindMemory, CodecRecipe, tc.r)
		if b.Text() != tc.wantText {
			t.Errorf("%s: text\n%s\nwant\n%s", tc.name, b.Text(), tc.wantText)
		}
		if b.HashHex() != tc.wantHash {
			t.Errorf("%s: hash %s, want %s", tc.name, b.HashHex(), tc.wantHash)
		}
		// Deterministic: the same recipe, also as a pointer, gives the same block.
		r := tc.r
		if again := mustBlock(t, c, KindMemory, CodecRecipe, &r); again.Hash != b.Hash || again.Text() != b.Text() {
			t.Errorf("%s: the same recipe gave another block", tc.name)
		}
		if strings.Contains(string(b.canon), `"verified"`) != tc.r.Verified {
			t.Errorf("%s: canonical payload %s", tc.name, b.canon)
		}
		hashes[tc.name] = b.HashHex()
	}
	if b := mustBlock(t, c, KindMemory, CodecRecipe, withVerified(bare)); string(b.canon) != `{"question":"q","sql":["SELECT 1"],"verified":true}` {
		t.Errorf("canonical verified payload %s", b.canon)
	}
	if hashes["verified"] == hashes["unverified"] || hashes["verified, no successes"] == hashes["unverified, no successes"] {
		t.Error("the verified mark did not change the hash")
	}
}

func withVerified(r Recipe) Recipe {
	r.Verified = true
	return r
}
