package jsonscan_test

import (
	"fmt"

	"github.com/bichat-go/bichat/internal/jsonscan"
)

// A stream decoder reads the fields it needs and falls back to
// encoding/json whenever the scanner declines.
func Example() {
	for _, in := range []string{
		`{"index":3,"delta":{"text":"caf\u00e9"},"model":"m"}`,
		`{"index":3,"Delta":{"text":"x"}}`, // encoding/json would fill delta
	} {
		s := jsonscan.New([]byte(in))
		var index int
		var text string
		ok := s.Object(func(k []byte) bool {
			switch string(k) {
			case "index":
				n, ok := s.Int()
				index = n
				return ok
			case "delta":
				return s.Object(func(k []byte) bool {
					if string(k) == "text" {
						return s.TextInto(&text)
					}
					return !jsonscan.FoldsTo(k, "text") && s.Skip()
				})
			}
			return !jsonscan.FoldsTo(k, "index", "delta") && s.Skip()
		}) && s.AtEnd()
		if !ok {
			fmt.Println("declined: decode with encoding/json")
			continue
		}
		fmt.Println(index, text)
	}
	// Output:
	// 3 café
	// declined: decode with encoding/json
}
