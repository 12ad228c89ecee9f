package faults

// What the client puts on the wire over plain HTTP, with the SDK's own
// HTTP client, against the analyticstest mock on 127.0.0.1: connection
// reuse, the headers and gzip, and the redirect rule.

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

// startMock serves api on 127.0.0.1 until the test ends.
func startMock(t *testing.T, api *analyticstest.Server) *analyticstest.Listener {
	t.Helper()
	l, err := api.Start()
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

func TestConnectionsReused(t *testing.T) {
	leakCheck(t)
	// Error responses with a body come first: they are drained and closed,
	// so their connections are reused too.
	body := strings.Repeat("busy ", 2000)
	api := analyticstest.New().Script(
		analyticstest.Answer{Status: 503, Body: body},
		analyticstest.Answer{Status: 500, Body: body},
		analyticstest.Answer{Status: 400, Body: body},
	)
	l := startMock(t, api)
	e := newEnv(t, l.URL, nil, analytics.WithFlushAt(50), analytics.WithMaxConcurrentRequests(2))
	e.enqueue(tracks("m", 2000)...)
	e.close()
	assert.LessOrEqual(t, l.Conns(), int64(2), "TCP connections for %d requests, want at most MaxConcurrentRequests", len(api.Requests()))
	assert.GreaterOrEqual(t, len(api.Requests()), 42, "requests, want at least 40 batches and the retries")
	ok, failed := e.out.Calls()
	assert.Equal(t, 1950, ok, "delivered")
	assert.Equal(t, 50, failed, "failed: the batch answered 400")
}

func TestHeadersOnTheWire(t *testing.T) {
	leakCheck(t)
	for _, gzipOn := range []bool{true, false} {
		api := analyticstest.New()
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
		e := newEnv(t, srv.URL, nil, analytics.WithGzip(gzipOn))
		e.enqueue(tracks("m", 1)...)
		e.close()
		srv.Close()
		reqs := api.Requests()
		require.Len(t, reqs, 1, "gzip %v: requests", gzipOn)
		assert.Len(t, reqs[0].Events, 1, "gzip %v: events", gzipOn)
		assert.NoError(t, reqs[0].Err, "gzip %v: the request as the API read it", gzipOn)
		h := reqs[0].Header
		wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testWriteKey+":"))
		assert.Equal(t, wantAuth, h.Get("Authorization"), "gzip %v", gzipOn)
		assert.Equal(t, "application/json", h.Get("Content-Type"), "gzip %v", gzipOn)
		assert.Equal(t, "analytics-go/"+analytics.Version, h.Get("User-Agent"), "gzip %v", gzipOn)
		assert.Empty(t, h.Get("X-Retry-Count"), "gzip %v: a first attempt", gzipOn)
		assert.Equal(t, gzipOn, h.Get("Content-Encoding") == "gzip", "gzip %v: Content-Encoding %q", gzipOn, h.Get("Content-Encoding"))
		mu.Lock()
		gzipped := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b
		mu.Unlock()
		assert.Equal(t, gzipOn, gzipped, "gzip %v: the body on the wire is gzipped", gzipOn)
		assert.Empty(t, h.Get("Idempotency-Key"), "gzip %v", gzipOn)
		assert.Empty(t, h.Get("X-Idempotency-Key"), "gzip %v", gzipOn)
	}
}

// redirectServer answers /v1/batch with a redirect of the given status to
// /moved/v1/batch, which answers 200 to anything, and lists the requests
// by method, path, Content-Encoding and whether they had a body.
func redirectServer(t *testing.T, status int) (*httptest.Server, func() []string) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		body := "nobody"
		if len(b) > 0 {
			body = "body"
		}
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Content-Encoding")+" "+body)
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

// sendOne sends one event to endpoint with a fresh client on hc (nil: the
// SDK's own) and returns the errors of its Failure callbacks, after
// checking it got exactly one callback.
func sendOne(t *testing.T, endpoint string, hc *http.Client) []error {
	t.Helper()
	e := newEnv(t, endpoint, hc)
	msgs := tracks("one", 1)
	e.enqueue(msgs...)
	e.close()
	_, failed := e.out.Split(t, ids(msgs))
	var errs []error
	for _, err := range failed {
		errs = append(errs, err)
	}
	return errs
}

// A 301, 302 or 303 is a failure with ErrRedirect, not followed; a 307 or
// 308 is followed, the body sent again; a user's client that follows a 301
// into a GET answered 200 still fails the batch.
func TestRedirectRule(t *testing.T) {
	leakCheck(t)
	for _, status := range []int{301, 302, 303} {
		srv, seen := redirectServer(t, status)
		f := sendOne(t, srv.URL, nil)
		require.Len(t, f, 1, "%d: failures", status)
		assert.ErrorIs(t, f[0], analytics.ErrRedirect, "%d", status)
		var he *analytics.HTTPError
		require.ErrorAs(t, f[0], &he, "%d", status)
		assert.True(t, strings.HasSuffix(he.Location, "/moved/v1/batch"), "%d: Location %q", status, he.Location)
		assert.Len(t, seen(), 1, "%d: requests, want the POST alone (not followed)", status)
	}
	for _, status := range []int{307, 308} {
		srv, seen := redirectServer(t, status)
		f := sendOne(t, srv.URL, nil)
		assert.Empty(t, f, "%d: failed, want it followed and delivered", status)
		want := []string{"POST /v1/batch gzip body", "POST /moved/v1/batch gzip body"}
		assert.Equal(t, want, seen(), "%d: requests", status)
	}
	// A user-supplied client that follows a 301 into a GET that answers
	// 200: still a failure, never a success.
	srv, seen := redirectServer(t, 301)
	userClient := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(userClient.CloseIdleConnections)
	f := sendOne(t, srv.URL, userClient)
	require.Len(t, f, 1, "followed 301: failures")
	assert.ErrorIs(t, f[0], analytics.ErrRedirect, "followed 301")
	var he *analytics.HTTPError
	require.ErrorAs(t, f[0], &he, "followed 301")
	assert.Equal(t, "GET", he.Method, "followed 301")
	assert.Equal(t, 200, he.StatusCode, "followed 301: what the GET was answered")
	got := seen()
	require.Len(t, got, 2, "requests")
	assert.True(t, strings.HasPrefix(got[1], "GET /moved/v1/batch"), "the second request %q", got[1])
}
