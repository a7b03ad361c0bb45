package main

import (
	"context"
	"fmt"
	"net/mail"
	"strings"
	"sync"

	"github.com/bichat-go/bichat/agents"
)

// toolSendEmail is the name the model calls the email tool by.
const toolSendEmail = "send_email"

// emailInput are the arguments of send_email.
type emailInput struct {
	To      string `json:"to" jsonschema:"pattern=^[^@ ]+@[^@ ]+$,maxLength=254,description=Recipient email address"`
	Subject string `json:"subject" jsonschema:"minLength=1,maxLength=200"`
	Body    string `json:"body" jsonschema:"minLength=1,maxLength=10000,description=Plain-text body"`
}

// email is one sent email, the payload of send_email.
type email struct {
	ID      string `json:"id"`
	To      string `json:"to"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// outbox stands in for the host's mail system: it records what
// send_email sent. Safe for concurrent use.
type outbox struct {
	mu   sync.Mutex
	sent []email
}

// send records e and gives it an id.
func (o *outbox) send(e email) email {
	o.mu.Lock()
	defer o.mu.Unlock()
	e.ID = fmt.Sprintf("mail-%d", len(o.sent)+1)
	o.sent = append(o.sent, e)
	return e
}

// emails returns a copy of what was sent, oldest first.
func (o *outbox) emails() []email {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]email(nil), o.sent...)
}

// newSendEmail builds send_email. agents.WithPermission(agents.PermWrite)
// is what keeps it from running on the model's word: the executor stops
// the run with a confirmation request instead, and only the host's
// Approve runs it.
func newSendEmail(box *outbox) (agents.Tool, error) {
	return agents.NewTool(toolSendEmail,
		"Sends an email from the company account. The user is asked to approve every email before it goes out.",
		func(_ context.Context, in emailInput) (agents.Result, error) {
			addr, err := mail.ParseAddress(in.To)
			if err != nil || addr.Name != "" {
				return agents.Result{}, &agents.ArgumentError{Tool: toolSendEmail,
					Problems: []string{fmt.Sprintf("/to: %q is not a plain email address", in.To)}}
			}
			sent := box.send(email{To: addr.Address, Subject: strings.TrimSpace(in.Subject), Body: in.Body})
			return agents.Result{Summary: fmt.Sprintf("Sent %q to %s (%s).", sent.Subject, sent.To, sent.ID), Payload: sent}, nil
		},
		agents.WithPermission(agents.PermWrite))
}
