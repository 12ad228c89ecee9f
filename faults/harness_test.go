package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	analytics "github.com/dualpath/analytics-go"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testWriteKey is the write key of every client in these tests; the
// security tests look for it, and for its Basic auth form, everywhere.
const testWriteKey = "wk_live_S3CRET_faults_9f8e7d6c"

// leakCheck, called first in a test, checks once the test's cleanups have
// run (its clients and servers closed) that no goroutine is left.
func leakCheck(t *testing.T) {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
}

// env is one SDK client under test and what it reported.
type env struct {
	t      *testing.T
	client *analytics.Client
	out    *outcomes
	logs   *logStore
}

// newEnv starts a client sending to endpoint with hc (nil: the SDK's own
// HTTP client). Backoff waits are a few milliseconds, batches are cut only
// by FlushAt, Flush and Close, and opts come last, so they win. The client
// is closed when the test ends.
func newEnv(t *testing.T, endpoint string, hc *http.Client, opts ...analytics.Option) *env {
	t.Helper()
	e := &env{t: t, out: newOutcomes(), logs: &logStore{}}
	base := []analytics.Option{
		analytics.WithEndpoint(endpoint),
		analytics.WithCallback(e.out),
		analytics.WithLogger(slog.New(captureHandler{store: e.logs})),
		analytics.WithBackoffBase(time.Millisecond),
		analytics.WithBackoffCap(4 * time.Millisecond),
		analytics.WithRequestTimeout(2 * time.Second),
		analytics.WithFlushInterval(time.Hour),
	}
	if hc != nil {
		base = append(base, analytics.WithHTTPClient(hc))
	}
	c, err := analytics.New(testWriteKey, append(base, opts...)...)
	require.NoError(t, err)
	e.client = c
	t.Cleanup(func() { _ = c.Close() })
	return e
}

// enqueue enqueues msgs, each of which must be accepted.
func (e *env) enqueue(msgs ...analytics.Track) {
	e.t.Helper()
	for _, m := range msgs {
		require.NoError(e.t, e.client.Enqueue(m), "Enqueue(%s)", m.MessageId)
	}
}

func (e *env) close() {
	e.t.Helper()
	require.NoError(e.t, e.client.Close(), "Close()")
}

func (e *env) flush() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(e.t, e.client.Flush(ctx), "Flush()")
}

// tracks returns n Track events with messageIds prefix-0 ... prefix-(n-1).
func tracks(prefix string, n int) []analytics.Track {
	msgs := make([]analytics.Track, n)
	for i := range msgs {
		msgs[i] = analytics.Track{
			MessageId:  fmt.Sprintf("%s-%d", prefix, i),
			UserId:     fmt.Sprintf("user-%d", i%7),
			Event:      "Order Completed",
			Properties: analytics.NewProperties().Set("seq", i).Set("plan", "pro"),
		}
	}
	return msgs
}

func ids(msgs []analytics.Track) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = m.MessageId
	}
	return out
}

// messageID is the messageId of a message the SDK handed back; the tests
// send only Track.
func messageID(m analytics.Message) string {
	if t, ok := m.(analytics.Track); ok {
		return t.MessageId
	}
	return fmt.Sprintf("(not a Track: %T)", m)
}

// outcomes is a Callback that records every call by messageId. hook, if
// set, runs after the call is recorded (a test makes it panic).
type outcomes struct {
	mu        sync.Mutex
	successes map[string]int
	failures  map[string][]error
	hook      func(id string, err error)
}

func newOutcomes() *outcomes {
	return &outcomes{successes: map[string]int{}, failures: map[string][]error{}}
}

func (o *outcomes) Success(m analytics.Message) {
	id := messageID(m)
	o.mu.Lock()
	o.successes[id]++
	hook := o.hook
	o.mu.Unlock()
	if hook != nil {
		hook(id, nil)
	}
}

func (o *outcomes) Failure(m analytics.Message, err error) {
	id := messageID(m)
	o.mu.Lock()
	o.failures[id] = append(o.failures[id], err)
	hook := o.hook
	o.mu.Unlock()
	if hook != nil {
		hook(id, err)
	}
}

func (o *outcomes) setHook(f func(id string, err error)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hook = f
}

// calls returns how many callbacks were made, successes and failures.
func (o *outcomes) calls() (ok, failed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.successes {
		ok += n
	}
	for _, errs := range o.failures {
		failed += len(errs)
	}
	return ok, failed
}

// split checks that each of want got exactly one callback and nothing else
// got any, and returns the delivered ids and the failed ones with their
// errors.
func (o *outcomes) split(t *testing.T, want []string) (delivered []string, failed map[string]error) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	failed = map[string]error{}
	wanted := map[string]bool{}
	for _, id := range want {
		wanted[id] = true
		n := o.successes[id] + len(o.failures[id])
		if !assert.Equal(t, 1, n, "event %s: callbacks (%d Success, %d Failure)", id, o.successes[id], len(o.failures[id])) {
			continue
		}
		if o.successes[id] == 1 {
			delivered = append(delivered, id)
		} else {
			failed[id] = o.failures[id][0]
		}
	}
	for id, n := range o.successes {
		assert.True(t, wanted[id], "Success for %s (%d times), an event that was never accepted", id, n)
	}
	for id := range o.failures {
		assert.True(t, wanted[id], "Failure for %s, an event that was never accepted", id)
	}
	return delivered, failed
}

