package docker_test

import (
	"context"
	"fmt"
	"log"

	"github.com/bichat-go/bichat/sandbox"
	"github.com/bichat-go/bichat/sandbox/docker"
)

// One container per job, two started ahead. (Not run by `go test`: it
// needs a Docker engine and the image from `make sandbox-image`.)
func Example() {
	ctx := context.Background()
	s, err := docker.New(ctx, docker.Config{Image: "bichat-sandbox:bookworm-1", PoolSize: 2})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	out, err := s.Run(ctx, sandbox.Job{Code: "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.savefig('line.png')"})
	if err != nil {
		log.Fatal(err)
	}
	for _, f := range out.Files {
		fmt.Println(f.Name, f.MediaType, f.Size > 0)
	}
}
