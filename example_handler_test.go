package bichat_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/bichat-go/bichat"
	"github.com/bichat-go/bichat/agents"
	"github.com/bichat-go/bichat/domain"
	"github.com/bichat-go/bichat/providers/scripted"
)

// ExampleNewHandler mounts the HTTP API, creates a session, asks a
// question and follows the answer as server-sent events.
func ExampleNewHandler() {
	svc, err := bichat.New(bichat.Config{Agent: agents.Config{
		Model: &scripted.Model{Turns: []scripted.Turn{{Text: "EMEA booked 1200.00 EUR."}}},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	h := bichat.NewHandler(svc, bichat.HandlerOptions{
		// The host authenticates; here a header names the user.
		Authenticate: func(r *http.Request) (domain.Principal, error) {
			user := r.Header.Get("X-User")
			if user == "" {
				return domain.Principal{}, errors.New("no user")
			}
			return domain.Principal{TenantID: "acme", UserID: user, Roles: []domain.AccessRole{domain.AccessContributor}}, nil
		},
	})
	srv := httptest.NewServer(h) // or: http.Handle("/api/", h)
	defer srv.Close()

	call := func(method, path, body string, out any) int {
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		req.Header.Set("X-User", "ana")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		defer res.Body.Close()
		if out != nil {
			_ = json.NewDecoder(res.Body).Decode(out)
		}
		return res.StatusCode
	}

	var sess bichat.SessionView
	fmt.Println("create session:", call("POST", "/api/sessions", `{"title":"Sales"}`, &sess), sess.Title)
	var posted bichat.PostMessageResponse
	fmt.Println("ask:", call("POST", "/api/sessions/"+sess.ID+"/messages", `{"text":"What did EMEA book?"}`, &posted),
		posted.UserMessage.Role, posted.AssistantMessage.Role)

	// The events of the answer, as an EventSource would read them.
	req, _ := http.NewRequest("GET", srv.URL+"/api/messages/"+posted.AssistantMessage.ID+"/events", nil)
	req.Header.Set("X-User", "ana")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer res.Body.Close()
	last := ""
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "event: ")
		if ok && name != last {
			fmt.Println("event:", name)
			last = name
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok && last == bichat.SSEMessageComplete {
			var done bichat.EventComplete
			_ = json.Unmarshal([]byte(data), &done)
			fmt.Println("answer:", done.Text)
		}
	}
	// Output:
	// create session: 201 Sales
	// ask: 202 user assistant
	// event: message_start
	// event: text
	// event: token_update
	// event: message_complete
	// answer: EMEA booked 1200.00 EUR.
}
