package faults

// The TLS fault server: an HTTPS tracking API on 127.0.0.1 (httptest's
// test certificate) that answers each request with the next Answer of its
// script and records what it received. It sits on a listener of our own,
// so that it can reach the raw TCP connection under each *tls.Conn: closing
// that one ends the connection without a TLS close_notify, and SO_LINGER 0
// on it turns the close into a reset.

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Action is what the server does with one request.
type Action int

const (
	// Respond answers Status (200 if 0) with Header, after Delay.
	Respond Action = iota
	// CloseRaw reads the whole request, then closes the TCP connection
	// without a TLS close_notify: a front-end proxy restarting.
	CloseRaw
	// CloseTLS reads the whole request, then closes the connection
	// cleanly, close_notify first.
	CloseTLS
	// Reset reads the whole request, then resets the connection (RST).
	Reset
	// PartialHeaders reads the whole request, writes a status line and
	// half a header field, then closes the TCP connection.
	PartialHeaders
	// Stall reads the whole request and answers nothing until the client
	// gives up (its per-attempt timeout) or the server closes.
	Stall
	// KillIfReused models an idle pooled connection that the server (or a
	// load balancer) closed just as the client sent its next request on
	// it: a request that arrives on a connection that already served one
	// is not read, and the TCP connection is closed under it. On a fresh
	// connection it responds like Respond.
	KillIfReused
	// ResetUnread resets the connection once the request's headers have
	// arrived, without reading its body: a client still writing a large
	// body fails in the middle of the write.
	ResetUnread
)

func (a Action) String() string {
	return [...]string{"respond", "close-raw", "close-tls", "reset", "partial-headers", "stall", "kill-if-reused", "reset-unread"}[a]
}

// Answer is the server's answer to one request.
type Answer struct {
	Action Action
	Status int // Respond: 0 means 200
	Header http.Header
	Body   string        // Respond: the response body
	Delay  time.Duration // Respond: waited first, unless the client gives up
	// Early: Respond at once, without reading the body, as a proxy that
	// refuses a request by its headers does.
	Early bool
}

// ConnFault is what the server does with one accepted TCP connection,
// before any TLS.
type ConnFault int

const (
	// ConnServe runs the TLS handshake and serves the connection.
	ConnServe ConnFault = iota
	// ConnClose closes the connection before the TLS handshake.
	ConnClose
	// ConnReset resets the connection before the TLS handshake.
	ConnReset
)

// Received is one request as the server recorded it.
type Received struct {
	Conn   int    // the TCP connection, numbered from 1 in accept order
	Reused bool   // the connection had served a request before
	Proto  string // HTTP/1.1 or HTTP/2.0
	Header http.Header
	Raw    []byte // the body as received (gzip), nil if not read
	Body   []byte // the body after gzip decoding
	IDs    []string
	SentAt string
	Action Action
	Status int   // the status answered; 0 if none
	Err    error // why the body could not be read or decoded
	// Cut reports that reading the body failed: the client stopped
	// sending it (its attempt's deadline, a closed connection), so Err
	// says nothing of what it sends.
	Cut bool
}

// OK reports whether the request was answered 2xx.
func (r Received) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// Server is the fault server. Its methods are safe for concurrent use.
type Server struct {
	URL     string
	CAPool  *x509.CertPool // trusts the server's certificate, and only it
	CAPEM   []byte         // the same certificate, PEM-encoded
	srv     *httptest.Server
	closing chan struct{}

	mu         sync.Mutex
	script     []Answer
	def        Answer
	connScript []ConnFault
	connDef    ConnFault
	received   []Received
	conns      map[net.Conn]*connInfo // the *tls.Conn being served

	accepted  atomic.Int64 // TCP connections accepted
	connFails atomic.Int64 // of which closed or reset before the handshake
	readBuf   atomic.Int64 // if not 0, SO_RCVBUF of the next accepted connection
}

// newServer starts a fault server (HTTP/1.1 over TLS) that answers 200
// until scripted otherwise, and closes it when the test ends.
func newServer(t *testing.T) *Server {
	t.Helper()
	return startServer(t, false)
}

