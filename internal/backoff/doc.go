// Package backoff computes retry delays: capped exponential backoff with
// full jitter, as recommended for clients of rate-limited services.
package backoff
