package consumer

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/retry"
)

// connAction is what the conn server does with a request it has read whole.
type connAction int

const (
	answerOK        connAction = iota // 200 with a short body, kept alive
	closeUnanswered                   // close the connection, not a byte of answer
	stallUnanswered                   // say nothing until the client closes
	answerCut                         // the start of a status line, then close
)

// connRequest is one request the conn server read whole.
type connRequest struct {
	conn, n    int // the connection, from 1 in accept order; the request's place on it, from 1
	retryCount string
	body       []byte // as sent
}

// connServer is a tracking API on 127.0.0.1, over plain TCP or TLS, that
// reads the requests of each connection one after another, whole, and does
// with the n-th request of connection conn what act says. act may block
// until the test ends.
type connServer struct {
	URL string
	act func(conn, n int) connAction

	mu    sync.Mutex
	reqs  []connRequest
	conns int
}

// newConnServer starts a conn server; with tlsCert it speaks HTTPS
// (HTTP/1.1 only). Every connection and goroutine ends at cleanup.
func newConnServer(t *testing.T, tlsCert *tls.Certificate, act func(conn, n int) connAction) *connServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	s := &connServer{URL: "http://" + ln.Addr().String(), act: act}
	if tlsCert != nil {
		ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{*tlsCert}})
		s.URL = "https://" + ln.Addr().String()
	}
	serveConns(t, ln, func(c net.Conn, conn int) {
		s.mu.Lock()
		s.conns++
		s.mu.Unlock()
		s.serve(c, conn)
	})
	return s
}

func (s *connServer) serve(c net.Conn, conn int) {
	br := bufio.NewReader(c)
	for n := 1; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, connRequest{conn: conn, n: n, retryCount: req.Header.Get("X-Retry-Count"), body: body})
		s.mu.Unlock()
		switch s.act(conn, n) {
		case answerOK:
			if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"); err != nil {
				return
			}
		case closeUnanswered:
			return
		case stallUnanswered:
			_, _ = io.Copy(io.Discard, c) // until the client closes it
			return
		case answerCut:
			_, _ = io.WriteString(c, "HTTP/1.1 20")
			return
		}
	}
}

// requests returns every request read whole, in the order read.
func (s *connServer) requests() []connRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]connRequest(nil), s.reqs...)
}

// place is where a request came and what it said it was.
type place struct {
	conn, n    int
	retryCount string
}

// places returns the place of each request read whole, in the order read.
func (s *connServer) places() []place {
	var out []place
	for _, r := range s.requests() {
		out = append(out, place{r.conn, r.n, r.retryCount})
	}
	return out
}

// testCert returns httptest's certificate for 127.0.0.1 and a pool that
// trusts it, and only it.
func testCert(t *testing.T) (*tls.Certificate, *x509.CertPool) {
	t.Helper()
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return &srv.TLS.Certificates[0], pool
}

// connMode is one way to reach the conn server.
type connMode struct {
	name string
	tls  bool
}

var connModes = []connMode{{"http", false}, {"https", true}}

// resendRig is an Uploader on the SDK's own HTTP client, over real sockets
// to a conn server, with immediate backoff retries and the send rate off:
// what a test measures is what the client did, in counters, not in time.
type resendRig struct {
	t    *testing.T
	srv  *connServer
	up   *Uploader
	logs *bytes.Buffer
	idle chan struct{} // a value each time a connection goes back to the pool
}

func newResendRig(t *testing.T, mode connMode, maxConns int, timeout time.Duration, act func(conn, n int) connAction) *resendRig {
	t.Helper()
	client := NewHTTPClient(maxConns)
	t.Cleanup(client.CloseIdleConnections)
	var cert *tls.Certificate
	if mode.tls {
		var pool *x509.CertPool
		cert, pool = testCert(t)
		client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	srv := newConnServer(t, cert, act)
	r := newRigOn(t, srv.URL, client, maxConns, timeout)
	r.srv = srv
	return r
}

// newRigOn returns a resendRig, with no conn server, whose Uploader sends
// to endpoint with client.
func newRigOn(t *testing.T, endpoint string, client *http.Client, maxConns int, timeout time.Duration) *resendRig {
	policy := retry.DefaultPolicy()
	policy.RetryCount = 3
	policy.BackoffBase = 0
	logs := &bytes.Buffer{}
	return &resendRig{
		t:    t,
		logs: logs,
		idle: make(chan struct{}, 16),
		up: New(Config{
			Endpoint:              endpoint,
			WriteKey:              testKey,
			UserAgent:             "analytics-go/test",
			Context:               []byte(`{}`),
			Client:                client,
			Gzip:                  true,
			RequestTimeout:        timeout,
			MaxBodyBytes:          maxBodyBytes,
			MaxConcurrentRequests: maxConns,
			Policy:                policy,
			Logger:                slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		}),
	}
}

// deliver sends batch number b, 3 events with messageIds of its own, and
// returns its error; a value goes to r.idle each time one of its
// connections goes back to the pool.
func (r *resendRig) deliver(b int) error { return r.deliverCtx(context.Background(), b) }

// deliverCtx is deliver under ctx.
func (r *resendRig) deliverCtx(ctx context.Context, b int) error {
	evs := events(3 * (b + 1))[3*b:]
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		PutIdleConn: func(err error) {
			if err == nil {
				r.idle <- struct{}{}
			}
		},
	})
	var out []outcome
	slot, err := r.up.acquire(ctx)
	if err != nil {
		return err
	}
	r.up.deliver(ctx, slot, evs, func(lo, hi int, err error) { out = append(out, outcome{lo, hi, err}) })
	if len(out) != 1 || out[0].lo != 0 || out[0].hi != 3 {
		return fmt.Errorf("reports %v, want one of [0, 3)", out)
	}
	return out[0].err
}

