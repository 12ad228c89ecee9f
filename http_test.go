package analytics

// Tests over real sockets on 127.0.0.1: connection reuse, gzip on the wire,
// the redirect rule, timeouts, dropped and refused connections.
//
// A testing/synctest bubble lets fake time pass only while every goroutine
// in it waits on something of the bubble's own, and a goroutine waiting on
// a socket does not: with a connection open (an idle one waits for the
// server in net/http's transport), no wait would ever end. So the tests
// that keep connections open retry at once (noWaits), and only the
// per-attempt timeout is real time; the refused port, where no connection
// ever opens, runs in a bubble with the default waits.

import (
	"encoding/base64"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

func startAPI(t *testing.T, api *analyticstest.Server) *analyticstest.Listener {
	t.Helper()
	l, err := api.Start()
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// noWaits makes every retry immediate, on both paths: no backoff, and a
// Retry-After capped to a nanosecond.
func noWaits() Option {
	return func(c *config) {
		WithBackoffBase(0)(c)
		WithRateLimitRetryAfterCap(time.Nanosecond)(c)
	}
}

// newSocketEnv is newEnv over a real socket with the SDK's own HTTP client.
func newSocketEnv(t *testing.T, api *analyticstest.Server, opts ...Option) (*env, *analyticstest.Listener) {
	t.Helper()
	l := startAPI(t, api)
	e := &env{t: t, api: api, out: &outcomes{}, logs: &logBuffer{}}
	base := []Option{
		WithEndpoint(l.URL),
		WithCallback(e.out),
		WithLogger(slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	c, err := New(testWriteKey, append(base, opts...)...)
	require.NoError(t, err)
	e.client = c
	return e, l
}

func TestRealSocketsReuseConnections(t *testing.T) {
	// Error responses with a body come first: they are drained and closed,
	// so their connections are reused too.
	body := strings.Repeat("busy ", 2000)
	api := newAPI().Script(
		analyticstest.Answer{Status: 503, Body: body},
		analyticstest.Answer{Status: 500, Body: body},
		analyticstest.Answer{Status: 400, Body: body},
	)
	e, l := newSocketEnv(t, api, WithFlushAt(50), WithMaxConcurrentRequests(2), noWaits())
	msgs := tracks("m", 2000)
	e.enqueue(msgs...)
	e.close()
	assert.LessOrEqual(t, l.Conns(), int64(2), "TCP connections for %d requests, want at most MaxConcurrentRequests", len(api.Requests()))
	assert.GreaterOrEqual(t, len(api.Requests()), 42, "requests, want at least 40 batches and the retries")
	ok, failed := e.out.counts()
	assert.Equal(t, 1950, ok, "delivered")
	assert.Equal(t, 50, failed, "failed: the batch answered 400")
}

func TestHeadersOnTheWire(t *testing.T) {
	for _, gzipOn := range []bool{true, false} {
		api := newAPI()
		var raw []byte
		var mu sync.Mutex
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			mu.Lock()
			raw = b
			mu.Unlock()
			r.Body = io.NopCloser(strings.NewReader(string(b)))
			api.ServeHTTP(w, r)
		}))
		c, err := New(testWriteKey, WithEndpoint(srv.URL), WithGzip(gzipOn))
		require.NoError(t, err)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		srv.Close()
		reqs := api.Requests()
		require.Len(t, reqs, 1, "gzip %v: requests", gzipOn)
		assert.Len(t, reqs[0].Events, 1, "gzip %v: events", gzipOn)
		assert.NoError(t, reqs[0].Err, "gzip %v: the request as the API read it", gzipOn)
		h := reqs[0].Header
		wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testWriteKey+":"))
		assert.Equal(t, wantAuth, h.Get("Authorization"), "gzip %v", gzipOn)
		assert.Equal(t, "application/json", h.Get("Content-Type"), "gzip %v", gzipOn)
		assert.Equal(t, "analytics-go/"+Version, h.Get("User-Agent"), "gzip %v", gzipOn)
		assert.Empty(t, h.Get("X-Retry-Count"), "gzip %v: a first attempt", gzipOn)
		assert.Equal(t, gzipOn, h.Get("Content-Encoding") == "gzip", "gzip %v: Content-Encoding %q", gzipOn, h.Get("Content-Encoding"))
		gzipped := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b
		assert.Equal(t, gzipOn, gzipped, "gzip %v: the body on the wire is gzipped", gzipOn)
		assert.Empty(t, h.Get("Idempotency-Key"), "gzip %v", gzipOn)
		assert.Empty(t, h.Get("X-Idempotency-Key"), "gzip %v", gzipOn)
	}
}

