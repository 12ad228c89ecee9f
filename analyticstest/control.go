package analyticstest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
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
