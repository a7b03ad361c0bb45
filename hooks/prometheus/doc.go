// Package prometheus exports bichat's events as Prometheus metrics: runs
// by result and reason, model requests, retries, fallbacks, tokens and
// cost by provider and model, tool calls, SQL statements, sandbox jobs,
// context size per block kind, budget stops, quota refusals, policy
// decisions, and the event bus's dropped events. The list of metrics is in
// the documentation of [Metrics].
//
// Import it under another name, since its name is the client library's:
//
//	import bichatprom "github.com/bichat-go/bichat/hooks/prometheus"
//
//	reg := prometheus.NewRegistry()
//	m, err := bichatprom.New(reg, bichatprom.Options{
//		Tools:  []string{"sql_query", "python"}, // the tools you configured
//		Models: []string{"gpt-4.1", "claude-sonnet-4"},
//		Bus:    bus, // export bus drops
//	})
//	if err != nil { ... }
//	bus.Subscribe(m)
//	http.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
//
// New registers into the registry it is given and nowhere else; pass
// prometheus.DefaultRegisterer to use the global one.
//
// # Bounded labels
//
// No label takes arbitrary values from events, so a misbehaving model or
// a new tenant can never grow the series count without bound:
//
//   - tool and model labels only take the names listed in Options.Tools and
//     Options.Models; any other value is "other";
//   - the tenant label exists only with Options.TenantLabel, on the runs,
//     model requests, tokens and cost metrics, and keeps the first
//     Options.MaxTenants distinct tenants (default 100); later tenants are
//     "other" (events without a tenant are "none");
//   - providers keep the first [MaxProviders] distinct values, run reasons
//     bichat's own reasons and codes plus [MaxRunReasons] more;
//   - tool error codes, SQL error kinds, sandbox outcomes, context block
//     kinds, budget scopes, quota scopes and limits, and policy decisions
//     are closed sets; unknown values are "other".
//
// # Cost
//
// Handle runs in the publisher's goroutine and is cheap: label children
// are resolved once per label combination and cached in lock-free
// copy-on-write maps, so a steady-state event costs a few map look-ups and
// atomic adds, takes no lock and allocates nothing. Subscribe it directly;
// no [hooks.Async] wrapper is needed.
package prometheus
