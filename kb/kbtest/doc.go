// Package kbtest is the conformance suite for kb.Catalog implementations:
// scoping (nothing crosses tenants or ontologies, invalid scopes are
// rejected), search (identifier splitting, stemming, vector similarity
// for misspellings, ordering, fallback), details, relationships in both
// directions, list, put/replace/delete and backfill, and kb.Discover on
// top. An implementation's tests call RunCatalogTests with a constructor
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