// redirectServer answers /v1/batch with a redirect of the given status to
// /moved/v1/batch, which answers 200 to anything, and counts requests by
// method and path.
func redirectServer(t *testing.T, status int) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Encoding")+" "+boolString(len(b) > 0))
		mu.Unlock()
		if r.URL.Path == "/v1/batch" {
			http.Redirect(w, r, "/moved/v1/batch", status)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	t.Cleanup(srv.Close)
	return srv, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

func boolString(b bool) string {
	if b {
		return "body"
	}
	return "nobody"
}

// sendOne sends one event to endpoint with a fresh client and returns the
// callbacks it got.
func sendOne(t *testing.T, endpoint string, opts ...Option) *outcomes {
	t.Helper()
	out := &outcomes{}
	c, err := New(testWriteKey, append([]Option{WithEndpoint(endpoint), WithCallback(out)}, opts...)...)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	require.NoError(t, c.Close())
	return out
}

func TestRedirectRuleOverRealSockets(t *testing.T) {
	for _, status := range []int{301, 302, 303} {
		srv, seen := redirectServer(t, status)
		f := sendOne(t, srv.URL).failed()
		require.Len(t, f, 1, "%d: failures", status)
		assert.ErrorIs(t, f[0].err, ErrRedirect, "%d", status)
		var he *HTTPError
		require.ErrorAs(t, f[0].err, &he, "%d", status)
		assert.True(t, strings.HasSuffix(he.Location, "/moved/v1/batch"), "%d: Location %q", status, he.Location)
		assert.Len(t, seen(), 1, "%d: requests, want the POST alone (not followed)", status)
	}
	for _, status := range []int{307, 308} {
		srv, seen := redirectServer(t, status)
		ok, failed := sendOne(t, srv.URL).counts()
		assert.Equal(t, 1, ok, "%d: delivered, want it followed", status)
		assert.Equal(t, 0, failed, "%d: failed", status)
		want := []string{"POST /v1/batch gzip body", "POST /moved/v1/batch gzip body"}
		assert.Equal(t, want, seen(), "%d: requests", status)
	}
	// A user-supplied client that follows a 301 into a GET that answers
	// 200: still a failure, never a success.
	srv, seen := redirectServer(t, 301)
	userClient := &http.Client{Transport: &http.Transport{}}
	defer userClient.CloseIdleConnections()
	f := sendOne(t, srv.URL, WithHTTPClient(userClient)).failed()
	require.Len(t, f, 1, "followed 301: failures")
	assert.ErrorIs(t, f[0].err, ErrRedirect, "followed 301")
	var he *HTTPError
	require.ErrorAs(t, f[0].err, &he, "followed 301")
	assert.Equal(t, "GET", he.Method, "followed 301")
	assert.Equal(t, 200, he.StatusCode, "followed 301: what the GET was answered")
	got := seen()
	require.Len(t, got, 2, "requests")
	assert.True(t, strings.HasPrefix(got[1], "GET /moved/v1/batch"), "the second request %q", got[1])
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	api := newAPI().Script(analyticstest.Answer{Delay: time.Hour})
	recorded := make(chan analyticstest.Request, 16)
	api.OnRequest(func(r analyticstest.Request) { recorded <- r })
	e, _ := newSocketEnv(t, api, WithRequestTimeout(200*time.Millisecond), noWaits())
	msgs := tracks("m", 3)
	e.enqueue(msgs...)
	e.close()
	// The server records the timed-out request once it sees the client
	// give up on it, which may be after Close returns, and after the
	// retry's record: wait for both, and tell them apart by X-Retry-Count.
	byRetryCount := map[string]analyticstest.Request{}
	for range 2 {
		select {
		case r := <-recorded:
			byRetryCount[r.Header.Get("X-Retry-Count")] = r
		case <-time.After(time.Minute):
			require.FailNow(t, "requests missing", "%d of 2 recorded, want the timed-out one and one retry", len(byRetryCount))
		}
	}
	require.Contains(t, byRetryCount, "", "the timed-out first attempt")
	require.Contains(t, byRetryCount, "1", "the retry")
	assert.Equal(t, byRetryCount[""].MessageIDs(), byRetryCount["1"].MessageIDs(), "the retry's messageIds")
	assert.Len(t, api.Requests(), 2, "requests")
	e.assertDeliveredOnce(msgs)
	st := e.client.Stats()
	assert.Equal(t, int64(1), st.TransportErrors.Written, "attempts written then timed out")
	assert.Equal(t, int64(1), st.Retries.Backoff, "retries on the backoff path")
}

func TestDroppedConnectionIsRetried(t *testing.T) {
	api := newAPI().Script(analyticstest.Answer{Drop: true}, analyticstest.Answer{Drop: true})
	e, _ := newSocketEnv(t, api, noWaits())
	msgs := tracks("m", 5)
	e.enqueue(msgs...)
	e.close()
	assert.Len(t, api.Requests(), 3, "requests, want 2 dropped and 1 answered")
	e.assertDeliveredOnce(msgs)
	assert.Equal(t, int64(2), e.client.Stats().TransportErrors.Written, "the dropped requests had been written")
}

// No connection ever opens, so this one runs in a bubble, with the default
// backoff waits in fake time.
func TestRefusedPortIsRetriedAndReportedNotWritten(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	synctest.Test(t, func(t *testing.T) {
		out := &outcomes{}
		c, err := New(testWriteKey, WithEndpoint("http://"+addr), WithCallback(out), WithRetryCount(2))
		require.NoError(t, err)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		f := out.failed()
		require.Len(t, f, 1, "failures")
		assert.ErrorIs(t, f[0].err, ErrRetriesExhausted)
		var be *BatchError
		require.ErrorAs(t, f[0].err, &be)
		assert.Equal(t, 3, be.Attempts)
		var te *TransportError
		require.ErrorAs(t, f[0].err, &te)
		assert.False(t, te.Written(), "written")
		assert.Equal(t, PhaseNotConnected, te.Phase)
		assert.Contains(t, f[0].err.Error(), "not written", "the error says the request was not written")
		st := c.Stats()
		assert.Equal(t, int64(3), st.TransportErrors.NotWritten, "attempts not written")
		assert.Equal(t, int64(1), st.Failed.RetriesExhausted, "events failed with retries exhausted")
	})
}

func TestWriteKeyNeverInLogsOrErrors(t *testing.T) {
	api := newAPI().Script(
		analyticstest.Status(503), analyticstest.Answer{Drop: true}, analyticstest.RetryAfter(429, "1"),
		analyticstest.Answer{Status: 400, Body: "bad request"},
		analyticstest.Answer{Status: 301, Header: http.Header{"Location": {"http://elsewhere.test/"}}},
	)
	e, _ := newSocketEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1), WithRetryCount(1), noWaits())
	e.enqueue(tracks("m", 4)...)
	e.close()
	secrets := []string{testWriteKey, base64.StdEncoding.EncodeToString([]byte(testWriteKey + ":"))}
	var texts []string
	for _, f := range e.out.failed() {
		texts = append(texts, f.err.Error())
	}
	require.NotEmpty(t, texts, "the scenario's failures to inspect")
	texts = append(texts, e.logs.String())
	require.Contains(t, e.logs.String(), "will retry", "the scenario's retries in the log")
	for _, text := range texts {
		for _, s := range secrets {
			assert.NotContains(t, text, s, "the write key")
		}
	}
}

// A user's client with net/http's default redirect policy would follow a
// 307 from https to plain http with the Authorization header: New guards
// every client it is given.
func TestUserClientNeverFollowsADowngrade(t *testing.T) {
	var plainHits atomic.Int64
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { plainHits.Add(1) }))
	defer plain.Close()
	secure := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+"/v1/batch", http.StatusTemporaryRedirect)
	}))
	defer secure.Close()
	userClient := secure.Client() // trusts the test CA; no CheckRedirect: follows redirects
	defer userClient.CloseIdleConnections()
	f := sendOne(t, secure.URL, WithHTTPClient(userClient)).failed()
	require.Len(t, f, 1, "failures")
	assert.ErrorIs(t, f[0].err, ErrRedirect)
	assert.Zero(t, plainHits.Load(), "requests to the plain-http server")
}
