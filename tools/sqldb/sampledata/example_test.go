package sampledata_test

import (
	"fmt"

	"github.com/bichat-go/bichat/tools/sqldb/sampledata"
)

func ExampleGenerate() {
	d := sampledata.Generate(0)
	fmt.Println(len(d.Regions), "regions,", len(d.Customers), "customers,", len(d.Products), "products,", len(d.Orders), "orders")
	fmt.Println("first order:", d.Orders[0][2])
	// Output:
	// 5 regions, 200 customers, 40 products, 3000 orders
	// first order: 2024-01-05 14:22:15 +0000 UTC
}
