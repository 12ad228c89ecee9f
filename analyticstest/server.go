package analyticstest

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Server is the mock tracking API: an http.Handler (ServeHTTP) and an
// http.RoundTripper (RoundTrip) over one script and one record. Its
// methods are safe for concurrent use; the builder methods return s so
// that they chain: New().Script(Status(503)).Default(Status(200)).
type Server struct {
	mu       sync.Mutex
	script   []Answer
	rules    []func(Request) Answer
	def      Answer
	requests []Request
	onReq    func(Request)
}

// New returns a Server that answers 200 until told otherwise.
func New() *Server { return &Server{} }

// Script queues answers, one per request, after those already queued.
// Script answers come before any rule or the default.
func (s *Server) Script(answers ...Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script = append(s.script, answers...)
	return s
}

// Rule sets the rule that answers requests once the script is used up,
// replacing any rule set before; nil removes it. A rule returns
// Answer{Default: true} to leave a request to the default.
//
// The rule sees the decoded request (its Events, Header, ...) and runs
// with the Server's lock held, one request at a time, so it may keep
// state without locking; it must not call the Server's methods.
func (s *Server) Rule(rule func(Request) Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rules = nil
	if rule != nil {
		s.rules = []func(Request) Answer{rule}
	}
	return s
}

// Default sets the answer to requests that neither the script nor a rule
// answers; a new Server's default is 200.
func (s *Server) Default(a Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.def = a
	return s
}

// Load replaces the script, the rules and the default with those of sc
// (nil: none, and a default of 200). The record is kept.
func (s *Server) Load(sc *Script) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.rules, s.def = nil, nil, Answer{}
	if sc != nil {
		s.script = append([]Answer(nil), sc.Responses...)
		s.rules = append([]func(Request) Answer(nil), sc.Rules...)
		s.def = sc.Default
	}
	return s
}

// Reset clears the record, the script and the rules, and sets the default
// back to 200: the Server is as New left it, except for OnRequest, which
// belongs to the process that runs the Server rather than to a test.
func (s *Server) Reset() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.rules, s.def, s.requests = nil, nil, Answer{}, nil
	return s
}

// OnRequest calls f with each request as it is recorded: after any Delay,
// just before the answer is written; nil removes it. f may run on several
// goroutines at once.
func (s *Server) OnRequest(f func(Request)) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onReq = f
	return s
}

// Requests returns every request recorded so far, in the order they were
// recorded: after any Delay, so a delayed request may follow a later one.
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

// receive reads one request and picks its answer: the script's next
// answer, else the first rule's that does not defer, else the default.
//
// The answer is picked before the body is read whenever it does not
// depend on the body, so that CloseBeforeRead can close before reading;
// rules need the decoded body, so they run after the read.
func (s *Server) receive(r *http.Request) (Request, Answer) {
	req := newRequest(r)
	a, known := s.answerBeforeBody()
	if known && a.action() == closeBeforeRead {
		return req, a
	}
	req.decode(r)
	if !known {
		a = s.answerAfterBody(req)
	}
	return req, a
}

func (s *Server) answerBeforeBody() (a Answer, known bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case len(s.script) > 0:
		a, s.script = s.script[0], s.script[1:]
		return s.resolve(a), true
	case len(s.rules) == 0:
		return s.resolve(s.def), true
	}
	return Answer{}, false
}

func (s *Server) answerAfterBody(req Request) Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, rule := range s.rules {
		if a := rule(req); !a.Default {
			return a
		}
	}
	return s.resolve(s.def)
}

// resolve replaces an answer that defers by the default; a default that
// itself defers means 200. Called with s.mu held.
func (s *Server) resolve(a Answer) Answer {
	if !a.Default {
		return a
	}
	if s.def.Default {
		return Answer{}
	}
	return s.def
}

// record keeps req with the status answered and tells OnRequest. It runs
// before the answer is written, so a client that has its response finds
// its request in Requests.
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

// wait waits d or until ctx ends; then it returns context.Cause(ctx), nil
// when the wait ran its course. A request whose context has ended gets no
// answer even without a delay: nobody is waiting for it.
func wait(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return context.Cause(ctx)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