// awaitIdle waits until n connections have gone back to the pool, so that
// the next batch finds them there.
func (r *resendRig) awaitIdle(n int) {
	for range n {
		select {
		case <-r.idle:
		case <-time.After(hangGuard):
			require.FailNow(r.t, "no connection went back to the pool")
		}
	}
}

// secondCut closes each connection unanswered at its second request: what
// a server or a proxy closing an idle keep-alive connection does to the
// request that went out on it just then.
func secondCut(_, n int) connAction {
	if n == 2 {
		return closeUnanswered
	}
	return answerOK
}

func TestLostToAReusedConnectionIsResentAtOnce(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode.name, func(t *testing.T) {
			r := newResendRig(t, mode, 1, hangGuard, secondCut)
			require.NoError(t, r.deliver(0), "the first batch")
			r.awaitIdle(1)
			require.NoError(t, r.deliver(1), "the second batch")

			c := r.up.Counters()
			assert.Equal(t, int64(1), c.Resends, "Resends")
			assert.Zero(t, c.Retries.Backoff, "Retries.Backoff: the resend spent a retry")
			assert.Equal(t, int64(2), c.Attempts, "Attempts: the resend is part of its attempt")
			assert.Equal(t, int64(2), c.BatchesDelivered, "BatchesDelivered")
			assert.Zero(t, c.TransportErrors.Written+c.TransportErrors.NotWritten, "transport errors: the attempt was answered")
			// 3 requests on 2 connections: the resend carries the
			// X-Retry-Count of the attempt it repeats (none: a first
			// attempt), on a new connection.
			assert.Equal(t, []place{{1, 1, ""}, {1, 2, ""}, {2, 1, ""}}, r.srv.places(), "(connection, request on it, X-Retry-Count)")
			reqs := r.srv.requests()
			require.Len(t, reqs, 3)
			assert.Equal(t, reqs[1].body, reqs[2].body, "the resend's body, against the lost request's: the same bytes, sentAt included")
			assert.Contains(t, r.logs.String(), "batch resent", "the resend's log record")
			assert.NotContains(t, r.logs.String(), "will retry", "a retry's log record")
		})
	}
}

func TestResendIsNotResent(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode.name, func(t *testing.T) {
			// Two connections in the pool, each cut at its second request:
			// the resend takes the other one and is lost too. The first
			// request of each of the first two connections is answered once
			// both have theirs, so that the first two batches hold one
			// each.
			var (
				mu      sync.Mutex
				arrived int
				both    = make(chan struct{})
			)
			act := func(conn, n int) connAction {
				if n == 1 && conn <= 2 {
					mu.Lock()
					if arrived++; arrived == 2 {
						close(both)
					}
					mu.Unlock()
					select {
					case <-both:
					case <-t.Context().Done():
					}
				}
				return secondCut(conn, n)
			}
			r := newResendRig(t, mode, 2, hangGuard, act)
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for b := range errs {
				wg.Go(func() { errs[b] = r.deliver(b) })
			}
			wg.Wait()
			require.NoError(t, errors.Join(errs...), "the first two batches")
			r.awaitIdle(2)
			require.NoError(t, r.deliver(2), "the third batch")

			c := r.up.Counters()
			assert.Equal(t, int64(1), c.Resends, "Resends: the resend was resent")
			assert.Equal(t, int64(1), c.Retries.Backoff, "Retries.Backoff: the counted path after the resend")
			assert.Equal(t, int64(1), c.TransportErrors.Written, "TransportErrors.Written: the resend's end")
			// The lost request and its resend, each the second request of
			// a pooled connection, then the retry on a new one.
			third := r.srv.places()[2:]
			require.Len(t, third, 3, "requests of the third batch: %v", third)
			assert.Equal(t, []place{{3 - third[1].conn, 2, ""}, {3 - third[0].conn, 2, ""}, {3, 1, "1"}}, third,
				"(connection, request on it, X-Retry-Count) of the third batch")
		})
	}
}

