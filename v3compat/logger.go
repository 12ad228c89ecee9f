package analytics

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"unicode"

	root "github.com/dualpath/analytics-go"
)

// Logger receives the client's logs, as in v3. Implementations must be safe
// for concurrent use: the client logs from its upload goroutines.
type Logger interface {
	// Logf logs a regular message.
	Logf(format string, args ...any)
	// Errorf logs a failure: an upload attempt that failed, events not
	// delivered.
	Errorf(format string, args ...any)
}

// StdLogger returns a Logger that writes each message to logger, prefixed
// with its level: "INFO: " for Logf, "ERROR: " for Errorf.
func StdLogger(logger *log.Logger) Logger { return stdLogger{logger} }

type stdLogger struct{ l *log.Logger }

func (s stdLogger) Logf(format string, args ...any) {
	s.l.Print("INFO: " + fmt.Sprintf(format, args...))
}

func (s stdLogger) Errorf(format string, args ...any) {
	s.l.Print("ERROR: " + fmt.Sprintf(format, args...))
}

// verbose logs each message Enqueue queued, as v3 did with Verbose.
type verbose struct {
	logger    Logger
	batchSize int
}

// verboseLogger returns the verbose logger of config, or nil when
// config.Verbose is off.
func verboseLogger(config Config, logger Logger) *verbose {
	if !config.Verbose {
		return nil
	}
	return &verbose{logger: logger, batchSize: config.batchSize()}
}

// queued logs m, just queued in rc, with v3's text: "buffer (n/size)
// <message>", n being the messages queued before it and size the batch
// size in effect. It does nothing on a nil v.
func (v *verbose) queued(rc *root.Client, m root.Message) {
	if v == nil {
		return
	}
	before := max(rc.Stats().QueueDepth-1, 0)
	v.logger.Logf("buffer (%d/%d) %v", before, v.batchSize, v3Message(m))
}

// defaultLogger is Config.Logger's default: standard error, as in v3.
func defaultLogger() Logger {
	return StdLogger(log.New(os.Stderr, "analytics ", log.LstdFlags))
}

// logHandler is a slog.Handler that writes the root client's records to a
// v3 Logger, one line per record: the message, then key=value pairs.
// Warnings and errors go to Errorf, the rest to Logf; debug records only
// when verbose.
type logHandler struct {
	logger  Logger
	verbose bool
	group   string // the prefix of keys: the open groups, each followed by "."
	attrs   string // the attributes of WithAttrs, formatted
}

func (h *logHandler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= slog.LevelInfo || h.verbose
}

func (h *logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		appendAttr(&b, h.group, a)
		return true
	})
	if r.Level >= slog.LevelWarn {
		h.logger.Errorf("%s", b.String())
	} else {
		h.logger.Logf("%s", b.String())
	}
	return nil
}

func (h *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	for _, a := range attrs {
		appendAttr(&b, h.group, a)
	}
	h2 := *h
	h2.attrs += b.String()
	return &h2
}

func (h *logHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	h2 := *h
	h2.group += name + "."
	return &h2
}

// appendAttr writes " key=value", keys prefixed by their groups, as slog's
// TextHandler does; an empty attribute writes nothing.
func appendAttr(b *strings.Builder, group string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() == slog.KindGroup {
		if a.Key != "" {
			group += a.Key + "."
		}
		for _, ga := range a.Value.Group() {
			appendAttr(b, group, ga)
		}
		return
	}
	b.WriteByte(' ')
	b.WriteString(quoted(group + a.Key))
	b.WriteByte('=')
	b.WriteString(quoted(a.Value.String()))
}

// quoted returns s, quoted when it is empty or holds a space, a quote, an
// equals sign or a character that is not printable.
func quoted(s string) string {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return r == ' ' || r == '"' || r == '=' || !unicode.IsPrint(r)
	}) {
		return strconv.Quote(s)
	}
	return s
}
