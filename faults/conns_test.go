package faults

// The fault server's connections: a listener that applies connection
// faults before TLS and numbers the connections, the bookkeeping that maps
// each *tls.Conn to the TCP connection under it, and the ways a handler
// takes a connection over to break it.

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"sync/atomic"
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

// takeOver hijacks the connection and hands f the TLS connection and the
// TCP connection under it.
func takeOver(w http.ResponseWriter, f func(tc *tls.Conn, raw net.Conn)) {
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler) // HTTP/2: resets the stream
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	tc := conn.(*tls.Conn)
	f(tc, tc.NetConn())
}
