package bucket

import (
	"testing"
	"time"
)

func TestRefill(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		level   int64
		limit   int
		elapsed time.Duration
		want    int64
	}{
		{"nothing elapsed", 0, 60, 0, 0},
		{"negative elapsed", 5, 60, -time.Second, 5},
		{"one second of 60/min", 0, 60, time.Second, Unit},
		{"capped", 0, 60, time.Hour, Cap(60)},
		{"full stays full", Full, 7, time.Nanosecond, Cap(7)},
		{"above a lowered limit", Cap(10), 2, 0, Cap(2)},
		{"from the floor, capped", Floor, MaxPerMinute, time.Duration(1<<62 - 1), Cap(MaxPerMinute)},
		{"from the floor, partly", Floor, 1, time.Second, Floor + int64(time.Second)},
	} {
		if got := Refill(tc.level, tc.limit, tc.elapsed); got != tc.want {
			t.Errorf("%s: Refill = %d, want %d", tc.name, got, tc.want)
		}
	}
}

func TestTakeWaitUsed(t *testing.T) {
	t.Parallel()
	if got := Take(Cap(5), 2); got != 3*Unit {
		t.Errorf("Take 2 of 5 = %d", got)
	}
	if got := Take(0, 1<<40); got != Floor {
		t.Errorf("Take beyond the floor = %d, want Floor", got)
	}
	if got := Take(7, 0); got != 7 {
		t.Errorf("Take 0 = %d", got)
	}
	for _, tc := range []struct {
		level, target int64
		limit         int
		want          time.Duration
	}{
		{0, Unit, 60, time.Second},
		{0, Unit, 7, 8571428572}, // 60s/7 rounded up
		{Unit, Unit, 7, 0},
		{-30 * Unit, 0, 60, 30 * time.Second},
		{-1, 0, 60, 1},
	} {
		got := Wait(tc.level, tc.limit, tc.target)
		if got != tc.want {
			t.Errorf("Wait(%d, %d, %d) = %v, want %v", tc.level, tc.limit, tc.target, got, tc.want)
		}
		// Exact: after got the bucket is at target, and not 1ns before.
		if got > 0 && (Refill(tc.level, tc.limit, got) < tc.target || Refill(tc.level, tc.limit, got-1) >= tc.target) {
			t.Errorf("Wait(%d, %d, %d) = %v is not the exact edge", tc.level, tc.limit, tc.target, got)
		}
	}
	for _, tc := range []struct {
		level int64
		limit int
		want  int
	}{{Cap(10), 10, 0}, {Unit / 2, 10, 10}, {0, 10, 10}, {-Unit / 2, 10, 11}, {Full, 10, 0}} {
		if got := Used(tc.level, tc.limit); got != tc.want {
			t.Errorf("Used(%d, %d) = %d, want %d", tc.level, tc.limit, got, tc.want)
		}
	}
}
