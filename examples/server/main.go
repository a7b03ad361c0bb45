package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	offline := flag.Bool("offline", false, "use the scripted analyst even when a provider is configured")
	pace := flag.Duration("pace", 15*time.Millisecond, "delay before each fragment the scripted analyst streams")
	noSandbox := flag.Bool("no-sandbox", false, "leave run_python out even when bubblewrap works here")
	pool := flag.Int("sandbox-pool", 1, "warm bubblewrap workers kept ready for run_python")
	models := flag.String("models", "", "comma-separated extra models for the picker (e.g. openai/gpt-4.1-mini)")
	dsn := flag.String("dsn", os.Getenv("BICHAT_STORE_URL"), "PostgreSQL storage for sessions and runs (default $BICHAT_STORE_URL; empty: in memory)")
	schema := flag.String("schema", "bichat", "PostgreSQL schema of the storage")
	lease := flag.Duration("lease", 0, "run lease: a replica that dies has its runs failed after this long (0: 15s)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts := Options{Offline: *offline, Pace: *pace, NoSandbox: *noSandbox, SandboxPool: *pool,
		DSN: *dsn, Schema: *schema, RunLease: *lease}
	// Replicas must share the key that signs confirmation tokens.
	if k := os.Getenv("BICHAT_CONFIRMATION_KEY"); k != "" {
		opts.ConfirmationKey = []byte(k)
	}
	for _, m := range strings.Split(*models, ",") {
		if m = strings.TrimSpace(m); m != "" {
			opts.Models = append(opts.Models, m)
		}
	}
	if err := serve(ctx, os.Stderr, *addr, opts); err != nil {
		log.Fatal(err)
	}
}

// serve runs the example server on addr until ctx ends, then shuts it
// down gracefully.
func serve(ctx context.Context, out io.Writer, addr string, opts Options) error {
	app, err := New(ctx, opts)
	if err != nil {
		return err
	}
	defer app.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen: %w", err)
	}
	srv := &http.Server{Handler: app, ReadHeaderTimeout: 10 * time.Second,
		ErrorLog: slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn)}
	fmt.Fprintf(out, "model: %s\nsandbox: %s\nstorage: %s\nlistening on http://%s/\n", app.ModelNote, app.SandboxNote, app.StorageNote, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("server: %w", err)
	case <-ctx.Done():
	}
	// Open event streams end when the shutdown context does.
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("server: shut down: %w", err)
	}
	return nil
}
