// Package runner holds the in-sandbox runner script shared by the bwrap
// and docker adapters and the wire types they exchange with it.
package runner
