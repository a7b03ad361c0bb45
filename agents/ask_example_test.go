package agents_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/providers/scripted"
)

// A host renders the ask_user_question form from the run's events and
// sends the user's choices back. The arguments decode into
// agents.AskUserQuestionArgs (its JSON Schema is
// agents.AskUserQuestionSchema()); Interrupted.Questions carries the same
// questions validated, with ids filled in; the answer is an agents.Answers
// keyed by those ids.
func ExampleAskUserQuestionArgs() {
	m := &scripted.Model{Turns: []scripted.Turn{
		{ToolCalls: []scripted.Call{{ID: "ask1", Name: agents.ToolAskUserQuestion, Args: `{"questions":[
			{"id":"region","question":"Which region?","options":[{"label":"EMEA"},{"label":"APAC"}],"allow_other":true},
			{"question":"Which period?"}]}`}}},
		{Text: "EMEA revenue in the last two quarters was 2.4 M EUR."},
	}}
	e, err := agents.NewExecutor(agents.Config{Model: m})
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	var cp *agents.Checkpoint
	for ev, err := range e.Run(ctx, agents.Input{Message: agents.UserMessage("Revenue?")}) {
		if err != nil {
			panic(err)
		}
		switch ev := ev.(type) {
		case *agents.ToolCallStarted:
			if ev.Name == agents.ToolAskUserQuestion {
				var args agents.AskUserQuestionArgs
				if err := json.Unmarshal(ev.Arguments, &args); err != nil {
					panic(err)
				}
				fmt.Println("the model asks", len(args.Questions), "questions")
			}
		case *agents.Interrupted:
			for _, q := range ev.Questions {
				labels := make([]string, len(q.Options))
				for i, o := range q.Options {
					labels[i] = o.Label
				}
				fmt.Printf("form field %s: %q options=%v free text=%v\n", q.ID, q.Question, labels,
					len(q.Options) == 0 || q.AllowOther)
			}
			cp = ev.Checkpoint
		}
	}

	// The user's choices, as the host's form posts them.
	var answers agents.Answers
	if err := json.Unmarshal([]byte(`{"region":{"selected":["EMEA"]},"q2":{"text":"the last two quarters"}}`), &answers); err != nil {
		panic(err)
	}
	for ev, err := range e.Resume(ctx, cp, answers) {
		if err != nil {
			panic(err)
		}
		if f, ok := ev.(*agents.RunFinished); ok {
			fmt.Println(f.Text)
		}
	}

	var schema struct {
		Properties struct {
			Questions struct {
				MaxItems int `json:"maxItems"`
				Items    struct {
					Required []string `json:"required"`
				} `json:"items"`
			} `json:"questions"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(agents.AskUserQuestionSchema(), &schema); err != nil {
		panic(err)
	}
	q := schema.Properties.Questions
	fmt.Println("schema: at most", q.MaxItems, "questions, each requires", strings.Join(q.Items.Required, ", "))
	// Output:
	// the model asks 2 questions
	// form field region: "Which region?" options=[EMEA APAC] free text=true
	// form field q2: "Which period?" options=[] free text=true
	// EMEA revenue in the last two quarters was 2.4 M EUR.
	// schema: at most 4 questions, each requires question
}
