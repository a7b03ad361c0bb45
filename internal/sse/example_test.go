package sse_test

import (
	"fmt"
	"io"
	"strings"

	"github.com/bichat-go/bichat/internal/sse"
)

func Example() {
	stream := "event: message_start\r\ndata: {\"type\":\"message_start\"}\r\n\r\n" +
		": keep-alive\n\n" +
		"data: line one\ndata: line two\n\n" +
		"data: [DONE]\n\n"
	r := sse.NewReader(strings.NewReader(stream))
	for {
		ev, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		fmt.Printf("%q %q\n", ev.Name, ev.Data)
	}
	// Output:
	// "message_start" "{\"type\":\"message_start\"}"
	// "" "line one\nline two"
	// "" "[DONE]"
}
