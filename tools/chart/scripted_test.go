package chart_test

import (
	"github.com/bichat-go/bichat/providers/scripted"
)

// newScripted returns a model that calls draw_chart n times with args,
// one call per turn, then answers.
func newScripted(n int, args map[string]any) *scripted.Model {
	m := &scripted.Model{ChunkSize: 256}
	for range n {
		m.Turns = append(m.Turns, scripted.Turn{ToolCalls: []scripted.Call{scripted.CallJSON("draw_chart", args)}})
	}
	m.Turns = append(m.Turns, scripted.Turn{Text: "No chart, sorry."})
	return m
}
