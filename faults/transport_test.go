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
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

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
	{name: "stall past the request timeout", answer: Answer{Action: Stall}, timeout: 300 * time.Millisecond, phase: analytics.PhaseWritten, seen: true, cause: context.DeadlineExceeded},
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
			if n := len(s.Received()); n != len(want) {
				t.Errorf("the server received %d requests, want %d", n, len(want))
			}

			st := e.client.Stats()
			if st.Attempts != 2 || st.Retries.Backoff != 1 || st.Retries.RateLimit != 0 ||
				transportErrors(st, fc.phase) != 1 || st.TransportErrors.Written+st.TransportErrors.NotWritten != 1 ||
				st.Delivered != 20 || st.BatchesDelivered != 1 || st.BatchesFailed != 0 {
				t.Errorf("Stats %+v: want 2 attempts, 1 backoff retry, 1 transport error %s, 20 delivered", st, fc.phase)
			}
			// The attempt that will be retried goes to the log, with its
			// phase, not to Failure.
			if n := e.logs.count("analytics: upload attempt failed, will retry"); n != 1 {
				t.Errorf("%d 'will retry' log records, want 1", n)
			}
			var wantFaulted int64 // connections closed or reset before TLS
			if !fc.seen {
				wantFaulted = 1
			}
			if accepted, faulted := s.Accepted(); accepted != 2 || faulted != wantFaulted {
				t.Errorf("the server accepted %d connections, %d of them faulted before TLS; want 2 and %d", accepted, faulted, wantFaulted)
			}
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
				_, failed := e.out.split(t, ids(msgs))
				for id, err := range failed {
					if !errors.Is(err, fc.cause) {
						t.Errorf("%s: %v does not wrap %v", id, err, fc.cause)
					}
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
			if accepted, faulted := s.Accepted(); accepted != 3 || faulted != wantFaulted {
				t.Errorf("the server accepted %d connections, %d of them faulted before TLS; want 3 and %d", accepted, faulted, wantFaulted)
			}
		})
	}
}

// checkFailedTransport checks that every event failed with
// ErrRetriesExhausted after attempts attempts, the last of which ended in
// a transport error in phase p, and that the error and Stats say so.
func checkFailedTransport(t *testing.T, e *env, want []string, attempts int, p analytics.Phase) {
	t.Helper()
	delivered, failed := e.out.split(t, want)
	if len(delivered) > 0 {
		t.Fatalf("delivered %v, want none", delivered)
	}
	for id, err := range failed {
		if !errors.Is(err, analytics.ErrRetriesExhausted) {
			t.Errorf("%s: error %v, want ErrRetriesExhausted", id, err)
		}
		if be := asBatchError(t, err); be.Attempts != attempts {
			t.Errorf("%s: %d attempts, want %d", id, be.Attempts, attempts)
		}
		var te *analytics.TransportError
		if !errors.As(err, &te) {
			t.Fatalf("%s: error %v has no *TransportError", id, err)
		}
		if te.Phase != p || te.Written() != p.Written() {
			t.Errorf("%s: phase %v (written %v), want %v", id, te.Phase, te.Written(), p)
		}
		// The phase is in the text a user reads in a log.
		if !strings.Contains(err.Error(), p.String()) {
			t.Errorf("%s: error %q does not say %q", id, err, p)
		}
		var he *analytics.HTTPError
		if errors.As(err, &he) {
			t.Errorf("%s: an *HTTPError %v in a transport failure", id, he)
		}
	}
	st := e.client.Stats()
	n := int64(len(want))
	if st.Attempts != int64(attempts) || st.Retries.Backoff != int64(attempts-1) ||
		transportErrors(st, p) != int64(attempts) || st.TransportErrors.Written+st.TransportErrors.NotWritten != int64(attempts) ||
		st.Delivered != 0 || st.Failed.RetriesExhausted != n || st.BatchesFailed != 1 || st.InFlight != 0 || st.QueueDepth != 0 {
		t.Errorf("Stats %+v: want %d attempts, all transport errors %s, %d failed (retries exhausted)", st, attempts, p, n)
	}
	if p.Written() && st.BytesSent == 0 {
		t.Errorf("Stats.BytesSent 0 after %d written requests", attempts)
	}
}

