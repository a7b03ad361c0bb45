package opaque_test

import (
	"fmt"

	"github.com/bichat-go/bichat/internal/opaque"
)

func Example() {
	c := opaque.For("anthropic")
	for _, wire := range []string{"EqQB", "not base64"} {
		b, prov := c.FromWire(wire)
		fmt.Printf("%q %s -> %q\n", b, prov, c.ToWire(b, prov))
	}
	// Output:
	// "\x12\xa4\x01" anthropic -> "EqQB"
	// "not base64" anthropic/raw -> "not base64"
}
