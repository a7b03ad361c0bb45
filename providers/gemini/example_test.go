package gemini_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/gemini"
)

func Example() {
	// A stand-in for the Gemini API: two streamed chunks, CRLF-separated.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Revenue "}]},"index":0}]}`+"\r\n\r\n"+
			`data: {"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"run_sql","args":{"sql":"SELECT 1"}}}]},"finishReason":"STOP","index":0}],`+
			`"usageMetadata":{"promptTokenCount":40,"candidatesTokenCount":9,"totalTokenCount":49},"responseId":"r1"}`+"\r\n\r\n")
	}))
	defer srv.Close()

	// Without BaseURL this talks to generativelanguage.googleapis.com;
	// without APIKey it reads GEMINI_API_KEY or GOOGLE_API_KEY.
	model, err := gemini.New(gemini.Config{Model: "gemini-3.5-flash", APIKey: "example-key", BaseURL: srv.URL})
	if err != nil {
		panic(err)
	}
	resp, err := agents.Generate(context.Background(), model, &agents.Request{
		Messages: []agents.Message{agents.UserMessage("Revenue?")},
		Tools: []agents.ToolSpec{{Name: "run_sql", Description: "Run read-only SQL",
			Schema: json.RawMessage(`{"type":"object","properties":{"sql":{"type":"string"}},"required":["sql"]}`)}},
	})
	if err != nil {
		panic(err)
	}
	call := resp.Message.ToolCalls()[0]
	fmt.Println(resp.Message.Text(), resp.Stop, call.Name, string(call.Arguments), call.ID)
	fmt.Println(resp.Usage.TotalTokens)
	// Output:
	// Revenue  tool_use run_sql {"sql":"SELECT 1"} gemini-call-r1-0
	// 49
}

func ExampleConvertSchema() {
	s, err := gemini.ConvertSchema(json.RawMessage(`{"$schema":"https://json-schema.org/draft/2020-12/schema",
		"type":"object","$defs":{"Year":{"type":"integer","minimum":2000}},
		"properties":{"year":{"$ref":"#/$defs/Year"},"region":{"const":"EU"}},"required":["year"]}`))
	fmt.Println(string(s), err)
	// Output:
	// {"properties":{"region":{"enum":["EU"]},"year":{"minimum":2000,"type":"integer"}},"required":["year"],"type":"object"} <nil>
}
