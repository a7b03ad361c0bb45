package bichat

import (
	_ "embed"
	"encoding/json"
)

// openAPISpec is the OpenAPI 3.1 document of Handler's routes, with paths
// relative to the server URL "/api". A test checks it against the routes
// the handler serves and validates real responses against it.
//
//go:embed openapi.json
var openAPISpec []byte

// openAPIDocument returns the document with its server URL set to
// prefix ("/" when empty).
func openAPIDocument(prefix string) []byte {
	if prefix == "" {
		prefix = "/"
	}
	if prefix == "/api" {
		return openAPISpec
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(openAPISpec, &doc); err != nil {
		panic("bichat: embedded openapi.json is not JSON: " + err.Error())
	}
	servers, _ := json.Marshal([]map[string]string{{"url": prefix}})
	doc["servers"] = servers
	out, err := json.Marshal(doc)
	if err != nil {
		panic("bichat: encode openapi.json: " + err.Error())
	}
	return out
}
