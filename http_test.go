package analytics

// Tests over real sockets on 127.0.0.1: connection reuse, gzip on the wire,
// the redirect rule, timeouts, dropped and refused connections. Backoff
// waits run on a fake clock; only the per-attempt timeout is real time.

import (
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
	"github.com/dualpath/analytics-go/internal/fakeclock"
)

func startAPI(t *testing.T, api *mockapi.Server) *mockapi.Listener {
	t.Helper()
	l, err := api.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newFakeClock() *fakeclock.Clock { return fakeclock.New(time.Now()) }

// newSocketEnv is newEnv over a real socket with the SDK's own HTTP client.
func newSocketEnv(t *testing.T, api *mockapi.Server, opts ...Option) (*env, *mockapi.Listener) {
	t.Helper()
	l := startAPI(t, api)
	e := &env{t: t, api: api, out: &outcomes{}, logs: &logBuffer{}}
	base := []Option{
		WithEndpoint(l.URL),
		WithCallback(e.out),
		WithLogger(slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))),
	}
	c, err := New(testWriteKey, append(base, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	e.client = c
	return e, l
}

func TestRealSocketsReuseConnections(t *testing.T) {
	// Error responses with a body come first: they are drained and closed,
	// so their connections are reused too.
	body := strings.Repeat("busy ", 2000)
	api := newAPI().Script(
		mockapi.Answer{Status: 503, Body: body},
		mockapi.Answer{Status: 500, Body: body},
		mockapi.Answer{Status: 400, Body: body},
	)
	e, l := newSocketEnv(t, api, WithFlushAt(50), WithMaxConcurrentRequests(2), withClock(newFakeClock()))
	msgs := tracks("m", 2000)
	e.enqueue(msgs...)
	e.close()
	if n := l.Conns(); n > 2 {
		t.Fatalf("%d TCP connections for %d requests, want at most MaxConcurrentRequests (2)", n, len(api.Requests()))
	}
	if n := len(api.Requests()); n < 42 {
		t.Fatalf("%d requests, want at least 40 batches and the retries", n)
	}
	ok, failed := e.out.counts()
	if ok != 1950 || failed != 50 {
		t.Fatalf("%d delivered, %d failed; want 1950 and the 50 of the batch answered 400", ok, failed)
	}
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
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Enqueue(Track{UserId: "u", Event: "E"}); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		srv.Close()
		reqs := api.Requests()
		if len(reqs) != 1 || len(reqs[0].Events) != 1 || reqs[0].Err != nil {
			t.Fatalf("gzip %v: requests %+v", gzipOn, reqs)
		}
		h := reqs[0].Header
		wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte(testWriteKey+":"))
		if h.Get("Authorization") != wantAuth || h.Get("Content-Type") != "application/json" ||
			h.Get("User-Agent") != "analytics-go/"+Version || h.Get("X-Retry-Count") != "" {
			t.Errorf("gzip %v: headers %v", gzipOn, h)
		}
		if gzipOn != (h.Get("Content-Encoding") == "gzip") {
			t.Errorf("gzip %v: Content-Encoding %q", gzipOn, h.Get("Content-Encoding"))
		}
		if gzipped := len(raw) > 2 && raw[0] == 0x1f && raw[1] == 0x8b; gzipped != gzipOn {
			t.Errorf("gzip %v: body on the wire gzipped = %v", gzipOn, gzipped)
		}
		if h.Get("Idempotency-Key") != "" || h.Get("X-Idempotency-Key") != "" {
			t.Errorf("an idempotency key was sent: %v", h)
		}
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
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Enqueue(Track{UserId: "u", Event: "E"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestRedirectRuleOverRealSockets(t *testing.T) {
	for _, status := range []int{301, 302, 303} {
		srv, seen := redirectServer(t, status)
		f := sendOne(t, srv.URL).failed()
		var he *HTTPError
		if len(f) != 1 || !errors.Is(f[0].err, ErrRedirect) || !errors.As(f[0].err, &he) || !strings.HasSuffix(he.Location, "/moved/v1/batch") {
			t.Fatalf("%d: failures %+v, want ErrRedirect with the Location", status, f)
		}
		if got := seen(); len(got) != 1 {
			t.Fatalf("%d: requests %v, want the POST alone (not followed)", status, got)
		}
	}
	for _, status := range []int{307, 308} {
		srv, seen := redirectServer(t, status)
		if ok, failed := sendOne(t, srv.URL).counts(); ok != 1 || failed != 0 {
			t.Fatalf("%d: %d delivered, %d failed; want it followed and delivered", status, ok, failed)
		}
		want := []string{"POST /v1/batch gzip body", "POST /moved/v1/batch gzip body"}
		if got := seen(); strings.Join(got, "|") != strings.Join(want, "|") {
			t.Fatalf("%d: requests %v, want %v", status, got, want)
		}
	}
	// A user-supplied client that follows a 301 into a GET that answers
	// 200: still a failure, never a success.
	srv, seen := redirectServer(t, 301)
	userClient := &http.Client{Transport: &http.Transport{}}
	defer userClient.CloseIdleConnections()
	f := sendOne(t, srv.URL, WithHTTPClient(userClient)).failed()
	var he *HTTPError
	if len(f) != 1 || !errors.Is(f[0].err, ErrRedirect) || !errors.As(f[0].err, &he) || he.Method != "GET" || he.StatusCode != 200 {
		t.Fatalf("followed 301: failures %+v, want ErrRedirect for the GET answered 200", f)
	}
	if got := seen(); len(got) != 2 || !strings.HasPrefix(got[1], "GET /moved/v1/batch") {
		t.Fatalf("requests %v", got)
	}
}

func TestPerAttemptTimeoutIsRetried(t *testing.T) {
	api := newAPI().Script(mockapi.Answer{Delay: time.Hour})
	e, _ := newSocketEnv(t, api, WithRequestTimeout(200*time.Millisecond), withClock(newFakeClock()))
	msgs := tracks("m", 3)
	e.enqueue(msgs...)
	e.close()
	reqs := api.Requests()
	if len(reqs) != 2 || reqs[1].Header.Get("X-Retry-Count") != "1" {
		t.Fatalf("requests %+v, want the timed-out one and one retry", reqs)
	}
	if strings.Join(reqs[0].MessageIDs(), ",") != strings.Join(reqs[1].MessageIDs(), ",") {
		t.Fatal("the retry carried other messageIds")
	}
	e.assertDeliveredOnce(msgs)
	if st := e.client.Stats(); st.TransportErrors.Written != 1 || st.Retries.Backoff != 1 {
		t.Fatalf("stats %+v: want one written-then-timed-out attempt on the backoff path", st)
	}
}

func TestDroppedConnectionIsRetried(t *testing.T) {
	api := newAPI().Script(mockapi.Answer{Drop: true}, mockapi.Answer{Drop: true})
	e, _ := newSocketEnv(t, api, withClock(newFakeClock()))
	msgs := tracks("m", 5)
	e.enqueue(msgs...)
	e.close()
	if n := len(api.Requests()); n != 3 {
		t.Fatalf("%d requests, want 2 dropped and 1 answered", n)
	}
	e.assertDeliveredOnce(msgs)
	if st := e.client.Stats(); st.TransportErrors.Written != 2 {
		t.Fatalf("stats %+v: the dropped requests had been written", st)
	}
}

func TestRefusedPortIsRetriedAndReportedNotWritten(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	out := &outcomes{}
	c, err := New(testWriteKey, WithEndpoint("http://"+addr), WithCallback(out), WithRetryCount(2), withClock(newFakeClock()))
	if err != nil {
		t.Fatal(err)
	}
	c.Enqueue(Track{UserId: "u", Event: "E"})
	c.Close()
	f := out.failed()
	var be *BatchError
	var te *TransportError
	if len(f) != 1 || !errors.Is(f[0].err, ErrRetriesExhausted) || !errors.As(f[0].err, &be) || !errors.As(f[0].err, &te) {
		t.Fatalf("failures %+v, want retries exhausted with a TransportError", f)
	}
	if be.Attempts != 3 || te.Written() || te.Phase != PhaseNotConnected {
		t.Fatalf("attempts %d, phase %v; want 3 attempts, never written", be.Attempts, te.Phase)
	}
	if !strings.Contains(f[0].err.Error(), "not written") {
		t.Fatalf("error %q does not say the request was not written", f[0].err)
	}
	if st := c.Stats(); st.TransportErrors.NotWritten != 3 || st.Failed.RetriesExhausted != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestWriteKeyNeverInLogsOrErrors(t *testing.T) {
	api := newAPI().Script(
		mockapi.Status(503), mockapi.Answer{Drop: true}, mockapi.RetryAfter(429, "1"),
		mockapi.Answer{Status: 400, Body: "bad request"},
		mockapi.Answer{Status: 301, Header: http.Header{"Location": {"http://elsewhere.test/"}}},
	)
	e, _ := newSocketEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1), WithRetryCount(1), withClock(newFakeClock()))
	e.enqueue(tracks("m", 4)...)
	e.close()
	secrets := []string{testWriteKey, base64.StdEncoding.EncodeToString([]byte(testWriteKey + ":"))}
	var texts []string
	for _, f := range e.out.failed() {
		texts = append(texts, f.err.Error())
	}
	if len(texts) == 0 {
		t.Fatal("the scenario produced no failures to inspect")
	}
	texts = append(texts, e.logs.String())
	if !strings.Contains(e.logs.String(), "will retry") {
		t.Fatalf("the scenario logged no retries: %s", e.logs.String())
	}
	for _, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Fatalf("the write key appears in: %s", text)
			}
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
	if len(f) != 1 || !errors.Is(f[0].err, ErrRedirect) {
		t.Fatalf("failures %+v, want ErrRedirect", f)
	}
	if n := plainHits.Load(); n != 0 {
		t.Fatalf("the plain-http server got %d requests", n)
	}
}
