package bucket

import (
	"math"
	"time"
)

// Unit is the number of level units in one token (the nanoseconds in a
// minute).
const Unit int64 = 60_000_000_000

// MaxPerMinute is the largest limit a bucket accepts, so that a full
// bucket (MaxPerMinute*Unit) fits in an int64.
const MaxPerMinute = 100_000_000

// Floor is the lowest level a bucket in debt reaches: charges beyond it
// saturate (about 38 million tokens of debt).
const Floor int64 = -(1 << 61)

// Full is the level stored for a bucket with no limit: whatever limit it
// gets later, Refill caps it to that limit's capacity.
const Full int64 = math.MaxInt64

// Cap returns the capacity, in units, of a bucket of limit per minute.
func Cap(limit int) int64 { return int64(limit) * Unit }

// Refill returns level after elapsed time at limit per minute, never
// above the capacity (a level above it, such as Full or the level of a
// larger former limit, is lowered to it). A non-positive elapsed adds
// nothing. limit must be between 1 and MaxPerMinute.
func Refill(level int64, limit int, elapsed time.Duration) int64 {
	c := Cap(limit)
	if level >= c {
		return c
	}
	if elapsed <= 0 {
		return level
	}
	gap := c - level // level >= Floor, so gap <= c - Floor < MaxInt64
	if int64(elapsed) >= gap/int64(limit)+1 {
		return c
	}
	return level + int64(elapsed)*int64(limit)
}

// Take returns level less n tokens, saturating at Floor. level must be
// at most a capacity (a refilled level).
func Take(level int64, n int64) int64 {
	if n <= 0 {
		return level
	}
	if n >= (level-Floor)/Unit {
		return Floor
	}
	return level - n*Unit
}

// Wait returns the shortest time after which a bucket at level, refilling
// at limit per minute, reaches target (0 when it is there already),
// rounded up to the nanosecond.
func Wait(level int64, limit int, target int64) time.Duration {
	if level >= target {
		return 0
	}
	need := target - level
	return time.Duration((need + int64(limit) - 1) / int64(limit))
}

// Used returns the whole tokens used of a bucket at level with limit per
// minute (its capacity less its level, rounded up): above limit when the
// bucket is in debt.
func Used(level int64, limit int) int {
	u := Cap(limit) - level
	if u <= 0 {
		return 0
	}
	return int((u + Unit - 1) / Unit)
}
