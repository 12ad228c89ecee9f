package faults

// The fault server's connections: a listener that applies connection
// faults before TLS and numbers the connections, the bookkeeping that maps
// each *tls.Conn to the TCP connection under it, the writer that holds the
// mock's answer until the request is recorded and ends the connection as
// the fault says, and the client side (an HTTP client that trusts the
// test CA, and its dialed connections).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// connInfo is one served connection.
type connInfo struct {
	n      int
	raw    net.Conn // the TCP connection under the TLS one
	killed bool     // by CloseConns; s.mu guards it
	reqs   atomic.Int64
}

type connKey struct{}

// CloseConns closes the TCP connection under every connection being
// served, without close_notify. Between batches those are the idle
// keep-alive connections in the client's pool.
func (s *Server) CloseConns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, ci := range s.conns {
		if !ci.killed {
			ci.killed = true
			ci.raw.Close()
			n++
		}
	}
	return n
}

// faultListener accepts TCP connections, applies the ConnFault of each,
// and numbers the ones it hands to TLS.
type faultListener struct {
	net.Listener
	s *Server
}

type rawConn struct {
	net.Conn
	n int
}

func (l *faultListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		n := int(l.s.accepted.Add(1))
		switch l.s.nextConnFault() {
		case ConnClose:
			l.s.connFails.Add(1)
			c.Close()
			continue
		case ConnReset:
			l.s.connFails.Add(1)
			resetConn(c)
			continue
		}
		if size := l.s.readBuf.Swap(0); size > 0 {
			if tc, ok := c.(*net.TCPConn); ok {
				_ = tc.SetReadBuffer(int(size))
			}
		}
		return &rawConn{Conn: c, n: n}, nil
	}
}

// closeRaw closes a TCP connection: under TLS, without close_notify.
func closeRaw(c net.Conn) { c.Close() }

// resetConn closes a TCP connection with a RST instead of a FIN.
func resetConn(c net.Conn) {
	if rc, ok := c.(*rawConn); ok {
		c = rc.Conn
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

func (s *Server) connContext(ctx context.Context, c net.Conn) context.Context {
	tc := c.(*tls.Conn)
	raw := tc.NetConn().(*rawConn)
	ci := &connInfo{n: raw.n, raw: raw}
	s.mu.Lock()
	s.conns[c] = ci
	s.mu.Unlock()
	return context.WithValue(ctx, connKey{}, ci)
}

// connState forgets connections once they are closed or taken over.
func (s *Server) connState(c net.Conn, st http.ConnState) {
	if st == http.StateClosed || st == http.StateHijacked {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}
}

// hijack takes the TLS connection over; nil over HTTP/2, which cannot.
func hijack(w http.ResponseWriter) (*tls.Conn, *bufio.ReadWriter) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return nil, nil
	}
	conn, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil
	}
	return conn.(*tls.Conn), brw
}

// takeOver hijacks the connection and hands end the TCP connection under
// it; over HTTP/2 it resets the request's stream instead.
func takeOver(w http.ResponseWriter, end func(raw net.Conn)) {
	tc, _ := hijack(w)
	if tc == nil {
		panic(http.ErrAbortHandler) // HTTP/2: resets the stream
	}
	end(tc.NetConn())
}

// faultWriter is the ResponseWriter the mock writes its answer to. The
// client sees nothing of it until finish, after the request is recorded:
// a response is held, and a connection the mock takes over (Hijack, for
// Drop and Partial) stays open, its Close left to finish, which ends it
// as the Action says. Over HTTP/2 the mock's takeover succeeds too, on a
// connection that discards, and finish resets the stream.
type faultWriter struct {
	w      http.ResponseWriter
	header http.Header
	code   int
	body   bytes.Buffer
	taken  bool
	tc     *tls.Conn // the connection taken over; nil over HTTP/2
}

func (fw *faultWriter) Header() http.Header { return fw.header }

func (fw *faultWriter) WriteHeader(code int) {
	if fw.code == 0 {
		fw.code = code
	}
}

func (fw *faultWriter) Write(p []byte) (int, error) {
	fw.WriteHeader(http.StatusOK)
	return fw.body.Write(p)
}

func (fw *faultWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	fw.taken = true
	tc, brw := hijack(fw.w)
	fw.tc = tc
	if tc == nil {
		return heldConn{}, bufio.NewReadWriter(bufio.NewReader(bytes.NewReader(nil)), bufio.NewWriter(io.Discard)), nil
	}
	return heldConn{Conn: tc}, brw, nil
}

// finish sends the held response, or ends the connection as act says:
// CloseTLS with close_notify, Reset with a RST, Stall once the client
// hangs up (ctx, the request's, over HTTP/2) or the server closes
// (closing), any other (CloseRaw, PartialHeaders, a Delay cut short)
// without close_notify.
func (fw *faultWriter) finish(ctx, closing context.Context, act Action) {
	if !fw.taken && fw.code != 0 {
		for k, v := range fw.header {
			fw.w.Header()[k] = v
		}
		fw.w.WriteHeader(fw.code)
		_, _ = fw.w.Write(fw.body.Bytes())
		return
	}
	if !fw.taken {
		fw.tc, _ = hijack(fw.w)
	}
	if fw.tc == nil {
		if act == Stall {
			select {
			case <-ctx.Done():
			case <-closing.Done():
			}
		}
		panic(http.ErrAbortHandler) // HTTP/2: resets the stream
	}
	raw := fw.tc.NetConn()
	switch act {
	case CloseTLS:
		fw.tc.Close()
	case Reset:
		resetConn(raw)
	case Stall:
		stop := context.AfterFunc(closing, func() { raw.Close() })
		_, _ = io.Copy(io.Discard, fw.tc) // until the client hangs up
		stop()
		raw.Close()
	default:
		closeRaw(raw)
	}
}

// heldConn is a connection the mock took over: what it writes goes
// through (nowhere over HTTP/2, where Conn is nil), its Close is left to
// faultWriter.finish.
type heldConn struct{ net.Conn }

func (c heldConn) Write(p []byte) (int, error) {
	if c.Conn == nil {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (c heldConn) SetWriteDeadline(t time.Time) error {
	if c.Conn == nil {
		return nil
	}
	return c.Conn.SetWriteDeadline(t)
}

func (c heldConn) Close() error { return nil }

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
