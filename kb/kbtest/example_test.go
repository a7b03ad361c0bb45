package kbtest_test

import (
	"fmt"

	"github.com/bichat-go/bichat/kb/kbtest"
)

// The suite's fixture is usable on its own, e.g. to seed a demo catalog.
func ExampleSales() {
	for _, d := range kbtest.Sales()[:2] {
		fmt.Println(d.Name, len(d.Fields), len(d.Relationships))
	}
	// Output:
	// sales.customers 3 0
	// sales.orders 5 2
}
