package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/bichat-go/bichat"
)

// storeDSN returns the test database, or skips (fails under
// BICHAT_REQUIRE_INTEGRATION=1) when there is none.
func storeDSN(t *testing.T) string {
	t.Helper()
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("BICHAT_TEST_POSTGRES_DSN is not set (run make setup)")
		}
		t.Skip("BICHAT_TEST_POSTGRES_DSN is not set")
	}
	return dsn
}

// tempSchema names a schema of this test and drops it at the end.
func tempSchema(t *testing.T, dsn string) string {
	t.Helper()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "bichat_server_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		pool, err := pgxpool.New(ctx, dsn)
		if err != nil {
			t.Errorf("drop schema: %v", err)
			return
		}
		defer pool.Close()
		if _, err := pool.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return schema
}

// TestPostgresStorage: with -dsn a chat, its answer, its tool results and
// its files outlive the server: a second server on the same database
// (after the first one is closed) shows them and takes the next question.
func TestPostgresStorage(t *testing.T) {
	t.Parallel()
	dsn := storeDSN(t)
	schema := tempSchema(t, dsn)
	opts := Options{DSN: dsn, Schema: schema, ConfirmationKey: []byte("a shared key of 32 bytes, or so!")}

	first, srv1 := newServer(t, opts)
	if first.StorageNote == "" {
		t.Error("StorageNote is empty")
	}
	sessionID, id := ask(t, srv1, "", QuestionRegions)
	evs := readRun(t, srv1, id)
	if got := names(evs); got[len(got)-1] != bichat.SSEMessageComplete {
		t.Fatalf("first run ended with %v", got)
	}
	var res bichat.EventToolResult
	find(t, evs, bichat.SSEToolResult, &res)
	if len(res.Artifacts) == 0 {
		t.Fatalf("the query produced no artifact: %+v", res)
	}
	srv1.CloseClientConnections()
	srv1.Close()
	if err := first.Close(); err != nil {
		t.Fatalf("close the first server: %v", err)
	}

	_, srv2 := newServer(t, opts)
	var page struct{ Items []bichat.MessageView }
	call(t, srv2, http.MethodGet, "/api/sessions/"+sessionID+"/messages", nil, http.StatusOK, &page)
	msgs := page.Items
	if len(msgs) != 2 || msgs[1].ID != id || msgs[1].Status != "complete" {
		t.Fatalf("after a restart the chat holds %+v", msgs)
	}
	// The answer's log replays on the new server, and its files download.
	if again := readRun(t, srv2, id); len(again) != len(evs) {
		t.Errorf("replay after restart: %d events, want %d", len(again), len(evs))
	}
	res2, err := srv2.Client().Get(srv2.URL + res.Artifacts[0].URL)
	if err != nil {
		t.Fatal(err)
	}
	res2.Body.Close()
	if res2.StatusCode != http.StatusOK {
		t.Errorf("artifact %s after restart: status %d", res.Artifacts[0].URL, res2.StatusCode)
	}
	// The session takes the next question on the new server.
	_, id2 := ask(t, srv2, sessionID, QuestionMonths)
	if got := names(readRun(t, srv2, id2)); got[len(got)-1] != bichat.SSEMessageComplete {
		t.Fatalf("second run ended with %v", got)
	}
}
