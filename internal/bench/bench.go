package bench

import (
	"context"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

// SalesIn and the other In/Out types are the benchmark tools' arguments
// and results.
type SalesIn struct {
	Region string `json:"region"`
	Year   int    `json:"year" jsonschema:"minimum=2000,maximum=2100"`
}

// SalesOut is sales_total's result.
type SalesOut struct {
	Region string  `json:"region"`
	Total  float64 `json:"total"`
	Orders int     `json:"orders"`
}

// FXIn is fx_rate's arguments.
type FXIn struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// FXOut is fx_rate's result.
type FXOut struct {
	Rate float64 `json:"rate"`
}

// NoteIn is save_note's arguments.
type NoteIn struct {
	Text string `json:"text"`
}

// Tools returns sales_total and fx_rate (parallel-safe) and save_note
// (not), each answering at once with a fixed result.
func Tools() (sales, fx, note agents.Tool, err error) {
	if sales, err = agents.NewTool("sales_total", "Total sales of a region in a year.",
		func(_ context.Context, in SalesIn) (SalesOut, error) {
			return SalesOut{Region: in.Region, Total: 1234567.5, Orders: 321}, nil
		}, agents.WithParallel()); err != nil {
		return nil, nil, nil, err
	}
	if fx, err = agents.NewTool("fx_rate", "Exchange rate between two currencies.",
		func(_ context.Context, in FXIn) (FXOut, error) {
			return FXOut{Rate: 1.0842}, nil
		}, agents.WithParallel()); err != nil {
		return nil, nil, nil, err
	}
	if note, err = agents.NewTool("save_note", "Saves a note to the scratchpad.",
		func(_ context.Context, in NoteIn) (string, error) {
			return "saved", nil
		}); err != nil {
		return nil, nil, nil, err
	}
	return sales, fx, note, nil
}

// Calls returns the tool turn's three calls, one to each tool of Tools.
func Calls() []scripted.Call {
	return []scripted.Call{
		{ID: "call_1", Name: "sales_total", Args: `{"region":"EMEA","year":2025}`},
		{ID: "call_2", Name: "fx_rate", Args: `{"from":"EUR","to":"USD"}`},
		{ID: "call_3", Name: "save_note", Args: `{"text":"EMEA 2025 in USD"}`},
	}
}
