package analyticstest

import (
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// Listener is a Server on a real socket.
type Listener struct {
	// URL is the base URL, http://127.0.0.1:port.
	URL   string
	srv   *http.Server
	done  chan struct{}
	conns atomic.Int64
}

// Start serves s on 127.0.0.1 on a free port until Close.
func (s *Server) Start() (*Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	l := &Listener{URL: "http://" + ln.Addr().String(), done: make(chan struct{})}
	l.srv = &http.Server{
		Handler:           s,
		ReadHeaderTimeout: 10 * time.Second,
		ConnState: func(_ net.Conn, st http.ConnState) {
			if st == http.StateNew {
				l.conns.Add(1)
			}
		},
	}
	go func() {
		defer close(l.done)
		_ = l.srv.Serve(ln)
	}()
	return l, nil
}

// Conns returns how many TCP connections the listener has accepted, so a
// test can check that the client reuses them.
func (l *Listener) Conns() int64 { return l.conns.Load() }

// Close stops the listener and closes every connection at once, answered
// or not; it returns when the accept loop has ended.
func (l *Listener) Close() error {
	err := l.srv.Close()
	<-l.done
	return err
}
