package kb

import (
	"context"
	"fmt"

	"github.com/bichat-go/bichat/domain"
)

// Scope partitions every catalog, document index and recipe memory: a
// tenant and, within it, an ontology (semantic model). Ontology may be
// empty for a tenant with a single model.
type Scope struct {
	TenantID string `json:"tenant_id"`
	Ontology string `json:"ontology,omitempty"`
}

// Validate reports a *domain.ValidationError when the tenant is missing or
// a part is not a valid name.
func (s Scope) Validate() error {
	if !domain.ValidName(s.TenantID) {
		return domain.Invalid("scope.tenant_id", fmt.Sprintf("%q is not a valid tenant id", s.TenantID))
	}
	if s.Ontology != "" && !domain.ValidName(s.Ontology) {
		return domain.Invalid("scope.ontology", fmt.Sprintf("%q is not a valid ontology name", s.Ontology))
	}
	return nil
}

// String renders the scope as "tenant/ontology".
func (s Scope) String() string { return s.TenantID + "/" + s.Ontology }

// Embedder turns texts into vectors for similarity search. Embed returns
// one vector of Dimensions() floats per text, in input order.
// Implementations must be safe for concurrent use. The offline default
// lives in this package; providers/openai has a client for
// OpenAI-compatible /v1/embeddings that satisfies this interface.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
	Dimensions() int
}
