package faults

// Every way the connection to the tracking API breaks, over TLS, through
// the real client. Each case runs twice: the fault once, then the server
// heals (delivered after two attempts, exactly once); and the fault on
// every attempt with RetryCount 2 (failed with ErrRetriesExhausted after
// three attempts). Both check what the server received, the events'
// outcomes, the failure phase in the error and in Stats.

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
)

type faultCase struct {
	name    string
	answer  Answer    // the request's fault, when conn is ConnServe
	conn    ConnFault // a fault before the TLS handshake
	timeout time.Duration
	// phase is how far the failed attempt got; seen, whether the server
	// received that request.
	phase analytics.Phase
	seen  bool
	// cause, if set, is an error the final error wraps, for errors.Is.
	cause error
}

var faultCases = []faultCase{
	{name: "close without close_notify", answer: Answer{Action: CloseRaw}, phase: analytics.PhaseWritten, seen: true},
	{name: "close with close_notify", answer: Answer{Action: CloseTLS}, phase: analytics.PhaseWritten, seen: true},
	{name: "reset after request", answer: Answer{Action: Reset}, phase: analytics.PhaseWritten, seen: true},
	{name: "partial headers", answer: Answer{Action: PartialHeaders}, phase: analytics.PhaseResponding, seen: true},
	{name: "stall past the request timeout", answer: Answer{Action: Stall}, timeout: time.Second, phase: analytics.PhaseWritten, seen: true, cause: context.DeadlineExceeded},
	{name: "close before the TLS handshake", conn: ConnClose, phase: analytics.PhaseNotConnected},
	{name: "reset before the TLS handshake", conn: ConnReset, phase: analytics.PhaseNotConnected},
}

// script makes the server fault n times (-1: always), then answer 200.
func (fc faultCase) script(s *Server, n int) {
	if fc.conn != ConnServe {
		if n < 0 {
			s.ConnDefault(fc.conn)
		}
		for range max(n, 0) {
			s.ConnScript(fc.conn)
		}
		return
	}
	if n < 0 {
		s.Default(fc.answer)
	}
	for range max(n, 0) {
		s.Script(fc.answer)
	}
}

func (fc faultCase) options() []analytics.Option {
	if fc.timeout > 0 {
		return []analytics.Option{analytics.WithRequestTimeout(fc.timeout)}
	}
	return nil
}

// transportErrors is the Stats counter of fc's phase.
func transportErrors(st analytics.Stats, p analytics.Phase) int64 {
	if p.Written() {
		return st.TransportErrors.Written
	}
	return st.TransportErrors.NotWritten
}

func TestFaultOnceThenDelivered(t *testing.T) {
	for _, fc := range faultCases {
		t.Run(fc.name, func(t *testing.T) {
			leakCheck(t)
			s := newServer(t)
			fc.script(s, 1)
			e := newEnv(t, s.URL, s.HTTPClient(t, 0), append(fc.options(), analytics.WithFlushAt(20))...)
			msgs := tracks("m", 20)
			e.enqueue(msgs...)
			e.close()

			checkDeliveredOnce(t, s, e.out, ids(msgs))
			want := []string{"", "1"}
			if !fc.seen {
				want = []string{"1"} // the first attempt never reached it
			}
			checkAttempts(t, batchAttempts(s, ids(msgs)), want, true)
			assert.Equal(t, len(want), len(s.Received()), "requests the server received")

			st := e.client.Stats()
			assert.Equal(t, int64(2), st.Attempts, "Stats.Attempts")
			assert.Equal(t, int64(1), st.Retries.Backoff, "Stats.Retries.Backoff")
			assert.Zero(t, st.Retries.RateLimit, "Stats.Retries.RateLimit")
			assert.Equal(t, int64(1), transportErrors(st, fc.phase), "Stats.TransportErrors of the phase %s", fc.phase)
			assert.Equal(t, int64(1), st.TransportErrors.Written+st.TransportErrors.NotWritten, "Stats.TransportErrors, both phases")
			assert.Equal(t, int64(20), st.Delivered, "Stats.Delivered")
			assert.Equal(t, int64(1), st.BatchesDelivered, "Stats.BatchesDelivered")
			assert.Zero(t, st.BatchesFailed, "Stats.BatchesFailed")
			// The attempt that will be retried goes to the log, with its
			// phase, not to Failure.
			assert.Equal(t, 1, e.logs.Count("analytics: upload attempt failed, will retry"), "'will retry' log records")
			var wantFaulted int64 // connections closed or reset before TLS
			if !fc.seen {
				wantFaulted = 1
			}
			accepted, faulted := s.Accepted()
			assert.Equal(t, int64(2), accepted, "connections the server accepted")
			assert.Equal(t, wantFaulted, faulted, "connections faulted before TLS")
		})
	}
}

