package analytics

import (
	"context"
	"fmt"
	"log/slog"
)

// newLogger returns the logger the SDK logs to: the user's (WithLogger),
// wrapped so that no log call of the SDK can panic, or nothing.
func newLogger(user *slog.Logger) *slog.Logger {
	if user == nil {
		return slog.New(slog.DiscardHandler)
	}
	return slog.New(safeHandler{user.Handler()})
}

// safeHandler passes records to the user's handler and drops a record that
// makes it panic. A log call sits between accounting steps (releasing an
// event's budget, calling back) that must each happen once; a handler that
// panics, such as one writing to a testing.T whose test has ended, must not
// be able to cut them short or crash the program. The panic is not logged:
// logging it would go through the same handler.
type safeHandler struct{ next slog.Handler }

func (h safeHandler) Enabled(ctx context.Context, level slog.Level) (enabled bool) {
	defer func() {
		if recover() != nil {
			enabled = false
		}
	}()
	return h.next.Enabled(ctx, level)
}

func (h safeHandler) Handle(ctx context.Context, r slog.Record) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("analytics: log handler panicked: %v", p)
		}
	}()
	return h.next.Handle(ctx, r)
}

// WithAttrs and WithGroup return a handler that drops everything when the
// user's panics: there is no handler left to pass records to.
func (h safeHandler) WithAttrs(attrs []slog.Attr) (next slog.Handler) {
	defer func() {
		if recover() != nil {
			next = slog.DiscardHandler
		}
	}()
	return safeHandler{h.next.WithAttrs(attrs)}
}

func (h safeHandler) WithGroup(name string) (next slog.Handler) {
	defer func() {
		if recover() != nil {
			next = slog.DiscardHandler
		}
	}()
	return safeHandler{h.next.WithGroup(name)}
}
