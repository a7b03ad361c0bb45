package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
	"github.com/bichat-go/bichat/tools/sqldb"
)

// Question texts of the scripted analyst's form; the answers come back to
// it as "- <question> → <answer>" lines.
const (
	regionQuestion    = "Which region should the figures cover?"
	recipientQuestion = "Who should receive the email? (an address)"
)

// regionSQL is the statement the scripted analyst runs for a region (one
// of the offered labels, so it is a fixed string per region).
func regionSQL(region string) string {
	return `SELECT r.name AS region, ROUND(SUM(i.quantity * i.unit_price), 2) AS revenue, COUNT(DISTINCT o.id) AS orders
FROM orders o
JOIN customers c ON c.id = o.customer_id
JOIN regions r ON r.id = c.region_id
JOIN order_items i ON i.order_id = o.id
WHERE o.status = 'completed' AND o.ordered_at >= '2025-01-01' AND o.ordered_at < '2026-01-01' AND r.name = '` +
		strings.ReplaceAll(region, "'", "''") + `'
GROUP BY r.name`
}

// analyst is the scripted model of the offline demo. It keeps no state:
// every turn is decided from the request (the conversation so far), so a
// fresh one in a restarted process continues where the last one stopped.
// It asks for the region and the recipient, queries the region's 2025
// revenue, asks to send the email and then reports what happened.
func analyst() *scripted.Model {
	return &scripted.Model{ModelInfo: agents.ModelInfo{Provider: "scripted", Name: "scripted-analyst", ContextWindow: 128_000,
		Capabilities: agents.Capabilities{Tools: true}},
		Respond: func(_ context.Context, req *agents.Request) (scripted.Turn, error) {
			results := map[string]*domain.ToolResult{}
			for _, m := range req.Messages {
				for _, p := range m.Parts {
					if p.ToolResult != nil {
						results[p.ToolResult.Name] = p.ToolResult
					}
				}
			}
			asked, queried, sent := results[agents.ToolAskUserQuestion], results[sqldb.ToolQuery], results[toolSendEmail]
			if asked == nil {
				options := make([]agents.QuestionOption, len(regions))
				for i, r := range regions {
					options[i] = agents.QuestionOption{Label: r}
				}
				return scripted.Turn{
					Text: "Two details before I send anything.\n",
					ToolCalls: []scripted.Call{scripted.CallJSON(agents.ToolAskUserQuestion, agents.AskUserQuestionArgs{Questions: []agents.AskedQuestion{
						{ID: qRegion, Question: regionQuestion, Options: options},
						{ID: qRecipient, Question: recipientQuestion},
					}})},
				}, nil
			}
			region, to := answerTo(asked.Content, regionQuestion), answerTo(asked.Content, recipientQuestion)
			if region == "" || to == "" {
				return scripted.Turn{Text: "I did not get a region and a recipient, so I sent nothing."}, nil
			}
			if queried == nil {
				return scripted.Turn{
					Text:      fmt.Sprintf("I'll look up the 2025 revenue of %s.\n", region),
					ToolCalls: []scripted.Call{scripted.CallJSON(sqldb.ToolQuery, sqldb.QueryArgs{SQL: regionSQL(region)})},
				}, nil
			}
			cells := firstRow(queried.Content)
			if queried.IsError || len(cells) != 3 {
				return scripted.Turn{Text: "The query failed, so I sent nothing: " + queried.Content}, nil
			}
			figures := fmt.Sprintf("Revenue of completed orders in %s in 2025: €%s from %s orders.", cells[0], cells[1], cells[2])
			switch {
			case sent == nil:
				return scripted.Turn{
					Text: "Here is the email; it goes out once you approve it.\n",
					ToolCalls: []scripted.Call{scripted.CallJSON(toolSendEmail, emailInput{
						To: to, Subject: "2025 revenue, " + cells[0], Body: figures})},
				}, nil
			case sent.IsError:
				return scripted.Turn{Text: "I did not send the email. " + figures}, nil
			}
			return scripted.Turn{Text: fmt.Sprintf("Sent to %s. %s", to, figures)}, nil
		}}
}

// answerTo finds the answer to question in the ask_user_question result.
func answerTo(result, question string) string {
	for line := range strings.SplitSeq(result, "\n") {
		if rest, ok := strings.CutPrefix(line, "- "+question+" → "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// firstRow returns the cells of the first data row of the markdown table
// in a query_database summary.
func firstRow(summary string) []string {
	lines := strings.Split(summary, "\n")
	for i, l := range lines {
		if strings.HasPrefix(l, "| ---") && i+1 < len(lines) {
			return strings.Split(strings.Trim(lines[i+1], "| "), " | ")
		}
	}
	return nil
}