func TestFaultEveryAttemptRetriesExhausted(t *testing.T) {
	for _, fc := range faultCases {
		t.Run(fc.name, func(t *testing.T) {
			leakCheck(t)
			s := newServer(t)
			fc.script(s, -1)
			e := newEnv(t, s.URL, s.HTTPClient(t, 0), append(fc.options(), analytics.WithFlushAt(5), analytics.WithRetryCount(2))...)
			msgs := tracks("m", 5)
			e.enqueue(msgs...)
			e.close()

			checkFailedTransport(t, e, ids(msgs), 3, fc.phase)
			if fc.cause != nil {
				_, failed := e.out.Split(t, ids(msgs))
				for id, err := range failed {
					assert.ErrorIs(t, err, fc.cause, id)
				}
			}
			var want []string
			if fc.seen {
				want = []string{"", "1", "2"}
			}
			checkAttempts(t, batchAttempts(s, ids(msgs)), want, false)
			var wantFaulted int64
			if !fc.seen {
				wantFaulted = 3
			}
			accepted, faulted := s.Accepted()
			assert.Equal(t, int64(3), accepted, "connections the server accepted")
			assert.Equal(t, wantFaulted, faulted, "connections faulted before TLS")
		})
	}
}

// checkFailedTransport checks that every event failed with
// ErrRetriesExhausted after attempts attempts, the last of which ended in
// a transport error in phase p, and that the error and Stats say so.
func checkFailedTransport(t *testing.T, e *env, want []string, attempts int, p analytics.Phase) {
	t.Helper()
	delivered, failed := e.out.Split(t, want)
	require.Empty(t, delivered, "events delivered")
	for id, err := range failed {
		assert.ErrorIs(t, err, analytics.ErrRetriesExhausted, id)
		assert.Equal(t, attempts, asBatchError(t, err).Attempts, "%s: attempts", id)
		var te *analytics.TransportError
		require.ErrorAs(t, err, &te, id)
		assert.Equal(t, p, te.Phase, "%s: phase", id)
		assert.Equal(t, p.Written(), te.Written(), "%s: written", id)
		// The phase is in the text a user reads in a log.
		assert.Contains(t, err.Error(), p.String(), id)
		var he *analytics.HTTPError
		assert.NotErrorAs(t, err, &he, "%s: an *HTTPError in a transport failure", id)
	}
	st := e.client.Stats()
	n := int64(len(want))
	assert.Equal(t, int64(attempts), st.Attempts, "Stats.Attempts")
	assert.Equal(t, int64(attempts-1), st.Retries.Backoff, "Stats.Retries.Backoff")
	assert.Equal(t, int64(attempts), transportErrors(st, p), "Stats.TransportErrors of the phase %s", p)
	assert.Equal(t, int64(attempts), st.TransportErrors.Written+st.TransportErrors.NotWritten, "Stats.TransportErrors, both phases")
	assert.Zero(t, st.Delivered, "Stats.Delivered")
	assert.Equal(t, n, st.Failed.RetriesExhausted, "Stats.Failed.RetriesExhausted")
	assert.Equal(t, int64(1), st.BatchesFailed, "Stats.BatchesFailed")
	assert.Zero(t, st.InFlight, "Stats.InFlight")
	assert.Zero(t, st.QueueDepth, "Stats.QueueDepth")
	if p.Written() {
		assert.Positive(t, st.BytesSent, "Stats.BytesSent after %d written requests", attempts)
	}
}

