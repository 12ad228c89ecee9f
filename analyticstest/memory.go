package analyticstest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
)

// RoundTrip answers in memory, as an http.RoundTripper: no socket, so it
// runs inside a testing/synctest bubble, where a Delay is fake time.
//
// It drives the request's httptrace hooks as a socket would: the
// connection is obtained, then the request written (except with
// CloseBeforeRead, which never reads it), then the first response byte
// arrives (with a response, or with Partial). Drop, CloseBeforeRead and
// Partial fail the round trip with ErrDropped, ErrClosedBeforeRead and
// ErrPartialResponse; a Delay cut short by the request's context fails it
// with the context's cause.
//
// A 1xx status reaches the client as the response's status, where over a
// socket net/http would take it as informational and wait for more.
func (s *Server) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		defer r.Body.Close() // the RoundTripper contract: always closed
	}
	if isControl(r.URL.Path) {
		rec := httptest.NewRecorder()
		s.control(rec, r)
		return result(rec, r), nil
	}
	trace := httptrace.ContextClientTrace(r.Context())
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	req, a := s.receive(r, nil)
	act := a.action()
	if act != closeBeforeRead && trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	if err := wait(r.Context(), a.Delay); err != nil {
		s.record(req, 0)
		return nil, err
	}
	switch act {
	case drop:
		s.record(req, 0)
		return nil, ErrDropped
	case closeBeforeRead:
		s.record(req, 0)
		return nil, ErrClosedBeforeRead
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	if act == partial {
		s.record(req, 0)
		return nil, ErrPartialResponse
	}
	s.record(req, a.status())
	rec := httptest.NewRecorder()
	for k, v := range a.Header {
		rec.Header()[k] = v
	}
	rec.WriteHeader(a.status())
	_, _ = io.WriteString(rec, a.Body)
	return result(rec, r), nil
}

func result(rec *httptest.ResponseRecorder, r *http.Request) *http.Response {
	resp := rec.Result()
	resp.Request = r
	return resp
}

// Client returns an http.Client that reaches s in memory, with the given
// redirect policy (nil: net/http's default).
func (s *Server) Client(checkRedirect func(*http.Request, []*http.Request) error) *http.Client {
	return &http.Client{Transport: s, CheckRedirect: checkRedirect}
}
