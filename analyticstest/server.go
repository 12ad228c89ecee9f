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
//
// A request that the real API would refuse gets the refusal, whatever the
// script says (see the package doc, "Refusals"); it is recorded with that
// status and the reason as Err, and takes no answer from the script.
// Lenient turns the refusals off.
type Server struct {
	mu       sync.Mutex
	script   []Answer
	rules    []func(Request) Answer
	def      Answer
	requests []Request
	onReq    func(Request)
	lenient  bool
	public   bool

	// The token endpoint (token.go), once OAuth is set.
	oauth         *OAuth
	tokenScript   []Answer
	tokens        map[string]time.Time // issued, by when they expire (the Server's clock)
	jtis          map[string]bool      // of the JWTs taken
	tokenRequests []Request
}

// New returns a Server that answers 200 to every request the real API
// would take, until told otherwise.
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

// Load replaces the script, the rules, the default and the token script
// with those of sc (nil: none, and a default of 200). The record is kept.
func (s *Server) Load(sc *Script) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.rules, s.def, s.tokenScript = nil, nil, Answer{}, nil
	if sc != nil {
		s.tokenScript = append([]Answer(nil), sc.TokenResponses...)
		s.script = append([]Answer(nil), sc.Responses...)
		s.rules = append([]func(Request) Answer(nil), sc.Rules...)
		s.def = sc.Default
	}
	return s
}

// Reset clears the record, the script and the rules, and sets the default
// back to 200: the Server is as New left it, except for OnRequest, Lenient,
// Public and OAuth, which belong to the process that runs the Server
// rather than to a test; the token script, the tokens issued and the
// token requests are cleared too.
func (s *Server) Reset() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.script, s.rules, s.def, s.requests = nil, nil, Answer{}, nil
	s.tokenScript, s.tokenRequests = nil, nil
	clear(s.tokens)
	return s
}

// Lenient turns the refusals off: every request is answered from the
// script, whatever its path, method, credentials or body, as the mock did
// before it checked requests like the real API, and no event of a batch
// answered 2xx is rejected (Request.Rejected). Only a body over 64 MiB
// is still refused (413), to bound the memory the mock uses. Like
// OnRequest, it belongs to the Server rather than to a script: Reset and
// Load keep it.
//
// It is for a test that needs what the API would refuse to get an answer
// from the script: that a client which followed a redirect to a GET would
// have been told 200, say. A test of an SDK should leave it off, so that a
// misconfiguration (a wrong path, no write key) fails.
func (s *Server) Lenient() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lenient = true
	return s
}

// Public lets the control API, over a socket, answer a request whatever
// its Host: a mock reached by a container's or a machine's name. Without
// it, only a loopback Host (localhost, 127.0.0.0/8, [::1], any port) or
// the address the request came in on is answered, so that a web page
// cannot read the record (every write key sent) or reprogram the mock by
// DNS rebinding. A cross-site request (an Origin other than a loopback
// one or the mock's own, or Sec-Fetch-Site: cross-site) is refused either
// way. The tracking API and the in-memory RoundTrip never check either.
// Like Lenient, Reset and Load keep it.
func (s *Server) Public() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.public = true
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
// were answered 2xx, but for those the Server rejected past the 2,500th
// of a batch (Request.Rejected): what the real API would have taken.
func (s *Server) Delivered() map[string]int {
	out := map[string]int{}
	for _, r := range s.Requests() {
		if success(r.Status) {
			for _, id := range r.MessageIDs()[:len(r.Events)-r.Rejected] {
				out[id]++
			}
		}
	}
	return out
}

// Rejected counts, by messageId, the events the Server rejected in
// requests it answered 2xx, as the real API does past the 2,500th event of
// a batch (Request.Rejected): events a client that trusts the 200 has
// lost. A test of an SDK expects none.
func (s *Server) Rejected() map[string]int {
	out := map[string]int{}
	for _, r := range s.Requests() {
		for _, id := range r.MessageIDs()[len(r.Events)-r.Rejected:] {
			out[id]++
		}
	}
	return out
}

// success reports whether status is 2xx.
func success(status int) bool { return status >= 200 && status <= 299 }

// receive reads one request and picks its answer: a refusal if the real
// API would refuse it (unless lenient), else given if not nil, else the
// script's next answer, else the first rule's that does not defer, else
// the default.
//
// The request line and headers are checked first, the body once read. A
// CloseBeforeRead that is next when the headers have arrived closes
// before the body is read, so a body the API would refuse is never seen;
// a refused request takes no answer from the script.
func (s *Server) receive(r *http.Request, given *Answer) (Request, Answer) {
	if s.isToken(r) {
		return s.token(r)
	}
	req := newRequest(r)
	s.mu.Lock()
	lenient, oauth := s.lenient, s.oauth != nil
	s.mu.Unlock()
	limit := maxBatchBytes
	if lenient {
		limit = maxReadBytes
	}
	if !lenient {
		f := checkHead(r, oauth)
		if f == nil && oauth {
			f = s.checkBearer(r)
		}
		if f != nil {
			req.decode(r, limit) // for the record
			req.Err = f
			return req, f.answer()
		}
	}
	if a, ok := s.closeBeforeRead(given); ok {
		return req, a
	}
	if f := req.decode(r, limit); f != nil && (!lenient || f.status == http.StatusRequestEntityTooLarge) {
		return req, f.answer()
	}
	if oauth && !lenient && req.writeKey == "" {
		req.Err = refuse(http.StatusBadRequest, `a batch with an access token carries the write key in the body's "writeKey"`)
		return req, req.Err.(*refusal).answer()
	}
	return req, s.answer(req, given)
}

// closeBeforeRead takes the next answer if it is a CloseBeforeRead known
// before the body: given, the script's next, or the default when there is
// no script left and no rule (a rule needs the body).
func (s *Server) closeBeforeRead(given *Answer) (Answer, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case given != nil:
		if a := s.resolve(*given); a.action() == closeBeforeRead {
			return a, true
		}
	case len(s.script) > 0:
		if a := s.resolve(s.script[0]); a.action() == closeBeforeRead {
			s.script = s.script[1:]
			return a, true
		}
	case len(s.rules) == 0:
		if a := s.resolve(s.def); a.action() == closeBeforeRead {
			return a, true
		}
	}
	return Answer{}, false
}

// answer picks the answer to a request whose body has been read: given,
// if not nil, else the script's.
func (s *Server) answer(req Request, given *Answer) Answer {
	s.mu.Lock()
	defer s.mu.Unlock()
	if given != nil {
		return s.resolve(*given)
	}
	if len(s.script) > 0 {
		a := s.script[0]
		s.script = s.script[1:]
		return s.resolve(a)
	}
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

// record keeps req with the status answered, and the events a 2xx
// rejects, tells OnRequest and returns it. It runs before the answer is
// written, so a client that has its response finds its request in
// Requests.
func (s *Server) record(req Request, status int) Request {
	s.mu.Lock()
	req.Status = status
	switch {
	case s.oauth != nil && req.Path == TokenPath:
		s.tokenRequests = append(s.tokenRequests, req)
	case success(status) && !s.lenient:
		req.Rejected = max(len(req.Events)-maxBatchEvents, 0)
		fallthrough
	default:
		s.requests = append(s.requests, req)
	}
	f := s.onReq
	s.mu.Unlock()
	if f != nil {
		f(req)
	}
	return req
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
