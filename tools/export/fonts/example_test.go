package fonts_test

import (
	"fmt"

	"github.com/bichat-go/bichat/tools/export/fonts"
)

func Example() {
	set, err := fonts.Load(nil, nil) // search the system font folders
	if err != nil {
		fmt.Println(err)
		return
	}
	// The first face that has a character draws it.
	for _, r := range "Zü東" {
		if i := set.FaceFor(r); i >= 0 {
			fmt.Printf("%c: %s\n", r, set.Faces[i].Name)
		}
	}
	fmt.Println(set.Missing("Zürich 東京"))
}