// A refused port: nothing is ever written, which the error and Stats say.
func TestRefusedPortNotWritten(t *testing.T) {
	leakCheck(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{MinVersion: tls.VersionTLS12}}}
	t.Cleanup(hc.CloseIdleConnections)
	e := newEnv(t, "https://"+addr, hc, analytics.WithRetryCount(3))
	msgs := tracks("m", 3)
	e.enqueue(msgs...)
	e.close()
	checkFailedTransport(t, e, ids(msgs), 4, analytics.PhaseNotConnected)
	if st := e.client.Stats(); st.BytesSent != 0 {
		t.Errorf("Stats.BytesSent %d to a refused port", st.BytesSent)
	}
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
	_, failed := e.out.split(t, ids(msgs))
	for id, err := range failed {
		var cve *tls.CertificateVerificationError
		if !errors.As(err, &cve) {
			t.Errorf("%s: %v has no *tls.CertificateVerificationError", id, err)
		}
	}
	if n := len(s.Received()); n != 0 {
		t.Errorf("the server received %d requests from a client that must not trust it", n)
	}
	if accepted, _ := s.Accepted(); accepted != 3 {
		t.Errorf("%d connections, want 3 (one handshake per attempt)", accepted)
	}
}

// A pooled keep-alive connection that the server closed just as the next
// request went out on it. The client has at most one connection, so the
// second batch goes out on the first batch's: the server closes it
// unread. The request was written, so net/http does not resend it (a POST
// is not replayable); the SDK retries it on the backoff path, on a new
// connection, and it is delivered exactly once.
func TestStalePooledConnection(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{}, Answer{Action: KillIfReused})
	e := newEnv(t, s.URL, s.HTTPClient(t, 1), analytics.WithFlushAt(10))
	first, second := tracks("first", 10), tracks("second", 10)
	e.enqueue(first...)
	e.flush()
	e.enqueue(second...)
	e.close()

	checkDeliveredOnce(t, s, e.out, append(ids(first), ids(second)...))
	checkAttempts(t, batchAttempts(s, ids(first)), []string{""}, true)
	checkAttempts(t, batchAttempts(s, ids(second)), []string{"1"}, true)
	// The killed request was never read: the server knows it only by its
	// headers, on the reused connection.
	all := s.Received()
	if len(all) != 3 {
		t.Fatalf("the server received %d requests, want 3: the first batch, the killed one, the retry", len(all))
	}
	killed, retry := all[1], all[2]
	if !killed.Reused || killed.Raw != nil || killed.Status != 0 || killed.Header.Get("X-Retry-Count") != "" ||
		killed.Conn != all[0].Conn || retry.Reused || retry.Conn == killed.Conn {
		t.Errorf("killed request %+v on conn %d, retry on conn %d (reused %v): want the first batch's connection killed unread, the retry on a new one",
			killed, killed.Conn, retry.Conn, retry.Reused)
	}
	st := e.client.Stats()
	if st.Attempts != 3 || st.Retries.Backoff != 1 || st.TransportErrors.Written != 1 || st.TransportErrors.NotWritten != 0 {
		t.Errorf("Stats %+v: want 3 attempts, 1 backoff retry after 1 transport error, written", st)
	}
}

