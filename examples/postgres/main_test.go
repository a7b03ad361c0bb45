package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestUsageWithoutDSN(t *testing.T) {
	t.Setenv("DATABASE_URL", "")
	var out, errb bytes.Buffer
	if code := run(context.Background(), nil, &out, &errb); code != 2 {
		t.Fatalf("exit code %d", code)
	}
	if !strings.Contains(errb.String(), "no database given: pass -dsn or set DATABASE_URL") || !strings.Contains(errb.String(), "usage: postgres") || out.Len() != 0 {
		t.Errorf("stderr %q stdout %q", errb.String(), out.String())
	}
}

func TestBadDSNIsAnErrorWithoutThePassword(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"-dsn", "postgres://u:hunter2-secret@127.0.0.1:1/db?connect_timeout=2"}, &out, &errb)
	if code != 1 || strings.Contains(errb.String(), "hunter2-secret") || !strings.Contains(errb.String(), "postgres: connect to 127.0.0.1:1") {
		t.Errorf("code %d stderr %q", code, errb.String())
	}
}

func TestDemoAgainstPostgres(t *testing.T) {
	t.Parallel()
	dsn := os.Getenv("BICHAT_TEST_POSTGRES_DSN")
	if dsn == "" {
		if os.Getenv("BICHAT_REQUIRE_INTEGRATION") == "1" {
			t.Fatal("BICHAT_TEST_POSTGRES_DSN is not set")
		}
		t.Skip("BICHAT_TEST_POSTGRES_DSN is not set")
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	schema := "example_" + hex.EncodeToString(b)
	t.Cleanup(func() {
		conn, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			_, _ = conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			conn.Close(context.Background())
		}
	})
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"-dsn", dsn, "-sample", schema}, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{
		"5 dataset(s):",
		"name: " + schema + ".customers\nsource: " + schema + ".customers\nkind: table\ndescription: One row per customer.",
		"→ describe_table",
		"→ query_database",
		"| row_count |",
		"| 200 |",
		"host payload: result_1 with 1 row(s); artifact result_1.csv",
		"answer: I counted the rows of " + schema + ".customers.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}
