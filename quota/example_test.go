package quota_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bichat-go/bichat/quota"
)

// Example limits each user to 2 requests per minute and shows the
// refusal of the third, with the time to wait.
func Example() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lim, err := quota.NewMemory(quota.Policy{
		Tenant: quota.Limits{RequestsPerMinute: 100, ConcurrentRuns: 10},
		User:   quota.Limits{RequestsPerMinute: 2, TokensPerMinute: 1000},
	}, quota.MemoryOptions{Now: func() time.Time { return now }})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	for i := range 3 {
		release, err := lim.Admit(ctx, "acme", "ann", fmt.Sprint("run-", i))
		var qe *quota.ExceededError
		if errors.As(err, &qe) {
			fmt.Println("refused:", qe.Scope, qe.Limit, "retry after", qe.RetryAfter)
			continue
		}
		if err != nil {
			panic(err)
		}
		fmt.Println("admitted run", i)
		_ = lim.Charge(ctx, "acme", "ann", 400) // the run's model tokens
		release()
	}
	now = now.Add(30 * time.Second) // one request refilled
	_, err = lim.Admit(ctx, "acme", "ann", "run-3")
	fmt.Println("after 30s:", err)
	// Output:
	// admitted run 0
	// admitted run 1
	// refused: user requests_per_minute retry after 30s
	// after 30s: <nil>
}

// ExampleExceededError shows the message of a refusal.
func ExampleExceededError() {
	err := error(&quota.ExceededError{Scope: "tenant", Limit: quota.LimitTokens, RetryAfter: 12 * time.Second, Max: 50000, Current: 56000})
	fmt.Println(err)
	fmt.Println(errors.Is(err, quota.ErrExceeded))
	// Output:
	// quota: tenant tokens_per_minute exceeded (56000 of 50000): retry after 12s
	// true
}
