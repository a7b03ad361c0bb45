package bucket_test

import (
	"fmt"
	"time"

	"github.com/bichat-go/bichat/quota/internal/bucket"
)

// A bucket of 60 requests per minute: a burst of 60, then one a second.
func Example() {
	level := bucket.Cap(60)
	for range 60 {
		level = bucket.Take(level, 1)
	}
	fmt.Println("used:", bucket.Used(level, 60))
	fmt.Println("next request in:", bucket.Wait(level, 60, bucket.Unit))
	level = bucket.Refill(level, 60, 2500*time.Millisecond)
	fmt.Println("used after 2.5 s:", bucket.Used(level, 60))
	// Output:
	// used: 60
	// next request in: 1s
	// used after 2.5 s: 58
}
