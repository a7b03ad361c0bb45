// Package bucket is the exact integer arithmetic of the token buckets
// that package quota and its PostgreSQL adapter share.
//
// A bucket of a limit of N per minute holds up to N tokens and refills at
// N/60 tokens per second. Levels are int64 counts of 1/Unit of a token,
// with Unit = 60e9 (the nanoseconds in a minute), so a limit of N per
// minute refills exactly N units per nanosecond: refills and waiting
// times are exact integers, with no rounding drift between replicas.
package bucket
