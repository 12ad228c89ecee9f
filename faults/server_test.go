package faults

// The fault server: the analyticstest mock behind a fault layer of these
// tests' own, over TLS on 127.0.0.1 (httptest's test certificate). The
// mock is the tracking API: it checks, decodes and records each request it
// is given and writes the answer. The fault layer in front of it is the
// network and the proxies: it numbers the connections and breaks some
// before the TLS handshake (conns_test.go), and for each request takes the
// next Answer of its script, hands the mock the answer the API gives
// (analyticstest.Server.ServeAnswer) and then ends the connection as the
// Action says: without a TLS close_notify, with one, with a reset, or once
// the client hangs up. What a proxy does without the API (kill a pooled
// connection on reuse, reset or answer 413 before the body is read) it
// does alone.

import (
	"context"
	"crypto/x509"
	"encoding/pem"
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

	"github.com/dualpath/analytics-go/analyticstest"
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
	// refuses a request by its headers does (so not with a 2xx). The mock
	// never sees the request.
	Early bool
}

// toAPI is the mock's answer to a request whose connection a ends: the
// connection faults take it over after the read (Drop, Partial), and the
// fault layer ends it.
func (a Answer) toAPI() analyticstest.Answer {
	switch a.Action {
	case CloseRaw, CloseTLS, Reset, Stall:
		return analyticstest.Answer{Drop: true}
	case PartialHeaders:
		return analyticstest.Answer{Partial: true}
	}
	return analyticstest.Answer{Status: a.Status, Header: a.Header, Body: a.Body, Delay: a.Delay}
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

// Received is one request as the server recorded it: the mock's record
// (headers, the body after gzip decoding, the events, the status answered,
// 0 if none, and Err, why the mock refused it), and what the fault layer
// saw of it.
type Received struct {
	analyticstest.Request
	Conn   int    // the TCP connection, numbered from 1 in accept order
	Reused bool   // the connection had served a request before
	Proto  string // HTTP/1.1 or HTTP/2.0
	Raw    []byte // the body as received (gzip), nil if not read
	Action Action
	// Cut reports that reading the body failed: the client stopped
	// sending it (its attempt's deadline, a closed connection), so Err
	// says nothing of what it sends.
	Cut bool
}

// OK reports whether the request was answered 2xx.
func (r Received) OK() bool { return r.Status >= 200 && r.Status <= 299 }

// withoutSentAt is the body with its sentAt value cut out: what must be
// byte-identical on every attempt of a batch.
func (r Received) withoutSentAt() string {
	return strings.Replace(string(r.Body), `"sentAt":"`+r.SentAt+`"`, `"sentAt":""`, 1)
}

// Server is the fault server. Its methods are safe for concurrent use.
type Server struct {
	URL     string
	CAPool  *x509.CertPool // trusts the server's certificate, and only it
	CAPEM   []byte         // the same certificate, PEM-encoded
	api     *analyticstest.Server
	srv     *httptest.Server
	closing context.Context // done once Close is called
	close   context.CancelFunc

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
	s := &Server{api: analyticstest.New(), conns: map[net.Conn]*connInfo{}}
	s.closing, s.close = context.WithCancel(context.Background())
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
	s.close()
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

// Received returns every request recorded so far, in the order they were
// recorded.
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

// DeliveredIDs counts, by messageId, the events in requests the mock
// answered 2xx.
func (s *Server) DeliveredIDs() map[string]int { return s.api.Delivered() }

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

// record keeps r. It runs before the client sees anything of the answer,
// so a client that has its outcome finds its request in Received.
func (s *Server) record(r Received) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received = append(s.received, r)
}

// ServeHTTP answers one request by the script.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	ci := r.Context().Value(connKey{}).(*connInfo)
	rec := Received{Conn: ci.n, Reused: ci.reqs.Add(1) > 1, Proto: r.Proto}
	a := s.next()
	rec.Action = a.Action

	// What a proxy does alone, before the body: the mock never sees these.
	switch {
	case a.Action == KillIfReused && rec.Reused:
		// Not a byte of the body is read: to the client, the pooled
		// connection was already dead.
		s.record(rec.unread(r, 0))
		takeOver(w, closeRaw)
		return
	case a.Action == ResetUnread:
		s.record(rec.unread(r, 0))
		takeOver(w, resetConn)
		return
	case a.Early:
		rec = rec.unread(r, a.Status)
		if rec.Status == 0 {
			rec.Status = http.StatusOK
		}
		s.record(rec)
		for k, v := range a.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Status)
		_, _ = io.WriteString(w, a.Body)
		return
	}

	// The rest reach the API. Its wait (a Delay) ends when the client
	// gives up or the server closes.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	body := &bodyReader{ReadCloser: r.Body}
	r2 := r.WithContext(ctx)
	r2.Body = body
	fw := &faultWriter{w: w, header: http.Header{}}
	rec.Request = s.api.ServeAnswer(fw, r2, a.toAPI())
	rec.Raw, rec.Cut = body.raw, body.err != nil
	s.record(rec)
	fw.finish(r.Context(), s.closing, a.Action)
}

// unread completes the record of a request the fault layer answers alone,
// before its body: its headers and the status answered.
func (r Received) unread(req *http.Request, status int) Received {
	r.Request = analyticstest.Request{At: time.Now(), Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Status: status}
	return r
}

// bodyReader keeps the request body as it is read: raw is nil until it
// is, err the first error other than io.EOF.
type bodyReader struct {
	io.ReadCloser
	raw []byte
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.raw = append(b.raw, p[:n]...)
	if b.raw == nil {
		b.raw = []byte{}
	}
	if err != nil && err != io.EOF && b.err == nil {
		b.err = err
	}
	return n, err
}
