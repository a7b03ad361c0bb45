package backoff

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestDelayBounds(t *testing.T) {
	t.Parallel()
	p := Policy{Base: 100 * time.Millisecond, Max: time.Second, Factor: 2}
	cases := []struct {
		attempt  int
		min, max time.Duration
	}{
		{1, 50 * time.Millisecond, 100 * time.Millisecond},
		{2, 100 * time.Millisecond, 200 * time.Millisecond},
		{3, 200 * time.Millisecond, 400 * time.Millisecond},
		{5, 500 * time.Millisecond, time.Second},
		{50, 500 * time.Millisecond, time.Second},
	}
	for _, c := range cases {
		for range 200 {
			d := p.Delay(c.attempt)
			if d < c.min || d > c.max {
				t.Fatalf("attempt %d: delay %v outside [%v, %v]", c.attempt, d, c.min, c.max)
			}
		}
	}
}

func TestDelayZeroPolicyDefaults(t *testing.T) {
	t.Parallel()
	d := Policy{}.Delay(1)
	if d < 250*time.Millisecond || d > 500*time.Millisecond {
		t.Fatalf("zero policy first delay %v, want within [250ms, 500ms]", d)
	}
	if d := (Policy{}).Delay(100); d > 8*time.Second {
		t.Fatalf("zero policy delay %v exceeds 8s cap", d)
	}
}

func TestDelayJitters(t *testing.T) {
	t.Parallel()
	p := Policy{Base: time.Second}
	seen := map[time.Duration]bool{}
	for range 50 {
		seen[p.Delay(1)] = true
	}
	if len(seen) < 10 {
		t.Fatalf("only %d distinct delays in 50 draws; jitter missing", len(seen))
	}
}

func TestSleepHonoursContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on cancelled ctx = %v, want context.Canceled", err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("Sleep did not return promptly on a cancelled context")
	}
	if err := Sleep(context.Background(), time.Millisecond); err != nil {
		t.Fatalf("Sleep = %v", err)
	}
	if err := Sleep(context.Background(), 0); err != nil {
		t.Fatalf("Sleep(0) = %v", err)
	}
}
