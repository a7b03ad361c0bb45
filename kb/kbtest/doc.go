// Package kbtest is the conformance suite for kb.Catalog implementations:
// scoping (nothing crosses tenants or ontologies, invalid scopes are
// rejected), search (identifier splitting, stemming, vector similarity
// for misspellings, ordering, fallback), details, relationships in both
// directions, list, put/replace/delete and backfill, kb.Discover on
// top, and deterministic rankings (two builds of a catalog full of ties,
// NearTies, rank every question identically on every repeat, and a
// smaller k returns a prefix; CheckRankings runs the same check on any
// pair of catalogs). An implementation's tests call RunCatalogTests with a constructor
// of fresh, empty catalogs that embed definitions (any kb.Embedder):
//
//	func TestConformance(t *testing.T) {
//		kbtest.RunCatalogTests(t, func(t *testing.T) kb.Catalog {
//			c := kb.NewMemoryCatalog(kb.CatalogOptions{})
//			t.Cleanup(func() { c.Close() })
//			return c
//		})
//	}
package kbtest
