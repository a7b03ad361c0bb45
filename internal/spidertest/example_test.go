package spidertest_test

import (
	"fmt"

	"github.com/bichat-go/bichat/internal/spidertest"
)

// Recalls scores any ranking: here a fixed one, where the first question
// finds its two tables in the top 2 and the second only at rank 3.
func ExampleRecalls() {
	qs := []spidertest.Question{
		{Question: "singers in concerts", Gold: []string{"concert_singer.concert", "concert_singer.singer"}},
		{Question: "pets of students", Gold: []string{"pets_1.Pets"}},
	}
	ranked := map[string][]string{
		"singers in concerts": {"concert_singer.singer", "concert_singer.concert", "orchestra.show"},
		"pets of students":    {"dog_kennels.Dogs", "pets_1.Student", "pets_1.Pets"},
	}
	r := spidertest.Recalls(qs, []int{2, 3}, true, func(q string, k int) []string { return ranked[q][:k] })
	fmt.Printf("recall@2 %.2f, recall@3 %.2f\n", r[0], r[1])
	// Output: recall@2 0.50, recall@3 1.00
}