// newServerH2 is newServer speaking HTTP/2. Connections cannot be
// hijacked there: every action that takes the connection over resets the
// request's stream instead (RST_STREAM), and the connection lives on.
func newServerH2(t *testing.T) *Server {
	t.Helper()
	return startServer(t, true)
}

func startServer(t *testing.T, h2 bool) *Server {
	t.Helper()
	s := &Server{closing: make(chan struct{}), conns: map[net.Conn]*connInfo{}}
	srv := httptest.NewUnstartedServer(s)
	srv.EnableHTTP2 = h2
	srv.Listener = &faultListener{Listener: srv.Listener, s: s}
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake errors are the point
	srv.Config.ConnContext = s.connContext
	srv.Config.ConnState = s.connState
	srv.StartTLS()
	s.srv, s.URL = srv, srv.URL
	s.CAPool = x509.NewCertPool()
	s.CAPool.AddCert(srv.Certificate())
	s.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	t.Cleanup(s.Close)
	return s
}

// Close stops the server: stalled requests end, every connection closes.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.srv.Close()
}

// Script queues answers, one per request, before the default.
func (s *Server) Script(answers ...Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, answers...)
	return s
}

// Default sets the answer once the script is used up.
func (s *Server) Default(a Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = a
	return s
}

// ConnScript queues faults, one per accepted connection, before the
// connection default.
func (s *Server) ConnScript(faults ...ConnFault) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connScript = append(s.connScript, faults...)
	return s
}

// ConnDefault sets the fault of connections once the conn script is used
// up.
func (s *Server) ConnDefault(f ConnFault) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.connDef = f
	return s
}

// Received returns every request recorded so far, in arrival order.
func (s *Server) Received() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.received)
}

// Accepted returns how many TCP connections were accepted, and how many
// of them were closed or reset before the TLS handshake.
func (s *Server) Accepted() (all, failed int64) { return s.accepted.Load(), s.connFails.Load() }

// SmallReadBuffer sets the receive buffer of the next connection accepted
// to n bytes, so that a client writing more than a few times n on it to a
// server that does not read blocks in the write. (Only the next one: on
// loopback with buffers that small, a body of hundreds of KB the server
// does read takes seconds to arrive.)
func (s *Server) SmallReadBuffer(n int) *Server {
	s.readBuf.Store(int64(n))
	return s
}

// DeliveredIDs counts, by messageId, the events in requests answered 2xx.
func (s *Server) DeliveredIDs() map[string]int {
	out := map[string]int{}
	for _, r := range s.Received() {
		if r.OK() {
			for _, id := range r.IDs {
				out[id]++
			}
		}
	}
	return out
}

// HTTPClient returns an http.Client that trusts the test CA, as a user
// with a private CA builds one (see example_test.go), with at most
// maxConns connections (0: no limit). Its idle connections are closed when
// the test ends: the SDK never closes those of a client it was given.
func (s *Server) HTTPClient(t *testing.T, maxConns int) *http.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: s.CAPool, MinVersion: tls.VersionTLS12}
	tr.MaxConnsPerHost = maxConns
	c := &http.Client{Transport: tr}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// withDialed makes hc's transport hand each TCP connection it dials to f,
// and use the connection f returns.
func withDialed(hc *http.Client, f func(*net.TCPConn) net.Conn) *http.Client {
	tr := hc.Transport.(*http.Transport)
	var d net.Dialer
	tr.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := d.DialContext(ctx, network, addr)
		if tc, ok := c.(*net.TCPConn); ok {
			return f(tc), nil
		}
		return c, err
	}
	return hc
}

// closeSignal is a client's TCP connection that says on closed when the
// client closes it.
type closeSignal struct {
	*net.TCPConn
	once   sync.Once
	closed chan<- struct{}
}

func (c *closeSignal) Close() error {
	c.once.Do(func() { c.closed <- struct{}{} })
	return c.TCPConn.Close()
}

