package prometheus_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/bichat-go/bichat/hooks"
	bichatprom "github.com/bichat-go/bichat/hooks/prometheus"
)

// Register bichat's metrics into a registry, subscribe them on the bus and
// serve them with promhttp.
func Example() {
	bus := hooks.New(hooks.Options{})
	defer bus.Close()

	reg := prometheus.NewRegistry()
	m, err := bichatprom.New(reg, bichatprom.Options{
		Tools:  []string{"sql_query"},
		Models: []string{"gpt-4.1"},
		Bus:    bus,
	})
	if err != nil {
		panic(err)
	}
	if _, err := bus.Subscribe(m); err != nil {
		panic(err)
	}

	// The executor and the tools publish these; here they are published by
	// hand.
	ctx := context.Background()
	bus.Publish(ctx, &hooks.ToolFinish{Tool: "sql_query", Duration: 40 * time.Millisecond})
	bus.Publish(ctx, &hooks.ToolError{Tool: "sql_query", Code: "timeout", Duration: time.Second})
	bus.Publish(ctx, &hooks.ToolFinish{Tool: "made_up_by_the_model", Duration: time.Millisecond})

	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, "bichat_tool_calls_total{") {
			fmt.Println(line)
		}
	}
	// Output:
	// bichat_tool_calls_total{outcome="ok",tool="other"} 1
	// bichat_tool_calls_total{outcome="ok",tool="sql_query"} 1
	// bichat_tool_calls_total{outcome="timeout",tool="sql_query"} 1
}
