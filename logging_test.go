package analytics

import (
	"bytes"
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// brokenHandler panics in every method.
type brokenHandler struct{}

func (brokenHandler) Enabled(context.Context, slog.Level) bool  { panic("Enabled") }
func (brokenHandler) Handle(context.Context, slog.Record) error { panic("Handle") }
func (brokenHandler) WithAttrs([]slog.Attr) slog.Handler        { panic("WithAttrs") }
func (brokenHandler) WithGroup(string) slog.Handler             { panic("WithGroup") }

// handleBroken panics in Handle alone.
type handleBroken struct{ slog.Handler }

func (handleBroken) Handle(context.Context, slog.Record) error { panic("Handle") }

func TestLoggerNeverPanics(t *testing.T) {
	for name, h := range map[string]slog.Handler{
		"every method": brokenHandler{},
		"Handle":       handleBroken{slog.NewTextHandler(&bytes.Buffer{}, nil)},
	} {
		t.Run(name, func(t *testing.T) {
			log := newLogger(slog.New(h))
			log.Error("dropped", slog.Int("events", 1))
			log.With("k", "v").WithGroup("g").Warn("dropped")
			assert.Error(t, log.Handler().Handle(context.Background(), slog.Record{}), "Handle of a handler that panics")
			// The throttle in front of it changes nothing.
			throttled := throttled(log)
			for range 2 * throttleFirst {
				throttled.Error("dropped", slog.Int("events", 1))
			}
			throttled.With("k", "v").WithGroup("g").Warn("dropped")
		})
	}
}

func TestLoggerPassesRecordsThrough(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.Info("below the level")
	log.With("client", "c1").WithGroup("upload").Warn("attempt failed", slog.Int("attempt", 2))
	assert.Contains(t, buf.String(), `level=WARN msg="attempt failed" client=c1 upload.attempt=2`, "the record above the level")
	assert.NotContains(t, buf.String(), "below", "the record below the level")
}

// With no logger, records go to slog.Default() as it is when the client's
// logger is made.
func TestLoggerDefaultsToSlogDefault(t *testing.T) {
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	newLogger(nil).Error("to the default", slog.Int("events", 3))
	assert.Contains(t, buf.String(), `level=ERROR msg="to the default" events=3`, "the record in slog.Default()")
}
