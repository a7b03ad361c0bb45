package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/tools/sqldb/sqlite"
)

// The tool checks what the schema cannot (regions and months that exist
// in the data) and reports every problem at once, naming each field, in
// an *agents.ArgumentError; the executor sends its text to the model.
func Example_validation() {
	path, err := sharedSampleDB()
	if err != nil {
		panic(err)
	}
	db, err := sqlite.Open(path, sqlite.Options{})
	if err != nil {
		panic(err)
	}
	defer db.Close()
	tool, err := newForecastTool(db)
	if err != nil {
		panic(err)
	}
	_, err = tool.Call(context.Background(), json.RawMessage(`{"region":"Atlantis","from":"2024-01","to":"2026-03","months":3}`))
	var ae *agents.ArgumentError
	if errors.As(err, &ae) {
		for _, p := range ae.Problems {
			fmt.Println(p)
		}
	}
	// Output:
	// /region: no region "Atlantis"; the regions are Central, East, North, South, West (omit region for all of them)
	// /to: 2026-03 is after the last month with data (2025-12); end the history there and use months to look ahead
}
