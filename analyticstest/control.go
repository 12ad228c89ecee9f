package analyticstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// The control API lets a harness in another process or language drive the
// Server. Its paths start with /_, which no tracking API path does, and
// its requests are not recorded, nor checked as tracking requests are; its
// errors have the JSON body of the refusals.
const (
	pathRequests = "/_requests" // GET: the record, a JSON array of Request
	pathReset    = "/_reset"    // POST: Reset
	pathScript   = "/_script"   // POST: ParseScript the body, then Load it
)

// maxScriptBytes bounds a POST /_script body; a script is a few KiB.
const maxScriptBytes = 1 << 20

func isControl(path string) bool { return strings.HasPrefix(path, "/_") }

// foreign returns why a control request that came over a socket could be
// a web page's, "" if it cannot: the record holds every write key the mock
// was sent, and a reset or a script reprograms it. A page that rebinds its
// own name to 127.0.0.1 (DNS rebinding) sends that name as Host, so
// unless Public, only a loopback Host or the address the request came in
// on is answered; and a cross-site request (Sec-Fetch-Site: cross-site, or
// an Origin that is neither loopback nor the mock's own) never is. A
// harness or curl sends a loopback Host and no Origin.
func (s *Server) foreign(r *http.Request) string {
	s.mu.Lock()
	public := s.public
	s.mu.Unlock()
	if !public && !localHost(r, r.Host) {
		return fmt.Sprintf("mockapi: the control API answers only a loopback Host or the address it listens on, not Host %q (a web page may be reaching it by DNS rebinding); run mockapi with -public (Server.Public in Go) to answer any Host", r.Host)
	}
	if strings.EqualFold(r.Header.Get("Sec-Fetch-Site"), "cross-site") {
		return "mockapi: the control API refuses cross-site requests (Sec-Fetch-Site: cross-site)"
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		u, err := url.Parse(origin)
		own := err == nil && u.Host != "" && (localHost(r, u.Host) || public && strings.EqualFold(u.Host, r.Host))
		if !own {
			return fmt.Sprintf("mockapi: the control API refuses cross-site requests: Origin %q is neither loopback nor the mock's own", origin)
		}
	}
	return ""
}

// localHost reports whether host (a Host header's value, with or without
// a port) names a loopback address (localhost, 127.0.0.0/8, ::1) or the
// address the connection of r was accepted on.
func localHost(r *http.Request, host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return false
	}
	if ip.IsLoopback() {
		return true
	}
	local, ok := r.Context().Value(http.LocalAddrContextKey).(*net.TCPAddr)
	return ok && local.IP.Equal(ip)
}

func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case pathRequests:
		if allow(w, r, http.MethodGet) {
			s.serveRequests(w)
		}
	case pathReset:
		if allow(w, r, http.MethodPost) {
			s.Reset()
			w.WriteHeader(http.StatusNoContent)
		}
	case pathScript:
		if allow(w, r, http.MethodPost) {
			s.serveScript(w, r)
		}
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("mockapi: no control path %s (have %s, %s, %s)", r.URL.Path, pathRequests, pathReset, pathScript))
	}
}

// allow answers 405 unless r uses method.
func allow(w http.ResponseWriter, r *http.Request, method string) bool {
	if r.Method == method {
		return true
	}
	w.Header().Set("Allow", method)
	writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("mockapi: %s takes %s, not %s", r.URL.Path, method, r.Method))
	return false
}

func (s *Server) serveRequests(w http.ResponseWriter) {
	reqs := s.Requests()
	if reqs == nil {
		reqs = []Request{} // [] rather than null: a harness can always iterate
	}
	body, err := json.Marshal(reqs)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "mockapi: encoding the record: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(body, '\n'))
}

func (s *Server) serveScript(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxScriptBytes+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "mockapi: reading the script: "+err.Error())
		return
	}
	if len(data) > maxScriptBytes {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("mockapi: script larger than %d bytes", maxScriptBytes))
		return
	}
	sc, err := ParseScript(data)
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	s.Load(sc)
	w.WriteHeader(http.StatusNoContent)
}
