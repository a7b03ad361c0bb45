package bench_test

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/internal/bench"
)

func ExampleTools() {
	sales, _, _, err := bench.Tools()
	if err != nil {
		panic(err)
	}
	res, err := sales.Call(context.Background(), []byte(bench.Calls()[0].Args))
	fmt.Println(sales.Spec().Name, res.Summary != "", err)
	// Output: sales_total true <nil>
}
