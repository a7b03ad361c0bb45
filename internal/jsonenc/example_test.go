package jsonenc_test

import (
	"fmt"

	"github.com/bichat-go/bichat/internal/jsonenc"
)

func ExampleAppendString() {
	buf := []byte(`{"text":`)
	buf = jsonenc.AppendString(buf, "a <b> & \"c\"\n")
	buf = append(buf, '}')
	fmt.Println(string(buf))
	// Output: {"text":"a \u003cb\u003e \u0026 \"c\"\n"}
}
