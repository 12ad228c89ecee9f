package analytics

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
)

// newLogger returns the logger the SDK logs to: the user's (WithLogger), or
// slog.Default() as it is now, wrapped so that no log call of the SDK can
// panic. Failures are never silent by default; a user silences them with
// a logger whose handler discards (SPEC §8).
func newLogger(user *slog.Logger) *slog.Logger { return slog.New(newSafeHandler(user, nil)) }

// newSafeHandler wraps the user's handler (slog.Default()'s for nil) in a
// safeHandler with throttle t, nil for none.
func newSafeHandler(user *slog.Logger, t *throttle) safeHandler {
	if user == nil {
		user = slog.Default()
	}
	return safeHandler{next: user.Handler(), t: t}
}

// How often a throttled logger passes records on: the first
// throttleFirst, then at most one per throttleInterval.
const (
	throttleFirst    = 5
	throttleInterval = 10 * time.Second
)

// throttled is newLogger(user) behind a throttle of its own: it passes
// records on as often as the throttle allows (see throttleFirst), and
// drops the others; a record passed on after some were dropped carries
// "suppressed", how many (SPEC §8). An outage repeats the same record for every attempt and every
// batch: the first few say what is wrong, and one every few seconds says it
// goes on.
func throttled(user *slog.Logger) *slog.Logger {
	return slog.New(newSafeHandler(user, &throttle{every: rate.Sometimes{First: throttleFirst, Interval: throttleInterval}}))
}

// throttle decides which records pass, and counts the others. Handlers
// made by WithAttrs and WithGroup share it.
type throttle struct {
	every      rate.Sometimes // runs what it is given one call at a time
	suppressed atomic.Int64   // records dropped and not yet reported
}

// admit reports whether a record may pass, and if so how many were
// dropped since the last one that passed. A record dropped while another
// passes, at the same time, is reported by the next one.
func (t *throttle) admit() (ok bool, suppressed int) {
	t.every.Do(func() { ok, suppressed = true, int(t.suppressed.Swap(0)) })
	if !ok {
		t.suppressed.Add(1)
	}
	return ok, suppressed
}

// safeHandler passes records to the handler next, as its throttle allows
// when it has one, and drops a record that makes next panic. A log call
// sits between accounting steps (releasing an event's budget, calling
// back) that must each happen once; a handler that panics, such as one
// writing to a testing.T whose test has ended, must not be able to cut
// them short or crash the program (SPEC §8). The panic is not logged:
// logging it would go through the same handler.
type safeHandler struct {
	next slog.Handler
	t    *throttle // nil: every record passes
}

func (h safeHandler) Enabled(ctx context.Context, level slog.Level) (enabled bool) {
	defer func() {
		if recover() != nil {
			enabled = false
		}
	}()
	return h.next.Enabled(ctx, level)
}

func (h safeHandler) Handle(ctx context.Context, r slog.Record) (err error) {
	if h.t != nil {
		ok, suppressed := h.t.admit()
		if !ok {
			return nil
		}
		if suppressed > 0 {
			r = r.Clone()
			r.AddAttrs(slog.Int("suppressed", suppressed))
		}
	}
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("analytics: log handler panicked: %v", p)
		}
	}()
	return h.next.Handle(ctx, r)
}

// WithAttrs and WithGroup return a handler that shares h's throttle, and
// drops everything when next panics: there is no handler left to pass
// records to.
func (h safeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.derived(func() slog.Handler { return h.next.WithAttrs(attrs) })
}

func (h safeHandler) WithGroup(name string) slog.Handler {
	return h.derived(func() slog.Handler { return h.next.WithGroup(name) })
}

// derived wraps the handler derive makes from next, with h's throttle, or
// returns slog.DiscardHandler when derive panics.
func (h safeHandler) derived(derive func() slog.Handler) (next slog.Handler) {
	defer func() {
		if recover() != nil {
			next = slog.DiscardHandler
		}
	}()
	return safeHandler{derive(), h.t}
}
