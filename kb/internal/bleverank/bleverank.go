package bleverank

import (
	"context"
	"slices"
	"strings"

	"github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/search"
)

// Round is the canonical form of a Bleve score: float32 precision, far
// coarser than the summation noise (a few float64 ulps) and far finer
// than any score difference that means something.
func Round(score float64) float64 { return float64(float32(score)) }

// Search runs req on idx and returns its hits ranked deterministically:
// rounded scores (Round), highest first, ties by document ID, at most
// req.Size hits. req must rank by score (no SortBy) and start at the
// first hit (From 0); Search changes req.Size while it works and
// restores it. The result's Total and other fields are those of the
// last request run.
func Search(ctx context.Context, idx bleve.Index, req *bleve.SearchRequest) (*bleve.SearchResult, error) {
	n := req.Size
	if n <= 0 {
		return idx.SearchInContext(ctx, req)
	}
	defer func() { req.Size = n }()
	m := n + max(8, n/4)
	for {
		req.Size = m
		res, err := idx.SearchInContext(ctx, req)
		if err != nil {
			return nil, err
		}
		hits := res.Hits
		for _, h := range hits {
			h.Score = Round(h.Score)
		}
		// Bleve returns the hits by raw score, so the rounded scores are
		// non-increasing. The first n are settled when fewer than m came
		// back (every match is here) or when a hit after the n-th scores
		// strictly lower than the n-th: every hit Bleve left out scores
		// no higher than that one.
		cut := len(hits)
		if len(hits) == m && uint64(len(hits)) < res.Total {
			cut = -1
			for j := n; j < len(hits); j++ {
				if hits[j].Score < hits[n-1].Score {
					cut = j
					break
				}
			}
			if cut < 0 {
				m *= 2 // the n-th hit's score ties every hit fetched after it
				continue
			}
		}
		hits = hits[:cut]
		slices.SortStableFunc(hits, compare)
		if len(hits) > n {
			hits = hits[:n]
		}
		res.Hits = hits
		if len(hits) > 0 {
			res.MaxScore = hits[0].Score
		}
		return res, nil
	}
}

// compare orders hits by score, highest first, then by ID.
func compare(a, b *search.DocumentMatch) int {
	switch {
	case a.Score > b.Score:
		return -1
	case a.Score < b.Score:
		return 1
	}
	return strings.Compare(a.ID, b.ID)
}
