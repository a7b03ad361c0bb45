package bleverank_test

import (
	"fmt"

	"github.com/bichat-go/bichat/kb/internal/bleverank"
)

// Scores that differ only in the last bits of a float64 sum (the order
// Bleve happened to add term scores in) compare equal once rounded, so
// ties are then broken by document id.
func ExampleRound() {
	x, y, z := 0.1, 0.2, 0.3 // variables: constants would be summed exactly
	a, b := (x+y)+z, (z+y)+x
	fmt.Println(a == b, bleverank.Round(a) == bleverank.Round(b))
	// Output: false true
}
