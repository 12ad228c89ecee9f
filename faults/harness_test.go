package faults

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/testsupport"
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
	logs   *testsupport.LogStore // every record, every attribute
}

// newEnv starts a client sending to endpoint with hc (nil: the SDK's own
// HTTP client). Backoff waits are a few milliseconds, batches are cut only
// by FlushAt, Flush and Close, and opts come last, so they win. The client
// is closed when the test ends.
func newEnv(t *testing.T, endpoint string, hc *http.Client, opts ...analytics.Option) *env {
	t.Helper()
	e := &env{t: t, out: testsupport.NewOutcomes(messageID), logs: &testsupport.LogStore{}}
	base := []analytics.Option{
		analytics.WithEndpoint(endpoint),
		analytics.WithCallback(e.out),
		analytics.WithLogger(slog.New(e.logs.Handler())),
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
	done := make(chan error, 1)
	go func() { done <- e.client.Close() }()
	select {
	case err := <-done:
		require.NoError(e.t, err, "Close()")
	case <-time.After(stuckClose):
		// These tests' batches end in milliseconds: a Close still waiting
		// now is stuck on something, and the stacks say what, before it
		// gives up at its own timeout.
		buf := make([]byte, 4<<20)
		e.t.Logf("Close still waiting after %v; every goroutine:\n%s", stuckClose, buf[:runtime.Stack(buf, true)])
		require.NoError(e.t, <-done, "Close()")
	}
}

// stuckClose is how long env.close waits before it logs every goroutine's
// stack: well past any Close these tests make on a loaded machine, short
// of the 30 s close timeout.
const stuckClose = 20 * time.Second

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

// outcomes records every callback by messageId.
type outcomes = testsupport.Outcomes[analytics.Message]

// batchAttempts returns the requests the server received for the batch of
// exactly these events, in the client's order (see inClientOrder).
func batchAttempts(s *Server, want []string) []Received {
	var out []Received
	for _, r := range s.Received() {
		if slices.Equal(r.MessageIDs(), want) {
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
	delivered, failed := out.Split(t, want)
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
