package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Policy describes a retry schedule. The zero value means 500 ms base,
// 8 s cap, factor 2.
type Policy struct {
	// Base is the delay before the first retry, before jitter.
	Base time.Duration
	// Max caps every delay.
	Max time.Duration
	// Factor multiplies the delay after each attempt; values below 1 mean 2.
	Factor float64
}

// Delay returns the wait before retry number attempt (1 for the first
// retry): a uniformly random duration in [d/2, d] where d is
// min(Max, Base*Factor^(attempt-1)). Keeping half of d avoids the
// near-zero waits of pure full jitter while still spreading clients out.
func (p Policy) Delay(attempt int) time.Duration {
	base, maxD, f := p.Base, p.Max, p.Factor
	if base <= 0 {
		base = 500 * time.Millisecond
	}
	if maxD <= 0 {
		maxD = 8 * time.Second
	}
	if f < 1 {
		f = 2
	}
	d := float64(base)
	for i := 1; i < attempt && d < float64(maxD); i++ {
		d *= f
	}
	if d > float64(maxD) {
		d = float64(maxD)
	}
	half := d / 2
	return time.Duration(half + rand.Float64()*half)
}

// Sleep waits for d or until ctx ends, returning ctx.Err() in that case.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