// The server closes its idle keep-alive connections (no close_notify)
// between two batches. Whether the client notices before it sends the
// next batch (then it dials afresh) or sends on the stale connection
// (then net/http resends it if nothing was written, or the SDK retries
// it), the second batch is delivered exactly once and arrives at the
// server once: what the dead connection swallowed never reached it.
func TestIdleConnectionClosedByServer(t *testing.T) {
	leakCheck(t)
	s := newServer(t)
	e := newEnv(t, s.URL, s.HTTPClient(t, 1), analytics.WithFlushAt(10))
	for round := range 5 {
		msgs := tracks("round"+string(rune('a'+round)), 10)
		e.enqueue(msgs...)
		e.flush()
		if n := s.CloseConns(); n != 1 {
			t.Fatalf("round %d: %d connections open after the batch, want the 1 idle one", round, n)
		}
		reqs := batchAttempts(s, ids(msgs))
		if len(reqs) != 1 || !reqs[0].OK() || reqs[0].Reused {
			t.Fatalf("round %d: the server received %d requests of the batch (%+v), want 1 answered 2xx on a new connection", round, len(reqs), reqs)
		}
	}
	e.close()
	var all []string
	for round := range 5 {
		all = append(all, ids(tracks("round"+string(rune('a'+round)), 10))...)
	}
	checkDeliveredOnce(t, s, e.out, all)
	st := e.client.Stats()
	if st.Attempts < 5 || st.Attempts > 10 || st.Failed != (analytics.FailedStats{}) {
		t.Errorf("Stats %+v", st)
	}
	t.Logf("%d attempts for 5 batches; transport errors: %d not written, %d written", st.Attempts, st.TransportErrors.NotWritten, st.TransportErrors.Written)
}

// The server resets the connection while the client is still writing a
// large body, and the retry delivers it. The failed attempt is usually
// "connected, not written"; when the loopback socket buffers took the
// whole body before the reset, the client counts it written (the bytes
// left the process: maybe delivered), the conservative side.
func TestResetDuringWrite(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{Action: ResetUnread})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(60), analytics.WithGzip(false))
	msgs := tracks("m", 60)
	for i := range msgs {
		// About 7 KB each, 430 KB a batch: usually more than the socket
		// buffers take while the server reads nothing.
		msgs[i].Properties.Set("pad", strings.Repeat(string(rune('a'+i%26)), 7000))
	}
	e.enqueue(msgs...)
	e.close()

	checkDeliveredOnce(t, s, e.out, ids(msgs))
	all := s.Received()
	if len(all) != 2 || all[0].Raw != nil || all[0].Header.Get("X-Retry-Count") != "" || all[1].Header.Get("X-Retry-Count") != "1" {
		t.Fatalf("the server received %d requests (%+v), want the reset one (headers only) and its retry", len(all), all)
	}
	st := e.client.Stats()
	if st.Attempts != 2 || st.TransportErrors.NotWritten+st.TransportErrors.Written != 1 {
		t.Errorf("Stats %+v: want 2 attempts after 1 transport error", st)
	}
	t.Logf("transport errors: %d not written, %d written", st.TransportErrors.NotWritten, st.TransportErrors.Written)
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
		if r.Proto != "HTTP/2.0" || r.Conn != reqs[0].Conn {
			t.Errorf("request %d: %s on conn %d, want HTTP/2.0 on conn %d", i, r.Proto, r.Conn, reqs[0].Conn)
		}
	}
	st := e.client.Stats()
	if st.Attempts != 3 || st.Retries.Backoff != 2 || st.TransportErrors.Written != 1 || st.TransportErrors.NotWritten != 0 {
		t.Errorf("Stats %+v: want 3 attempts, 2 backoff retries, 1 transport error written", st)
	}
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
	if len(all) != 3 || all[0].Status != 413 || all[0].Raw != nil {
		t.Fatalf("the server received %d requests, want the refused one and the two halves", len(all))
	}
	checkAttempts(t, batchAttempts(s, ids(msgs[:30])), []string{""}, true)
	checkAttempts(t, batchAttempts(s, ids(msgs[30:])), []string{""}, true)
	if st := e.client.Stats(); st.Splits != 1 || st.Attempts != 3 || st.BatchesDelivered != 2 || st.Retries.Backoff != 0 {
		t.Errorf("Stats %+v: want 1 split, 3 attempts, 2 batches delivered", st)
	}
}
