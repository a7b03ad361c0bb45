package otel

// OpenCalls returns how many tool calls of run id the tracer holds open,
// and whether it tracks the run at all.
func OpenCalls(t *Tracer, id string) (int, bool) {
	r := t.lookup(id)
	if r == nil {
		return 0, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.tools), true
}
