package audit

import (
	"context"
	"errors"
	"fmt"
	"iter"
)

// BreakError reports the first broken link of a tenant's chain.
type BreakError struct {
	// TenantID is the chain's tenant.
	TenantID string
	// Seq is the sequence number of the first link that cannot be
	// trusted: the entry whose content changed, the first one missing, or
	// the one out of place.
	Seq uint64
	// Index is the position (0-based) in the entries read where the break
	// was found; the number of entries read when it was found at the end
	// (entries missing from the end).
	Index int
	// Reason says what is wrong, for people.
	Reason string
}

// Error names the tenant, the seq and the reason.
func (e *BreakError) Error() string {
	return fmt.Sprintf("audit: chain of tenant %q broken at seq %d (entry %d read): %s", e.TenantID, e.Seq, e.Index, e.Reason)
}

// Verify checks tenantID's chain, given as its entries in stored order,
// and returns nil or a *BreakError naming the first broken link. Each
// entry must belong to tenantID, carry the hash of its own content
// (Entry.ComputeHash), have the Seq that follows the previous one (1 for
// the first) and a Prev equal to the previous entry's Hash (ZeroHash for
// the first). A record that cannot be decoded (an error matching
// ErrCorrupt) breaks the chain where it stands; any other error from
// entries ends verification and is returned wrapped.
//
// Each anchor (a head recorded apart from the entries, e.g. Reader.Head,
// or one the host copied elsewhere) must be matched: the chain must reach
// anchor.Seq and its entry there must carry anchor.Hash; a chain that
// ends earlier lost entries at its end. Entries after an anchor are
// allowed (they were appended after the anchor was taken), as long as
// they link. Anchors of other tenants are ignored; an anchor with an
// empty TenantID applies to tenantID.
//
// On a break, BreakError.Seq is the expected seq at that position when
// the entry's content does not match its hash or its links are wrong, and
// the smaller of the expected and the recorded seq when an intact entry
// is out of place (a missing, duplicated or reordered entry).
func Verify(tenantID string, entries iter.Seq2[Entry, error], anchors ...Anchor) error {
	want := uint64(1)
	prev := ZeroHash
	index := 0
	brk := func(seq uint64, format string, args ...any) error {
		return &BreakError{TenantID: tenantID, Seq: seq, Index: index, Reason: fmt.Sprintf(format, args...)}
	}
	var relevant []Anchor
	for _, a := range anchors {
		if a.TenantID == tenantID || a.TenantID == "" {
			relevant = append(relevant, a)
		}
	}
	for e, err := range entries {
		if err != nil {
			if errors.Is(err, ErrCorrupt) {
				return brk(want, "%v", err)
			}
			return fmt.Errorf("audit: verify tenant %q: %w", tenantID, err)
		}
		if e.TenantID != tenantID {
			return brk(want, "entry belongs to tenant %q", e.TenantID)
		}
		h, err := e.ComputeHash()
		if err != nil {
			return brk(want, "cannot hash the entry: %v", err)
		}
		if h != e.Hash {
			return brk(want, "hash mismatch: the entry's content was changed (recorded seq %d)", e.Seq)
		}
		if e.Seq != want {
			what := "a gap: entries are missing or out of order"
			if e.Seq < want {
				what = "a duplicate or an entry out of order"
			}
			return brk(min(e.Seq, want), "found seq %d where seq %d belongs: %s", e.Seq, want, what)
		}
		if e.Prev != prev {
			if want == 1 {
				return brk(want, "the first entry's prev is not the zero hash")
			}
			return brk(want, "prev does not match the hash of seq %d: an entry before it was replaced", want-1)
		}
		for _, a := range relevant {
			if a.Seq == e.Seq && a.Hash != e.Hash {
				return brk(e.Seq, "the entry differs from the head anchor (hash %s)", a.Hash)
			}
		}
		prev = e.Hash
		want++
		index++
	}
	last := want - 1
	for _, a := range relevant {
		if a.Seq > last {
			return brk(last+1, "the chain ends at seq %d but its head anchor is at seq %d: entries were removed from the end", last, a.Seq)
		}
	}
	return nil
}

// VerifyTenant verifies tenantID's chain in r against r's head anchor for
// it and any extra anchors (see Verify). It reads the head before the
// entries, so appends running meanwhile do not count as breaks.
func VerifyTenant(ctx context.Context, r Reader, tenantID string, anchors ...Anchor) error {
	head, err := r.Head(ctx, tenantID)
	if err != nil {
		return fmt.Errorf("audit: verify tenant %q: %w", tenantID, err)
	}
	head.TenantID = tenantID
	return Verify(tenantID, r.Entries(ctx, tenantID), append([]Anchor{head}, anchors...)...)
}

// VerifyAll verifies every tenant's chain in r (Reader.Tenants) with
// VerifyTenant. It returns nil, or the errors of the broken chains joined
// in tenant order (errors.As finds the first *BreakError).
func VerifyAll(ctx context.Context, r Reader) error {
	tenants, err := r.Tenants(ctx)
	if err != nil {
		return fmt.Errorf("audit: verify all: %w", err)
	}
	var errs []error
	for _, t := range tenants {
		if err := VerifyTenant(ctx, r, t); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