// A refused port: nothing is ever written, which the error and Stats say.
func TestRefusedPortNotWritten(t *testing.T) {
	leakCheck(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	t.Cleanup(hc.CloseIdleConnections)
	e := newEnv(t, "https://"+addr, hc, analytics.WithRetryCount(3))
	msgs := tracks("m", 3)
	e.enqueue(msgs...)
	e.close()
	checkFailedTransport(t, e, ids(msgs), 4, analytics.PhaseNotConnected)
	assert.Zero(t, e.client.Stats().BytesSent, "Stats.BytesSent to a refused port")
}

// TLS verification is on by default: the SDK's own client does not trust
// the self-signed test server. Every attempt fails in the handshake (not
// written), is retried, and the events fail with ErrRetriesExhausted; the
// server never gets a request.
func TestTLSVerificationOnByDefault(t *testing.T) {
	leakCheck(t)
	s := newServer(t)
	e := newEnv(t, s.URL, nil, analytics.WithRetryCount(2))
	msgs := tracks("m", 4)
	e.enqueue(msgs...)
	e.close()
	checkFailedTransport(t, e, ids(msgs), 3, analytics.PhaseNotConnected)
	_, failed := e.out.Split(t, ids(msgs))
	for id, err := range failed {
		var cve *tls.CertificateVerificationError
		assert.ErrorAs(t, err, &cve, id)
	}
	assert.Equal(t, 0, len(s.Received()), "requests from a client that must not trust the server")
	accepted, _ := s.Accepted()
	assert.Equal(t, int64(3), accepted, "connections: one handshake per attempt")
}

// A pooled keep-alive connection that the server closed just as the next
// request went out on it. The client has at most one connection, so the
// second batch goes out on the first batch's: the server closes it
// unread. The request was written, so net/http does not resend it (a POST
// is not replayable); the SDK resends it at once, as part of the same
// attempt (no retry spent, the same X-Retry-Count), on a new connection,
// and it is delivered exactly once.
func TestStalePooledConnection(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{}, Answer{Action: KillIfReused})
	e, first, second := twoBatches(t, s, s.HTTPClient(t, 1))
	checkAttempts(t, batchAttempts(s, ids(first)), []string{""}, true)
	checkAttempts(t, batchAttempts(s, ids(second)), []string{""}, true)
	// The killed request was never read: the server knows it only by its
	// headers, on the reused connection.
	all := s.Received()
	require.Equal(t, 3, len(all), "requests: the first batch, the killed one, the resend")
	killed, resend := all[1], all[2]
	assert.True(t, killed.Reused, "the killed request came on a reused connection")
	assert.Equal(t, all[0].Conn, killed.Conn, "the killed request came on the first batch's connection")
	assert.Nil(t, killed.Raw, "the killed request was read")
	assert.Zero(t, killed.Status, "the killed request was answered")
	assert.Empty(t, killed.Header.Get("X-Retry-Count"), "the killed request is a first attempt")
	assert.False(t, resend.Reused, "the resend came on a reused connection")
	assert.NotEqual(t, killed.Conn, resend.Conn, "the resend came on the killed connection")
	checkResentOnce(t, e)
}

// A server, or a proxy cutting idle connections, reads the second request
// on a kept-alive connection whole and closes it without a byte of answer
// (and without close_notify). The API is up: the SDK resends the batch at
// once on a new connection, with the same bytes and X-Retry-Count, and
// counts it in Stats.Resends, not as a retry. Before, it cost a counted
// backoff retry (about half a second).
func TestClosedAfterReadOnReusedConnection(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{}, Answer{Action: CloseRaw})
	e, _, second := twoBatches(t, s, s.HTTPClient(t, 1))
	reqs := batchAttempts(s, ids(second))
	checkAttempts(t, reqs, []string{"", ""}, true)
	lost, resend := reqs[0], reqs[1]
	assert.True(t, lost.Reused, "the lost request came on a reused connection")
	assert.Equal(t, lost.Raw, resend.Raw, "the resend's body, against the lost request's: the same bytes, sentAt included")
	assert.False(t, resend.Reused, "the resend came on a reused connection")
	assert.NotEqual(t, lost.Conn, resend.Conn, "the resend came on the lost request's connection")
	accepted, _ := s.Accepted()
	assert.Equal(t, int64(2), accepted, "connections")
	checkResentOnce(t, e)
}

