package analytics

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/internal/jitter"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

func TestMain(m *testing.M) {
	if raw := os.Getenv(crashChildEnv); raw != "" {
		os.Exit(runCrashChild(raw)) // a child of the spool crash tests
	}
	goleak.VerifyTestMain(m)
}

const testWriteKey = "wk_SECRET_do_not_log"

// outcomes records every callback by messageId (testsupport.Outcomes).
type outcomes = testsupport.Outcomes[Message]

// newOutcomes returns an empty callback recorder.
func newOutcomes() *outcomes { return testsupport.NewOutcomes(MessageID) }

// logBuffer collects everything the client logs.
type logBuffer = testsupport.Buffer

// env is a client wired to an in-memory tracking API, with a callback
// recorder and a captured log.
type env struct {
	t      *testing.T
	api    *analyticstest.Server
	client *Client
	out    *outcomes
	logs   *logBuffer
}

// newEnv builds a client on api (in memory). Options given override the
// test defaults, which keep the SDK's defaults but add exact backoff waits.
func newEnv(t *testing.T, api *analyticstest.Server, opts ...Option) *env {
	t.Helper()
	e := &env{t: t, api: api, out: newOutcomes(), logs: &logBuffer{}}
	base := []Option{
		WithEndpoint("http://tracking.test"),
		WithHTTPClient(api.Client(CheckRedirect)),
		WithCallback(e.out),
		WithLogger(slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	c, err := New(testWriteKey, append(base, opts...)...)
	require.NoError(t, err, "New")
	e.client = c
	return e
}

func (e *env) enqueue(msgs ...Message) {
	e.t.Helper()
	for _, m := range msgs {
		require.NoError(e.t, e.client.Enqueue(m), "Enqueue(%#v)", m)
	}
}

func (e *env) close() {
	e.t.Helper()
	require.NoError(e.t, e.client.Close(), "Close")
}

func (e *env) flush() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	require.NoError(e.t, e.client.Flush(ctx), "Flush")
}

// tracks returns n valid Track events with messageIds prefix0..prefix(n-1).
func tracks(prefix string, n int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i] = Track{MessageId: fmt.Sprintf("%s%d", prefix, i), UserId: "u", Event: "E"}
	}
	return msgs
}

// assertDeliveredOnce checks that every message was received in a 2xx
// request exactly once and got one Success callback.
func (e *env) assertDeliveredOnce(msgs []Message) {
	e.t.Helper()
	got := e.api.Delivered()
	successes, failures := e.out.ByID()
	for _, m := range msgs {
		id := MessageID(m)
		assert.Equal(e.t, 1, got[id], "times messageId %s was delivered", id)
		assert.Equal(e.t, 1, successes[id], "Success callbacks for messageId %s", id)
		assert.Zero(e.t, failures[id], "Failure callbacks for messageId %s", id)
	}
}

func newAPI() *analyticstest.Server { return analyticstest.New() }

// withExactBackoff removes the jitter: backoff retry n waits exactly
// BackoffBase·2^(n−1)/2 (250ms, 500ms, 1s, ... with the defaults).
func withExactBackoff() Option {
	return func(c *config) { jitter.Set(&c.upload.Policy, func(time.Duration) time.Duration { return 0 }) }
}
