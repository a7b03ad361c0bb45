package llmtest_test

import (
	"fmt"
	"io"

	"github.com/bichat-go/bichat/internal/llmtest"
)

// A provider benchmark points its model's HTTP client at a recorded
// stream held in memory.
func Example() {
	resp, err := llmtest.Client([]byte("data: {\"text\":\"hi\"}\n\n")).Post("http://mem/v1/messages", "application/json", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Printf("%d %s %q\n", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	// Output:
	// 200 text/event-stream "data: {\"text\":\"hi\"}\n\n"
}