// The server closes its idle keep-alive connections (no close_notify)
// between two batches, and the client notices before it sends the next
// batch (the test waits for the client to close its end): it dials afresh,
// and each batch is delivered exactly once in one attempt, with no
// transport error. (Where the client sends on the dead connection before
// it notices, see TestStalePooledConnection and
// TestClosedAfterReadOnReusedConnection.)
func TestIdleConnectionClosedByServer(t *testing.T) {
	leakCheck(t)
	s := newServer(t)
	closed := make(chan struct{}, 10)
	hc := withDialed(s.HTTPClient(t, 1), func(c *net.TCPConn) net.Conn { return &closeSignal{TCPConn: c, closed: closed} })
	e := newEnv(t, s.URL, hc, analytics.WithFlushAt(10))
	for round := range 5 {
		msgs := tracks("round"+string(rune('a'+round)), 10)
		e.enqueue(msgs...)
		e.flush()
		require.Equal(t, 1, s.CloseConns(), "round %d: connections open after the batch: the 1 idle one", round)
		reqs := batchAttempts(s, ids(msgs))
		require.Equal(t, 1, len(reqs), "round %d: requests of the batch", round)
		require.True(t, reqs[0].OK(), "round %d: the batch was answered %d", round, reqs[0].Status)
		require.False(t, reqs[0].Reused, "round %d: the batch came on a reused connection", round)
		select {
		case <-closed: // the client saw the close and dropped the connection
		case <-time.After(time.Minute):
			require.FailNow(t, "the client never closed its end of a connection the server closed", "round %d", round)
		}
	}
	e.close()
	var all []string
	for round := range 5 {
		all = append(all, ids(tracks("round"+string(rune('a'+round)), 10))...)
	}
	checkDeliveredOnce(t, s, e.out, all)
	st := e.client.Stats()
	assert.Equal(t, int64(5), st.Attempts, "Stats.Attempts for 5 batches")
	assert.Zero(t, st.Resends, "Stats.Resends")
	assert.Zero(t, st.TransportErrors.Written+st.TransportErrors.NotWritten, "Stats.TransportErrors")
	assert.Equal(t, analytics.FailedStats{}, st.Failed, "Stats.Failed")
	accepted, _ := s.Accepted()
	assert.Equal(t, int64(5), accepted, "connections: one per batch")
}

// The server resets the connection while the client is still writing a
// large body, and the retry delivers it. The socket buffers on both sides
// of the first connection are a few KB, the body 430 KB, and the server reads none of it: the
// client is blocked in the write when the reset comes, so the failed
// attempt is "connected, not written". (Where the whole request was
// written before the reset, the attempt is "written": see "reset after
// request" in faultCases.)
func TestResetDuringWrite(t *testing.T) {
	leakCheck(t)
	s := newServer(t).SmallReadBuffer(4 << 10).Script(Answer{Action: ResetUnread})
	var dials atomic.Int64
	hc := withDialed(s.HTTPClient(t, 0), func(c *net.TCPConn) net.Conn {
		if dials.Add(1) == 1 { // the first attempt's connection; the retry's is a fresh one
			_ = c.SetWriteBuffer(4 << 10)
		}
		return c
	})
	e := newEnv(t, s.URL, hc, analytics.WithFlushAt(60), analytics.WithGzip(false))
	msgs := tracks("m", 60)
	for i := range msgs {
		// About 7 KB each, 430 KB a batch: far more than the socket
		// buffers take while the server reads nothing.
		msgs[i].Properties.Set("pad", strings.Repeat(string(rune('a'+i%26)), 7000))
	}
	e.enqueue(msgs...)
	e.close()

	checkDeliveredOnce(t, s, e.out, ids(msgs))
	all := s.Received()
	require.Equal(t, 2, len(all), "requests: the reset one and its retry")
	assert.Nil(t, all[0].Raw, "the reset request's body was read")
	assert.Empty(t, all[0].Header.Get("X-Retry-Count"), "the reset request is a first attempt")
	assert.Equal(t, "1", all[1].Header.Get("X-Retry-Count"), "the retry")
	st := e.client.Stats()
	assert.Equal(t, int64(2), st.Attempts, "Stats.Attempts")
	assert.Equal(t, int64(1), st.TransportErrors.NotWritten, "Stats.TransportErrors.NotWritten: the reset attempt")
	assert.Zero(t, st.TransportErrors.Written, "Stats.TransportErrors.Written")
	assert.Equal(t, int64(len(all[1].Raw)), st.BytesSent, "Stats.BytesSent: the retry's body alone")
}

// Over HTTP/2 (what the SDK's own client negotiates with an API that
// offers it), a request whose stream the server resets after reading it
// is retried by the SDK (written: the server had it) and delivered once;
// the connection is kept for the retry.
func TestHTTP2StreamReset(t *testing.T) {
	leakCheck(t)
	s := newServerH2(t).Script(Answer{Action: CloseRaw}, Answer{Status: 503})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(10))
	msgs := tracks("m", 10)
	e.enqueue(msgs...)
	e.close()

	checkDeliveredOnce(t, s, e.out, ids(msgs))
	reqs := batchAttempts(s, ids(msgs))
	checkAttempts(t, reqs, []string{"", "1", "2"}, true)
	for i, r := range reqs {
		assert.Equal(t, "HTTP/2.0", r.Proto, "request %d", i)
		assert.Equal(t, reqs[0].Conn, r.Conn, "request %d: the connection, against the first attempt's", i)
	}
	st := e.client.Stats()
	assert.Equal(t, int64(3), st.Attempts, "Stats.Attempts")
	assert.Equal(t, int64(2), st.Retries.Backoff, "Stats.Retries.Backoff")
	assert.Equal(t, int64(1), st.TransportErrors.Written, "Stats.TransportErrors.Written")
	assert.Zero(t, st.TransportErrors.NotWritten, "Stats.TransportErrors.NotWritten")
}

