package memory_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/domain/memory"
)

func Example() {
	ctx := context.Background()
	repos := memory.New().Repositories()
	start := time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)

	session := &domain.Session{
		ID:        domain.NewID(),
		TenantID:  "acme",
		OwnerID:   "alice",
		Title:     "Quarterly revenue",
		CreatedAt: start,
	}
	if err := repos.Sessions.CreateSession(ctx, session); err != nil {
		log.Fatal(err)
	}

	question := &domain.Message{
		ID:        domain.NewID(),
		TenantID:  "acme",
		SessionID: session.ID,
		Role:      domain.RoleUser,
		Status:    domain.StatusComplete,
		Parts:     []domain.Part{domain.TextPart("What was revenue in Q3?")},
		CreatedAt: start.Add(time.Minute),
	}
	answer := &domain.Message{
		ID:        domain.NewID(),
		TenantID:  "acme",
		SessionID: session.ID,
		Role:      domain.RoleAssistant,
		Status:    domain.StatusGenerating,
		CreatedAt: start.Add(time.Minute),
	}
	if err := repos.Messages.CreateMessages(ctx, question, answer); err != nil {
		log.Fatal(err)
	}
	// A runner claims the placeholder before generating the answer.
	if err := repos.Messages.Claim(ctx, "acme", answer.ID, domain.NewID()); err != nil {
		log.Fatal(err)
	}

	page, err := repos.Sessions.ListSessions(ctx, "acme", "alice", domain.ListOptions{Search: "revenue"})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range page.Items {
		fmt.Printf("session %q (%d of %d)\n", s.Title, len(page.Items), page.Total)
	}

	msgs, err := repos.Messages.ListMessages(ctx, "acme", session.ID, domain.MessageListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range msgs {
		fmt.Printf("%s, %s, claimed=%t: %q\n", m.Role, m.Status, m.RunID != "", m.Text())
	}

	// Another tenant cannot see the session.
	_, err = repos.Sessions.GetSession(ctx, "globex", session.ID)
	fmt.Println("other tenant:", errors.Is(err, domain.ErrNotFound))

	// Output:
	// session "Quarterly revenue" (1 of 1)
	// user, complete, claimed=false: "What was revenue in Q3?"
	// assistant, generating, claimed=true: ""
	// other tenant: true
}

// ExampleNewWithOptions keeps fewer and smaller named results per session
// than the defaults.
func ExampleNewWithOptions() {
	ctx := context.Background()
	store := memory.NewWithOptions(memory.Options{ResultsPerSession: 2, MaxResultBytes: 1 << 20})
	session := &domain.Session{ID: domain.NewID(), TenantID: "acme", OwnerID: "alice", Title: "Q3"}
	if err := store.CreateSession(ctx, session); err != nil {
		log.Fatal(err)
	}
	for range 3 {
		if _, err := store.PutResult(ctx, &domain.StoredResult{TenantID: "acme", SessionID: session.ID, Data: []byte(`{}`)}); err != nil {
			log.Fatal(err)
		}
	}
	names, err := store.ListResults(ctx, "acme", session.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(names)
	_, err = store.PutResult(ctx, &domain.StoredResult{TenantID: "acme", SessionID: session.ID, Data: make([]byte, 2<<20)})
	fmt.Println(errors.Is(err, domain.ErrTooLarge))
	// Output:
	// [result_2 result_3]
	// true
}
