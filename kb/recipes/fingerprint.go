package recipes

import (
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/kb"
)

// CanonicalSchema returns the canonical form of the schema of datasets,
// the input of Fingerprint (see kb.CanonicalSchema: only what SQL depends
// on, order-free, so editing documentation does not invalidate recipes,
// while renaming a column or changing its type does).
func CanonicalSchema(datasets []domain.Dataset) []byte { return kb.CanonicalSchema(datasets) }

// Fingerprint returns the schema fingerprint of datasets: the lower-case
// hexadecimal SHA-256 of CanonicalSchema(datasets) (kb.SchemaFingerprint).
// The order of datasets, fields and relationships does not matter.
func Fingerprint(datasets []domain.Dataset) string { return kb.SchemaFingerprint(datasets) }
