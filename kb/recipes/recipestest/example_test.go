package recipestest_test

import (
	"fmt"

	"github.com/bichat-go/bichat/kb/recipes/recipestest"
)

// The suite's datasets are plain values a host's own tests can reuse.
func ExampleOrders() {
	d := recipestest.Orders()
	fmt.Println(d.Name, len(d.Fields), d.Relationships[0].To)
	// Output: sales.orders 4 sales.customers
}
