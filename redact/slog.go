package redact

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
)

// Handler returns a slog.Handler that scrubs each record before h sees
// it: the message, string attributes, errors (replaced by Error's
// result, so handlers that inspect them with errors.As still can),
// []byte and json.RawMessage values, fmt.Stringers, other values whose
// printed form (%+v) holds a secret (replaced by the scrubbed printed
// form), LogValuers (resolved first) and groups at any depth, and the
// attributes given to WithAttrs. Keys and group names are kept. A record
// without secrets reaches h unchanged. On a nil Redactor, Handler returns
// h itself.
//
//	logger := slog.New(redact.Default().Handler(slog.NewJSONHandler(os.Stderr, nil)))
func (r *Redactor) Handler(h slog.Handler) slog.Handler {
	if r == nil {
		return h
	}
	return &handler{r: r, h: h}
}

type handler struct {
	r *Redactor
	h slog.Handler
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool { return h.h.Enabled(ctx, l) }

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	msg := h.r.String(rec.Message)
	dirty := msg != rec.Message
	if !dirty {
		rec.Attrs(func(a slog.Attr) bool {
			_, changed := h.r.attr(a)
			dirty = changed
			return !changed
		})
	}
	if !dirty {
		return h.h.Handle(ctx, rec)
	}
	nr := slog.NewRecord(rec.Time, rec.Level, msg, rec.PC)
	rec.Attrs(func(a slog.Attr) bool {
		na, _ := h.r.attr(a)
		nr.AddAttrs(na)
		return true
	})
	return h.h.Handle(ctx, nr)
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	out := make([]slog.Attr, len(as))
	for i, a := range as {
		out[i], _ = h.r.attr(a)
	}
	return &handler{r: h.r, h: h.h.WithAttrs(out)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	return &handler{r: h.r, h: h.h.WithGroup(name)}
}

// attr returns a with its value scrubbed, and whether anything changed.
func (r *Redactor) attr(a slog.Attr) (slog.Attr, bool) {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		if ns := r.String(s); ns != s {
			return slog.String(a.Key, ns), true
		}
	case slog.KindGroup:
		as := v.Group()
		var out []slog.Attr
		for i, g := range as {
			ng, changed := r.attr(g)
			if changed && out == nil {
				out = append([]slog.Attr(nil), as...)
			}
			if out != nil {
				out[i] = ng
			}
		}
		if out != nil {
			return slog.Attr{Key: a.Key, Value: slog.GroupValue(out...)}, true
		}
	case slog.KindAny:
		if nv, changed := r.anyValue(v.Any()); changed {
			return slog.Attr{Key: a.Key, Value: nv}, true
		}
	}
	if a.Value.Kind() == slog.KindLogValuer {
		// Keep the resolved value: resolving again could differ.
		return slog.Attr{Key: a.Key, Value: v}, false
	}
	return a, false
}

// anyValue scrubs a slog.KindAny value.
func (r *Redactor) anyValue(x any) (slog.Value, bool) {
	switch x := x.(type) {
	case nil:
		return slog.Value{}, false
	case error:
		msg := x.Error()
		if s := r.String(msg); s != msg {
			return slog.AnyValue(&redactedError{msg: s, err: x}), true
		}
		return slog.Value{}, false
	case json.RawMessage:
		if nb := r.JSON(x); len(nb) != len(x) || string(nb) != string(x) {
			return slog.AnyValue(nb), true
		}
		return slog.Value{}, false
	case []byte:
		if nb := r.Bytes(x); len(nb) != len(x) || string(nb) != string(x) {
			return slog.AnyValue(nb), true
		}
		return slog.Value{}, false
	case fmt.Stringer:
		s := x.String()
		if ns := r.String(s); ns != s {
			return slog.StringValue(ns), true
		}
		return slog.Value{}, false
	}
	s := fmt.Sprintf("%+v", x)
	if ns := r.String(s); ns != s {
		return slog.StringValue(ns), true
	}
	// The JSON handler marshals values instead of printing them.
	if b, err := json.Marshal(x); err == nil {
		if nb := r.JSON(b); string(nb) != string(b) {
			return slog.AnyValue(json.RawMessage(nb)), true
		}
	}
	return slog.Value{}, false
}
