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
	s.serve(w, r, nil)
}

// ServeAnswer answers r as ServeHTTP does, but with a in place of the
// script's next answer, and returns r as it was recorded. It is for a
// handler in front of the Server that picks an answer by what the Server
// does not see, such as the connection a request came on: a test's own
// proxy or load balancer. The script, rules and default are left as they
// are; a Default answer stands for the default. A request the real API
// would refuse still gets the refusal (see Server), and the control API
// is not served: its paths are refused with 404 as any unknown path is.
func (s *Server) ServeAnswer(w http.ResponseWriter, r *http.Request, a Answer) Request {
	return s.serve(w, r, &a)
}

// serve answers a tracking request with given, if not nil, else from the
// script, and returns it as recorded.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, given *Answer) Request {
	req, a := s.receive(r, given)
	if err := wait(r.Context(), a.Delay); err != nil {
		return s.record(req, 0)
	}
	switch a.action() {
	case drop, closeBeforeRead:
		req = s.record(req, 0)
		hijackAndClose(w, nil)
	case partial:
		req = s.record(req, 0)
		code := a.status()
		hijackAndClose(w, fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: appl", code, http.StatusText(code)))
	default:
		req = s.record(req, a.status())
		writeAnswer(w, a)
	}
	return req
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
