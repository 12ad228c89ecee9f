package analyticstest

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// ServeHTTP answers one request over a real connection. Paths that start
// with /_ are the control API (see package doc); every other request is
// recorded and answered: refused as the real API would refuse it, else
// from the script.
//
// Drop, CloseBeforeRead and Partial take the connection over (Hijack); on
// a ResponseWriter that cannot be hijacked (HTTP/2) they abort the
// handler with http.ErrAbortHandler instead.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if isControl(r.URL.Path) {
		if why := s.foreign(r); why != "" {
			writeError(w, http.StatusForbidden, why)
			return
		}
		s.control(w, r)
		return
	}
	req, a := s.receive(r)
	if err := wait(r.Context(), a.Delay); err != nil {
		s.record(req, 0)
		return
	}
	switch a.action() {
	case drop, closeBeforeRead:
		s.record(req, 0)
		hijackAndClose(w, nil)
	case partial:
		s.record(req, 0)
		code := a.status()
		hijackAndClose(w, fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: appl", code, http.StatusText(code)))
	default:
		s.record(req, a.status())
		writeAnswer(w, a)
	}
}

func writeAnswer(w http.ResponseWriter, a Answer) {
	code := a.status()
	if code < 200 {
		// net/http would send a 1xx as an informational response and then
		// an implicit 200, so the client would see a 200 that the record
		// calls 1xx. Write it raw as the only response instead: a client
		// sees what a server that answers 1xx alone looks like.
		head := fmt.Appendf(nil, "HTTP/1.1 %d %s\r\n", code, http.StatusText(code))
		for k, vs := range a.Header {
			for _, v := range vs {
				head = fmt.Appendf(head, "%s: %s\r\n", k, v)
			}
		}
		hijackAndClose(w, append(head, "\r\n"...))
		return
	}
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	if code != http.StatusNoContent && code != http.StatusNotModified {
		w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)))
	}
	w.WriteHeader(code)
	_, _ = io.WriteString(w, a.Body)
}

// hijackAndClose takes the connection over, writes prefix (if any) and
// closes it: the client gets no complete response.
func hijackAndClose(w http.ResponseWriter, prefix []byte) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			if len(prefix) > 0 {
				// A client that stopped reading must not hold the handler.
				_ = conn.SetWriteDeadline(time.Now().Add(5 * time.Second))
				_, _ = conn.Write(prefix)
			}
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler) // closes the connection unanswered
}
