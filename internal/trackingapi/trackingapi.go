// Package trackingapi is a small in-process tracking API for the SDK's
// tests and examples: an http.Handler that decodes each batch (gzip or
// not), records it, and answers from a script, then from a rule, then 200.
//
// It serves over a real socket (Start, on 127.0.0.1) or in memory
// (RoundTrip, for tests that run on a fake clock in a synctest bubble).
package trackingapi

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/consumer"
)

// Answer is what the API does with one request.
type Answer struct {
	// Status is the response status; 0 means 200.
	Status int
	// Header is added to the response.
	Header http.Header
	// Body is the response body.
	Body string
	// Delay is waited (or until the request's context ends) before the
	// answer.
	Delay time.Duration
	// Drop reads the request, then answers nothing: over a socket the
	// connection is closed; in memory the round trip fails.
	Drop bool
}

// Status returns an Answer with that status.
func Status(code int) Answer { return Answer{Status: code} }

// RetryAfter returns an Answer with that status and Retry-After value.
func RetryAfter(code int, value string) Answer {
	return Answer{Status: code, Header: http.Header{"Retry-After": {value}}}
}

// Request is one request the API received.
type Request struct {
	At     time.Time   // when it arrived
	Method string      // POST, or GET after a followed redirect
	Header http.Header // as received
	// Body is the request body after gzip decoding.
	Body []byte
	// Events are the batch's events, decoded; nil if the body was not a
	// batch.
	Events []map[string]any
	SentAt string // the batch's sentAt
	// Context is the batch's envelope context.
	Context map[string]any
	// Status is what the API answered; 0 for a dropped request.
	Status int
	// Err says why the body could not be decoded, if it could not.
	Err error
}

// MessageIDs returns the messageId of every event, in order.
func (r Request) MessageIDs() []string {
	ids := make([]string, len(r.Events))
	for i, e := range r.Events {
		ids[i], _ = e["messageId"].(string)
	}
	return ids
}

// Server is the fake tracking API. Its methods are safe for concurrent use.
type Server struct {
	mu       sync.Mutex
	script   []Answer
	rule     func(Request) Answer
	requests []Request
	onReq    func(Request)
}

// New returns a Server that answers 200 until told otherwise.
func New() *Server { return &Server{} }

// Script queues answers, one per request, before the rule applies.
func (s *Server) Script(answers ...Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, answers...)
	return s
}

// Rule sets the answer for requests after the script; nil means 200.
func (s *Server) Rule(rule func(Request) Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rule = rule
	return s
}

// OnRequest calls f with each request once it has been answered.
func (s *Server) OnRequest(f func(Request)) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onReq = f
	return s
}

// Requests returns every request received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// Delivered counts, by messageId, the events received in requests that
// were answered 2xx.
func (s *Server) Delivered() map[string]int {
	out := map[string]int{}
	for _, r := range s.Requests() {
		if r.Status >= 200 && r.Status <= 299 {
			for _, id := range r.MessageIDs() {
				out[id]++
			}
		}
	}
	return out
}

// decide reads one request and picks its answer.
func (s *Server) decide(r *http.Request) (Request, Answer) {
	req := Request{At: time.Now(), Method: r.Method, Header: r.Header.Clone()}
	req.Body, req.Err = readBody(r)
	if req.Err == nil && r.Method == http.MethodPost {
		var b struct {
			Batch   []map[string]any `json:"batch"`
			SentAt  string           `json:"sentAt"`
			Context map[string]any   `json:"context"`
		}
		if err := json.Unmarshal(req.Body, &b); err != nil {
			req.Err = fmt.Errorf("body is not JSON: %w", err)
		} else {
			req.Events, req.SentAt, req.Context = b.Batch, b.SentAt, b.Context
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Answer{}
	switch {
	case len(s.script) > 0:
		a, s.script = s.script[0], s.script[1:]
	case s.rule != nil:
		a = s.rule(req)
	}
	if a.Status == 0 && !a.Drop {
		a.Status = http.StatusOK
	}
	return req, a
}

func (s *Server) record(req Request, status int) {
	s.mu.Lock()
	req.Status = status
	s.requests = append(s.requests, req)
	f := s.onReq
	s.mu.Unlock()
	if f != nil {
		f(req)
	}
}

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	return io.ReadAll(zr)
}

func wait(ctx context.Context, d time.Duration) error {
	return consumer.SystemClock().Sleep(ctx, d)
}

// ServeHTTP answers one request over a real connection.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, a := s.decide(r)
	if err := wait(r.Context(), a.Delay); err != nil {
		s.record(req, 0)
		return
	}
	if a.Drop {
		s.record(req, 0)
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection unanswered
	}
	s.record(req, a.Status)
	for k, v := range a.Header {
		w.Header()[k] = v
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(a.Body)))
	w.WriteHeader(a.Status)
	_, _ = io.WriteString(w, a.Body)
}

// ErrDropped is the error of an in-memory round trip whose answer was Drop.
var ErrDropped = errors.New("trackingapi: connection dropped")

// RoundTrip answers in memory, as an http.RoundTripper: no socket, so it
// runs inside a synctest bubble.
//
// It drives the request's httptrace hooks as a socket would: the
// connection is obtained and the request written before any answer, a
// Drop comes after the write, and a response after its first byte.
func (s *Server) RoundTrip(r *http.Request) (*http.Response, error) {
	trace := httptrace.ContextClientTrace(r.Context())
	if trace != nil && trace.GotConn != nil {
		trace.GotConn(httptrace.GotConnInfo{})
	}
	req, a := s.decide(r)
	if trace != nil && trace.WroteRequest != nil {
		trace.WroteRequest(httptrace.WroteRequestInfo{})
	}
	if err := wait(r.Context(), a.Delay); err != nil {
		s.record(req, 0)
		return nil, err
	}
	if a.Drop {
		s.record(req, 0)
		return nil, ErrDropped
	}
	if trace != nil && trace.GotFirstResponseByte != nil {
		trace.GotFirstResponseByte()
	}
	s.record(req, a.Status)
	rec := httptest.NewRecorder()
	for k, v := range a.Header {
		rec.Header()[k] = v
	}
	rec.WriteHeader(a.Status)
	_, _ = io.WriteString(rec, a.Body)
	resp := rec.Result()
	resp.Request = r
	return resp, nil
}

// Client returns an http.Client that reaches s in memory, with the given
// redirect policy (nil: net/http's default).
func (s *Server) Client(checkRedirect func(*http.Request, []*http.Request) error) *http.Client {
	return &http.Client{Transport: s, CheckRedirect: checkRedirect}
}

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

// Conns returns how many TCP connections the listener has accepted.
func (l *Listener) Conns() int64 { return l.conns.Load() }

// Close stops the listener and closes every connection.
func (l *Listener) Close() error {
	err := l.srv.Close()
	<-l.done
	return err
}