// Over HTTP/2 a stream the server resets on a reused connection is the
// server's answer, not a connection lost as it closed: the SDK does not
// resend it at once, and retries it on the backoff path.
func TestHTTP2StreamResetOnReusedConnectionIsNotResent(t *testing.T) {
	leakCheck(t)
	s := newServerH2(t).Script(Answer{}, Answer{Action: CloseRaw})
	e, _, second := twoBatches(t, s, s.HTTPClient(t, 0))
	reqs := batchAttempts(s, ids(second))
	checkAttempts(t, reqs, []string{"", "1"}, true)
	for i, r := range reqs {
		assert.Equal(t, "HTTP/2.0", r.Proto, "request %d", i)
		assert.True(t, r.Reused, "request %d: came on a new connection", i)
	}
	st := e.client.Stats()
	assert.Zero(t, st.Resends, "Stats.Resends")
	assert.Equal(t, int64(1), st.Retries.Backoff, "Stats.Retries.Backoff")
	assert.Equal(t, int64(1), st.TransportErrors.Written, "Stats.TransportErrors.Written")
}

// A proxy in front of the API with a smaller body limit answers 413 as
// soon as it has the headers, without reading the 430 KB body, and closes
// the connection. The client still gets the 413 (it is not lost to a
// reset while the body is being written): the SDK splits the batch, and
// each half, a batch of its own, is delivered.
func TestEarly413FromProxy(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{Status: http.StatusRequestEntityTooLarge, Early: true})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(60), analytics.WithGzip(false))
	msgs := tracks("m", 60)
	for i := range msgs {
		msgs[i].Properties.Set("pad", strings.Repeat(string(rune('a'+i%26)), 7000))
	}
	e.enqueue(msgs...)
	e.close()

	checkDeliveredOnce(t, s, e.out, ids(msgs))
	all := s.Received()
	require.Equal(t, 3, len(all), "requests: the refused one and the two halves")
	assert.Equal(t, 413, all[0].Status, "the first request")
	assert.Nil(t, all[0].Raw, "the refused request's body was read")
	checkAttempts(t, batchAttempts(s, ids(msgs[:30])), []string{""}, true)
	checkAttempts(t, batchAttempts(s, ids(msgs[30:])), []string{""}, true)
	st := e.client.Stats()
	assert.Equal(t, int64(1), st.Splits, "Stats.Splits")
	assert.Equal(t, int64(3), st.Attempts, "Stats.Attempts")
	assert.Equal(t, int64(2), st.BatchesDelivered, "Stats.BatchesDelivered")
	assert.Zero(t, st.Retries.Backoff, "Stats.Retries.Backoff")
}

// twoBatches sends two batches of 10 events to s through hc, flushing the
// first before the second is queued, so that the second goes out on the
// connection the first left idle; then it closes the client and checks
// that every event of both was delivered exactly once.
func twoBatches(t *testing.T, s *Server, hc *http.Client) (e *env, first, second []analytics.Track) {
	t.Helper()
	e = newEnv(t, s.URL, hc, analytics.WithFlushAt(10))
	first, second = tracks("first", 10), tracks("second", 10)
	e.enqueue(first...)
	e.flush()
	e.enqueue(second...)
	e.close()
	checkDeliveredOnce(t, s, e.out, append(ids(first), ids(second)...))
	return e, first, second
}

// checkResentOnce checks the Stats of two batches, the second lost to a
// kept-alive connection's close and resent once: two attempts, one
// resend, no retry, and no transport error, since the resend was answered.
func checkResentOnce(t *testing.T, e *env) {
	t.Helper()
	st := e.client.Stats()
	assert.Equal(t, int64(2), st.Attempts, "Stats.Attempts")
	assert.Equal(t, int64(1), st.Resends, "Stats.Resends")
	assert.Zero(t, st.Retries.Backoff, "Stats.Retries.Backoff")
	assert.Zero(t, st.TransportErrors.Written+st.TransportErrors.NotWritten, "Stats.TransportErrors: the attempt was answered")
}