func (s *Server) next() Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.script) > 0 {
		a := s.script[0]
		s.script = s.script[1:]
		return a
	}
	return s.def
}

func (s *Server) nextConnFault() ConnFault {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.connScript) > 0 {
		f := s.connScript[0]
		s.connScript = s.connScript[1:]
		return f
	}
	return s.connDef
}

func (s *Server) record(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, r)
}

// ServeHTTP answers one request by the script.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ci := r.Context().Value(connKey{}).(*connInfo)
	rec := Received{Conn: ci.n, Reused: ci.reqs.Add(1) > 1, Proto: r.Proto, Header: r.Header.Clone()}
	a := s.next()
	rec.Action = a.Action

	switch {
	case a.Action == KillIfReused && rec.Reused:
		// Not a byte of the body is read: to the client, the pooled
		// connection was already dead.
		s.record(rec)
		takeOver(w, func(_ *tls.Conn, raw net.Conn) { raw.Close() })
		return
	case a.Action == ResetUnread:
		s.record(rec)
		takeOver(w, func(_ *tls.Conn, raw net.Conn) { resetConn(raw) })
		return
	}
	if !a.Early {
		rec.decode(r)
	}

	switch a.Action {
	case CloseRaw:
		s.record(rec)
		takeOver(w, func(_ *tls.Conn, raw net.Conn) { raw.Close() })
	case CloseTLS:
		s.record(rec)
		takeOver(w, func(tc *tls.Conn, _ net.Conn) { tc.Close() })
	case Reset:
		s.record(rec)
		takeOver(w, func(_ *tls.Conn, raw net.Conn) { resetConn(raw) })
	case PartialHeaders:
		s.record(rec)
		takeOver(w, func(tc *tls.Conn, raw net.Conn) {
			_ = tc.SetWriteDeadline(time.Now().Add(5 * time.Second))
			_, _ = io.WriteString(tc, "HTTP/1.1 200 OK\r\nContent-Type: appl")
			raw.Close()
		})
	case Stall:
		s.record(rec)
		select {
		case <-r.Context().Done():
		case <-s.closing:
		}
		takeOver(w, func(_ *tls.Conn, raw net.Conn) { raw.Close() })
	default: // Respond, KillIfReused on a fresh connection
		if !s.wait(r.Context(), a.Delay) {
			s.record(rec)
			takeOver(w, func(_ *tls.Conn, raw net.Conn) { raw.Close() })
			return
		}
		rec.Status = a.Status
		if rec.Status == 0 {
			rec.Status = http.StatusOK
		}
		// Recorded before the answer is written: a client that has its
		// response finds its request here.
		s.record(rec)
		for k, v := range a.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Status)
		_, _ = io.WriteString(w, a.Body)
	}
}

// wait waits d; false if the client gave up or the server closed first.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
	case <-s.closing:
	}
	return false
}

// decode reads the body and decodes it as a batch.
func (rec *Received) decode(r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	rec.Raw = raw
	if err != nil {
		rec.Err, rec.Cut = err, true
		return
	}
	rec.Body = raw
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			rec.Err = fmt.Errorf("gzip: %w", err)
			return
		}
		if rec.Body, err = io.ReadAll(zr); err != nil {
			rec.Err = fmt.Errorf("gzip: %w", err)
			return
		}
	}
	var b struct {
		Batch []struct {
			MessageID string `json:"messageId"`
		} `json:"batch"`
		SentAt string `json:"sentAt"`
	}
	if err := json.Unmarshal(rec.Body, &b); err != nil {
		rec.Err = fmt.Errorf("body is not a batch: %w", err)
		return
	}
	for _, e := range b.Batch {
		rec.IDs = append(rec.IDs, e.MessageID)
	}
	rec.SentAt = b.SentAt
}

// withoutSentAt is the body with its sentAt value cut out: what must be
// byte-identical on every attempt of a batch.
func (r Received) withoutSentAt() string {
	return strings.Replace(string(r.Body), `"sentAt":"`+r.SentAt+`"`, `"sentAt":""`, 1)
}
