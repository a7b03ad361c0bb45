// Package pool keeps warm sandbox workers ready for the adapters in
// sandbox/bwrap and sandbox/docker.
package pool