func TestNoResend(t *testing.T) {
	cases := []struct {
		name    string
		timeout time.Duration
		act     func(conn, n int) connAction
		phase   Phase
	}{
		{"after a response byte", hangGuard, func(_, n int) connAction {
			if n == 2 {
				return answerCut
			}
			return answerOK
		}, PhaseResponding},
		// The attempt's deadline: the only case here that takes time, and
		// nothing is measured of it. It is far above what the first batch
		// takes, for a loaded machine.
		{"after a timeout", 2 * time.Second, func(_, n int) connAction {
			if n == 2 {
				return stallUnanswered
			}
			return answerOK
		}, PhaseWritten},
	}
	for _, mode := range connModes {
		for _, tc := range cases {
			t.Run(mode.name+"/"+tc.name, func(t *testing.T) {
				r := newResendRig(t, mode, 1, tc.timeout, tc.act)
				require.NoError(t, r.deliver(0), "the first batch")
				r.awaitIdle(1)
				require.NoError(t, r.deliver(1), "the second batch")
				c := r.up.Counters()
				assert.Zero(t, c.Resends, "Resends")
				assert.Equal(t, int64(1), c.Retries.Backoff, "Retries.Backoff")
				assert.Equal(t, int64(1), c.TransportErrors.Written, "TransportErrors.Written")
				assert.Equal(t, []place{{1, 1, ""}, {1, 2, ""}, {2, 1, "1"}}, r.srv.places(), "(connection, request on it, X-Retry-Count)")
				assert.Contains(t, r.logs.String(), tc.phase.String(), "the retry's log record names the phase")
				assert.NotContains(t, r.logs.String(), "batch resent", "a resend's log record")
			})
		}
		t.Run(mode.name+"/on a new connection", func(t *testing.T) {
			r := newResendRig(t, mode, 1, hangGuard, func(conn, n int) connAction {
				if conn == 1 {
					return closeUnanswered
				}
				return answerOK
			})
			require.NoError(t, r.deliver(0))
			c := r.up.Counters()
			assert.Zero(t, c.Resends, "Resends")
			assert.Equal(t, int64(1), c.Retries.Backoff, "Retries.Backoff")
			assert.Equal(t, []place{{1, 1, ""}, {2, 1, "1"}}, r.srv.places(), "(connection, request on it, X-Retry-Count)")
		})
	}
}

// An attempt on a reused connection that its context ended (a Shutdown
// out of time) is not resent: the connection did not lose it, the client
// gave it up.
func TestCancelledAttemptIsNotResent(t *testing.T) {
	for _, mode := range connModes {
		t.Run(mode.name, func(t *testing.T) {
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			cause := errors.New("shutdown out of time")
			r := newResendRig(t, mode, 1, hangGuard, func(_, n int) connAction {
				if n == 2 {
					cancel(cause) // once the request is written whole
					return stallUnanswered
				}
				return answerOK
			})
			require.NoError(t, r.deliver(0), "the first batch")
			r.awaitIdle(1)
			err := r.deliverCtx(ctx, 1)
			var be *BatchError
			require.ErrorAs(t, err, &be, "the second batch")
			assert.Same(t, cause, be.Reason, "the batch's Reason: the context's cause")
			c := r.up.Counters()
			assert.Zero(t, c.Resends, "Resends")
			assert.Zero(t, c.Retries.Backoff, "Retries.Backoff")
			assert.Equal(t, []place{{1, 1, ""}, {1, 2, ""}}, r.srv.places(), "(connection, request on it, X-Retry-Count)")
			assert.NotContains(t, r.logs.String(), "batch resent", "a resend's log record")
		})
	}
}

// A request lost on a reused HTTP/2 connection (its stream reset) is not
// resent at once: an HTTP/2 connection says it is closing (GOAWAY), and a
// stream reset is the server's answer, so the batch takes the backoff
// path.
func TestLostOnHTTP2IsNotResent(t *testing.T) {
	var (
		mu     sync.Mutex
		protos []int
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		mu.Lock()
		protos = append(protos, req.ProtoMajor)
		n := len(protos)
		mu.Unlock()
		if n == 2 {
			panic(http.ErrAbortHandler) // the stream is reset, not a byte of answer
		}
		_, _ = io.WriteString(w, "{}")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	client := NewHTTPClient(1)
	t.Cleanup(client.CloseIdleConnections)
	client.Transport.(*http.Transport).TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	r := newRigOn(t, srv.URL, client, 1, hangGuard)
	require.NoError(t, r.deliver(0), "the first batch")
	require.NoError(t, r.deliver(1), "the second batch")
	mu.Lock()
	assert.Equal(t, []int{2, 2, 2}, protos, "the HTTP major version of each request")
	mu.Unlock()
	c := r.up.Counters()
	assert.Zero(t, c.Resends, "Resends")
	assert.Equal(t, int64(1), c.Retries.Backoff, "Retries.Backoff")
	assert.NotContains(t, r.logs.String(), "batch resent", "a resend's log record")
}
