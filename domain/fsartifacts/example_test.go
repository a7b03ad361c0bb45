package fsartifacts_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/fsartifacts"
)

func Example() {
	dir, err := os.MkdirTemp("", "artifacts")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := fsartifacts.Open(dir, fsartifacts.Options{MaxSize: 10 << 20})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()

	ctx := context.Background()
	a, err := store.Put(ctx, "acme", domain.Artifact{Kind: domain.ArtifactTable, Name: "sales.csv", MediaType: "text/csv"},
		strings.NewReader("month,revenue\n2024-01,10\n"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(a.Name, a.MediaType, a.Size, a.URI[:24])

	rc, _, err := store.Get(ctx, "acme", a.SHA256)
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	fmt.Print(string(b))

	// Another tenant cannot read it, even knowing the hash.
	_, err = store.Stat(ctx, "globex", a.SHA256)
	fmt.Println(errors.Is(err, domain.ErrNotFound))
	// Output:
	// sales.csv text/csv 25 artifact:sha256:332bba69
	// month,revenue
	// 2024-01,10
	// true
}