// logStore keeps every log record the SDK writes, rendered with every
// attribute, and every error in it in full (Error, %+v, %#v of each error
// in the tree): what the security test searches for the write key.
type logStore struct {
	mu      sync.Mutex
	records []logRecord
}

type logRecord struct {
	Level slog.Level
	Msg   string
	Text  string
}

func (s *logStore) add(r logRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records = append(s.records, r)
}

func (s *logStore) all() []logRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.records)
}

// count returns how many records have msg as their message.
func (s *logStore) count(msg string) int {
	n := 0
	for _, r := range s.all() {
		if r.Msg == msg {
			n++
		}
	}
	return n
}

// captureHandler is a slog.Handler that enables every level and keeps
// everything.
type captureHandler struct {
	store  *logStore
	prefix string // from WithAttrs and WithGroup
}

func (h captureHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s msg=%q", r.Level, h.prefix, r.Message)
	r.Attrs(func(a slog.Attr) bool {
		writeAttr(&b, "", a)
		return true
	})
	h.store.add(logRecord{Level: r.Level, Msg: r.Message, Text: b.String()})
	return nil
}

func (h captureHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	var b strings.Builder
	b.WriteString(h.prefix)
	for _, a := range attrs {
		writeAttr(&b, "", a)
	}
	return captureHandler{store: h.store, prefix: b.String()}
}

func (h captureHandler) WithGroup(name string) slog.Handler {
	return captureHandler{store: h.store, prefix: h.prefix + " group=" + name}
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
		b.WriteString(" " + renderError(err))
	}
}

// renderError writes out every error in err's tree: Error(), %+v and %#v
// of each, so that a secret in a field that Error() leaves out still shows.
func renderError(err error) string {
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

// batchAttempts returns the requests the server received for the batch of
// exactly these events, in the client's order (see inClientOrder).
func batchAttempts(s *Server, want []string) []Received {
	var out []Received
	for _, r := range s.Received() {
		if slices.Equal(r.IDs, want) {
			out = append(out, r)
		}
	}
	return inClientOrder(out)
}

// inClientOrder sorts the attempts of one batch by X-Retry-Count, the
// client's own numbering (stable, so repeated counts stay in the server's
// order and show). The server's order is not the client's: a request whose
// client gave up (a timeout) may be recorded after the retry that followed
// it, when a loaded machine runs the server's handler late.
func inClientOrder(reqs []Received) []Received {
	slices.SortStableFunc(reqs, func(a, b Received) int { return retryCount(a) - retryCount(b) })
	return reqs
}

// retryCount is r's X-Retry-Count: 0 on a first attempt, which has none,
// and -1 when it is not a number (a check of the header then fails).
func retryCount(r Received) int {
	h := r.Header.Get("X-Retry-Count")
	if h == "" {
		return 0
	}
	n, err := strconv.Atoi(h)
	if err != nil {
		return -1
	}
	return n
}

// checkAttempts checks the requests of one batch: their X-Retry-Count
// headers (an empty string for none), byte-identical bodies but for
// sentAt, the SDK's headers (the same on every attempt), and that only the
// last one was answered 2xx if delivered, none if not.
func checkAttempts(t *testing.T, reqs []Received, retryCounts []string, delivered bool) {
	t.Helper()
	var got []string
	for _, r := range reqs {
		got = append(got, r.Header.Get("X-Retry-Count"))
	}
	require.Equal(t, retryCounts, got, "X-Retry-Count of each request the server saw of the batch")
	for i, r := range reqs {
		assert.NoError(t, r.Err, "request %d: reading the body", i)
		assert.Equal(t, reqs[0].withoutSentAt(), r.withoutSentAt(), "request %d: the body beyond sentAt, against the first attempt's", i)
		h := r.Header
		assert.NotEmpty(t, h.Get("Authorization"), "request %d: Authorization", i)
		assert.Equal(t, reqs[0].Header.Get("Content-Encoding"), h.Get("Content-Encoding"), "request %d: Content-Encoding, against the first attempt's", i)
		assert.Equal(t, "application/json", h.Get("Content-Type"), "request %d", i)
		assert.True(t, strings.HasPrefix(h.Get("User-Agent"), "analytics-go/"), "request %d: User-Agent %q", i, h.Get("User-Agent"))
		assert.Empty(t, h.Get("Idempotency-Key"), "request %d", i)
		assert.Empty(t, h.Get("X-Idempotency-Key"), "request %d", i)
		last := i == len(reqs)-1
		assert.Equal(t, delivered && last, r.OK(), "request %d of %d answered %d (delivered %v)", i+1, len(reqs), r.Status, delivered)
	}
}

// checkDeliveredOnce checks that every id was reported delivered, and
// that the server received each in exactly one 2xx request.
func checkDeliveredOnce(t *testing.T, s *Server, out *outcomes, want []string) {
	t.Helper()
	delivered, failed := out.split(t, want)
	for id, err := range failed {
		assert.NoError(t, err, "event %s failed", id)
	}
	require.Equal(t, len(want), len(delivered), "events delivered")
	got := s.DeliveredIDs()
	for _, id := range want {
		assert.Equal(t, 1, got[id], "event %s: requests answered 2xx that carried it", id)
	}
}

// asBatchError checks err is a *BatchError and returns it.
func asBatchError(t *testing.T, err error) *analytics.BatchError {
	t.Helper()
	var be *analytics.BatchError
	require.ErrorAs(t, err, &be)
	return be
}
