package testsupport

import (
	"context"
	"encoding/base64"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
)

// LogStore keeps every log record its Handler is given, rendered with
// every attribute, and every error in it in full (RenderError): what a
// test searches for a secret. Its methods are safe for concurrent use.
type LogStore struct {
	mu      sync.Mutex
	records []LogRecord
}

// LogRecord is one record as the store keeps it.
type LogRecord struct {
	Level slog.Level
	Msg   string // the record's message
	Text  string // level, message and every attribute, rendered
}

func (s *LogStore) add(r LogRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
}

// All returns the records so far, in the order they came.
func (s *LogStore) All() []LogRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// Count returns how many records have msg as their message.
func (s *LogStore) Count(msg string) int {
	n := 0
	for _, r := range s.All() {
		if r.Msg == msg {
			n++
		}
	}
	return n
}

// Handler returns a slog.Handler that enables every level and keeps every
// record in s.
func (s *LogStore) Handler() slog.Handler { return logHandler{store: s} }

type logHandler struct {
	store  *LogStore
	prefix string // from WithAttrs and WithGroup
}

func (h logHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h logHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s msg=%q", r.Level, h.prefix, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, "", a)
		return true
	})
	h.store.add(LogRecord{Level: r.Level, Msg: r.Message, Text: b.String()})
	return nil
}

func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		writeAttr(&b, "", a)
	}
	return logHandler{store: h.store, prefix: b.String()}
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return logHandler{store: h.store, prefix: h.prefix + " group=" + name}
}

func writeAttr(b *strings.Builder, group string, a slog.Attr) {
	v := a.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		for _, ga := range v.Group() {
			writeAttr(b, group+a.Key+".", ga)
		}
		return
	}
	x := v.Any()
	fmt.Fprintf(b, " %s%s=%v (%+v) (%#v)", group, a.Key, x, x, x)
	if err, ok := x.(error); ok {
		b.WriteString(" " + RenderError(err))
	}
}

// RenderError writes out every error in err's tree: Error(), %+v and %#v
// of each, so that a secret in a field that Error() leaves out still shows.
func RenderError(err error) string {
	var b strings.Builder
	var walk func(error)
	walk = func(err error) {
		if err == nil {
			return
		}
		fmt.Fprintf(&b, "[%s | %+v | %#v]", err.Error(), err, err)
		switch u := err.(type) {
		case interface{ Unwrap() error }:
			walk(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, e := range u.Unwrap() {
				walk(e)
			}
		}
	}
	walk(err)
	return b.String()
}

// WriteKeyForms returns the forms a write key takes on the wire and in
// memory: itself, and the Basic credentials of the Authorization header
// (key:, padded and not, and the key alone) base64-encoded. The second is
// the header's value after "Basic ".
func WriteKeyForms(key string) []string {
	return []string{
		key,
		base64.StdEncoding.EncodeToString([]byte(key + ":")),
		base64.StdEncoding.EncodeToString([]byte(key)),
		base64.RawStdEncoding.EncodeToString([]byte(key + ":")),
	}
}
