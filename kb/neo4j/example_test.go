package neo4j_test

import (
	"context"
	"fmt"
	"os"

	driver "github.com/neo4j/neo4j-go-driver/v5/neo4j"

	"github.com/bichat-go/bichat/kb"
	"github.com/bichat-go/bichat/kb/kbtest"
	kbneo4j "github.com/bichat-go/bichat/kb/neo4j"
)

// Connecting the catalog to a Neo4j server (not run: it needs one).
func Example() {
	ctx := context.Background()
	d, err := driver.NewDriverWithContext(os.Getenv("NEO4J_URI"),
		driver.BasicAuth(os.Getenv("NEO4J_USER"), os.Getenv("NEO4J_PASSWORD"), ""))
	if err != nil {
		panic(err)
	}
	defer d.Close(ctx)

	cat := kbneo4j.New(kbneo4j.FromDriver(d, ""), kbneo4j.Options{Embedder: kb.NewHashEmbedder(kb.HashEmbedderOptions{})})
	scope := kb.Scope{TenantID: "acme", Ontology: "sales"}
	if err := cat.Put(ctx, scope, kbtest.Sales()...); err != nil {
		panic(err)
	}
	found, err := kb.Discover(ctx, cat, scope, "revenue per customer", kb.DiscoverOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(found.Names(), found.JoinHints)
}
