package consumer

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// ready waits at the Uploader's gate (retry.Gate: the rate-limit pause,
// the send rate's turn, then the request slot, SPEC §5) until the batch's
// next attempt may go, and returns its slot and admission: slot itself
// when it still holds one of u's, else one taken once the gate lets the
// attempt through. A batch waits without a slot. It counts each wait at
// the pause in Counters.RateLimitedWaits. It returns the gate's error
// (retry.ErrRetriesStopped, ErrRateLimitBudgetExceeded or
// ErrBackoffBudgetExceeded) or the context's cause instead.
func (u *Uploader) ready(ctx context.Context, slot *slot, budget *retry.Budget) (*slot, retry.Admission, error) {
	var w retry.Waiter
	paused := false
	for {
		a, err := u.gate.Admit(time.Now(), &w, budget, u.holds(slot))
		switch {
		case err != nil:
		case a.Go:
			return slot, a, nil
		case a.Slot:
			if slot, err = u.acquire(ctx); err == nil {
				continue
			}
		default:
			slot.release()
			if a.Paused && !paused {
				u.count(&u.stats.RateLimitedWaits, 1)
			}
			paused = a.Paused
			if err = sleep(ctx, a.Until, a.Wake); err == nil {
				continue
			}
		}
		slot.release()
		u.gate.Leave(&w)
		return nil, retry.Admission{}, err
	}
}

// sleep waits until the time until (zero: no time), until wake is closed
// (nil: never), or until ctx ends; then it returns context.Cause(ctx).
// The gate passes a wake channel that is closed when waiting attempts
// should ask again; a backoff wait, the one closed when the API recovers,
// so that a batch sleeping through a long backoff goes at once (the send
// rate still spaces it). StopRetries closes both.
func sleep(ctx context.Context, until time.Time, wake <-chan struct{}) error {
	var due <-chan time.Time
	if !until.IsZero() {
		t := time.NewTimer(time.Until(until)) // past: fires at once
		defer t.Stop()
		due = t.C
	}
	select {
	case <-due:
	case <-wake:
	case <-ctx.Done():
	}
	return context.Cause(ctx)
}

// A slot is the right to have one request in flight: one of the
// MaxConcurrentRequests an Uploader allows, as a rate.Reservation carries
// its token (SPEC §4). acquire takes one and release gives it back. release
// acts once, however often it is called, so a slot is never given back
// twice; deliver releases the slot it is handed whatever happens, so
// none is kept. The zero slot, a nil *slot and a released one hold
// nothing. The Loop takes the first slot of each batch in the order it
// cuts them; its batch tokens (Loop.batches) are slots too. release is
// safe to call from any goroutine.
type slot struct {
	tokens   chan struct{} // the Uploader's (or the Loop's); nil for the zero slot
	released atomic.Bool
}

// acquire takes a request slot, waiting while MaxConcurrentRequests
// requests are in flight, or returns the context's cause: also when ctx
// ended as the slot came free, which the select may take as well, so that
// an attempt that waited for its slot past the end of ctx is not sent,
// and a Loop cancelled as it cut a batch cuts nothing more.
func (u *Uploader) acquire(ctx context.Context) (*slot, error) {
	select {
	case u.requests <- struct{}{}:
		if ctx.Err() == nil {
			return &slot{tokens: u.requests}, nil
		}
		<-u.requests
	case <-ctx.Done():
	}
	return nil, context.Cause(ctx)
}

// release gives the slot back. Only the first call on a slot that holds
// one does anything.
func (s *slot) release() {
	if s != nil && s.tokens != nil && s.released.CompareAndSwap(false, true) {
		<-s.tokens
	}
}

// holds reports whether s holds one of u's request slots.
func (u *Uploader) holds(s *slot) bool {
	return s != nil && s.tokens == u.requests && !s.released.Load()
}

// attempt sends the batch once on the turn the gate gave it, holding slot
// until the response has been read, then releasing it. id is the batch's
// messageId, when the body carries one. retryCount is the value of
// X-Retry-Count, 0 on a first attempt (no header). It returns the
// classified result and, unless the result is a success, an *HTTPError, a
// *TransportError or, with OAuth, a *TokenError, scrubbed of the write key
// and of the access token the attempt carried: every error of an attempt
// leaves through here.
//
// It reports the attempt's end to the gate however it ends, a panic in the
// transport (a user's http.RoundTripper) included, which the Loop recovers
// further up: a turn never reported would stay in flight for good, and a
// probe's would hold back every attempt after it. An attempt answered
// without a Retry-After ends the rate-limit episode; one that got no
// answer (a *TransportError) does not.
func (u *Uploader) attempt(ctx context.Context, slot *slot, turn retry.Turn, events [][]byte, id string, retryCount int) (res retry.Result, err error) {
	var o retry.Outcome // 0, not sent, unless send returns
	answered := false
	defer func() { u.gate.End(turn, time.Now(), o, answered) }()
	defer slot.release()
	var token string
	res, token, err = u.send(ctx, events, id, retryCount)
	_, noAnswer := err.(*TransportError)
	o, answered = res.Outcome, !noAnswer
	if err != nil {
		// Only an error carries what a server sent back: a success
		// builds no scrubber (with OAuth, one of the token's forms).
		err = u.scrub.with(token).error(err)
	}
	return res, err
}

// send is attempt before scrubbing: with OAuth, it gets the access token
// first (and returns it), and drops it if the upload was refused for it;
// it builds the request, sends it under the attempt's own deadline,
// resends it once if a kept-alive connection lost it (see lostToClose),
// and reads the response.
func (u *Uploader) send(ctx context.Context, events [][]byte, id string, retryCount int) (res retry.Result, token string, err error) {
	auth := u.auth
	if u.tokens != nil {
		if token, res, err = u.tokens.get(ctx); err != nil {
			return res, "", err
		}
		auth = "Bearer " + token
		defer func() {
			if res.Outcome == retry.OutcomeTokenRefused {
				u.tokens.drop(token)
			}
		}()
	}
	u.count(&u.stats.Attempts, 1)
	// Each attempt has its own deadline, from a context, so no transport
	// level retry hidden in net/http can outlive it, nor can the resend.
	ctx, cancel := context.WithTimeout(ctx, u.cfg.RequestTimeout)
	defer cancel()
	var phase progress
	req, err := u.newRequest(ctx, events, id, retryCount, auth, &phase)
	if err != nil {
		// The endpoint was validated by the analytics package; a request
		// that cannot even be built will not build on a retry either.
		return retry.Result{Outcome: retry.OutcomeFatal}, token, err
	}
	resp, err := u.cfg.Client.Do(req)
	if err != nil && lostToClose(ctx, &phase, err) {
		resp, err = u.resend(req, len(events), retryCount, err)
	}
	if err != nil {
		p := phase.get()
		if p.Written() {
			u.count(&u.stats.TransportErrors.Written, 1)
		} else {
			u.count(&u.stats.TransportErrors.NotWritten, 1)
		}
		return retry.NoResponse(), token, &TransportError{Phase: p, Err: err}
	}
	res, err = u.readResponse(ctx, resp, token)
	return res, token, err
}

// lostToClose reports whether a send that failed with err was lost to a
// kept-alive connection the server (or a proxy cutting idle connections)
// closed as the request went out on it, a race no liveness check can see:
// the connection was a reused HTTP/1 one, no byte of the response arrived,
// and neither a timeout nor the attempt's context (its deadline, Shutdown)
// ended it. Then nothing the server did says the API is unwell, and the
// batch, whose messageIds the API de-duplicates, may be sent again at once
// (SPEC §5, "Resend on a new connection").
func lostToClose(ctx context.Context, phase *progress, err error) bool {
	if ctx.Err() != nil || !phase.reusedHTTP1.Load() || phase.get() >= PhaseResponding {
		return false
	}
	var ne net.Error
	return !errors.As(err, &ne) || !ne.Timeout()
}

// resend sends req again, once, after lostToClose: the same bytes, sentAt
// and X-Retry-Count, since it is the same attempt, and under its deadline.
// net/http never pools a connection that failed, so the resend goes out on
// another one: a new one, unless the pool holds another idle connection.
// Whatever the resend's end, it is not resent again (RFC 9110 §9.2.2: a
// client should not retry a failed automatic retry).
func (u *Uploader) resend(req *http.Request, events, retryCount int, lost error) (*http.Response, error) {
	u.count(&u.stats.Resends, 1)
	u.cfg.Logger.LogAttrs(req.Context(), slog.LevelDebug, "analytics: kept-alive connection closed without an answer, batch resent",
		slog.Int("attempt", retryCount+1),
		slog.Int("events", events),
		slog.String("error", errString(u.scrub.cause(lost))),
	)
	again := req.Clone(req.Context())
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again.Body = body
	return u.cfg.Client.Do(again)
}

// trace records in phase how far each send of a request gets (SPEC §5,
// transport errors), and counts the length bytes of its body each time one
// is written.
func (u *Uploader) trace(phase *progress, length int) *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		// Each send asks for a connection: the first, a followed 307/308,
		// or net/http's own resend of a request nothing was written of.
		// What counts is how far the last one got, so each starts over,
		// and a redirect whose dial is refused is "not connected".
		GetConn: func(string) {
			phase.restart(PhaseNotConnected)
			phase.reusedHTTP1.Store(false)
		},
		GotConn: func(info httptrace.GotConnInfo) {
			phase.restart(PhaseConnected)
			phase.reusedHTTP1.Store(info.Reused && !isHTTP2(info.Conn))
		},
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				phase.reach(PhaseWritten)
				u.count(&u.stats.BytesSent, int64(length))
			}
		},
		GotFirstResponseByte: func() { phase.reach(PhaseResponding) },
	}
}

// isHTTP2 reports whether c speaks HTTP/2 (negotiated over TLS). The race
// lostToClose answers is HTTP/1's: an HTTP/2 connection carries many
// requests at once and says it is closing (GOAWAY), and a stream reset on
// it is the server's answer, which is no reason to send again at once
// (SPEC §5, "Resend on a new connection").
func isHTTP2(c net.Conn) bool {
	tc, ok := c.(*tls.Conn)
	return ok && tc.ConnectionState().NegotiatedProtocol == "h2"
}

// progress is how far the last send of an attempt got: the furthest Phase,
// and whether its connection was an HTTP/1 one that had served a request
// before. httptrace hooks may run on the transport's goroutines, hence the
// atomics.
type progress struct {
	p           atomic.Int32
	reusedHTTP1 atomic.Bool
}

func (pr *progress) reach(p Phase) {
	for {
		cur := pr.p.Load()
		if int32(p) <= cur || pr.p.CompareAndSwap(cur, int32(p)) {
			return
		}
	}
}

func (pr *progress) restart(p Phase) { pr.p.Store(int32(p)) }

func (pr *progress) get() Phase {
	if p := Phase(pr.p.Load()); p > 0 {
		return p
	}
	return PhaseNotConnected
}

const (
	// excerptBytes is how much of an error response's body is kept.
	excerptBytes = 4 << 10
	// drainBytes is how much more is read and discarded so the connection
	// can be reused; a longer body costs a new connection, not a stall.
	drainBytes = 64 << 10
)

// readResponse classifies an attempt's response and, unless it is a success,
// describes it in an *HTTPError (SPEC §4), its excerpt of the body cut
// clear of the write key and of token, the OAuth access token the request
// carried if any, which a refusal may be for (retry.ClassifyBearer);
// attempt scrubs the rest. It reads at most an excerpt and a bounded drain
// of the body, then closes it, so the connection can be reused. ctx is
// the attempt's: every read ends by its deadline and by Shutdown whatever
// the transport does, since a 101 Switching Protocols hands back the raw
// connection as the body, which no context reaches.
func (u *Uploader) readResponse(ctx context.Context, resp *http.Response, token string) (retry.Result, error) {
	defer resp.Body.Close()
	stop := context.AfterFunc(ctx, func() { resp.Body.Close() })
	defer stop()

	// A user-supplied client may follow a 301/302/303, which turns the POST
	// into a bodiless GET; whatever that GET answered, the batch was not
	// delivered.
	if resp.Request != nil && resp.Request.Method != http.MethodPost {
		drain(resp.Body)
		return retry.Result{Outcome: retry.OutcomeRedirect}, &HTTPError{
			StatusCode: resp.StatusCode,
			Method:     resp.Request.Method,
			Location:   resp.Request.URL.Redacted(),
		}
	}

	classify, bearer := retry.Classify, token != ""
	if bearer {
		classify = retry.ClassifyBearer
	}
	res := classify(resp.StatusCode, resp.Header, time.Now())
	if res.Outcome == retry.OutcomeSuccess {
		drain(resp.Body)
		return res, nil
	}
	// The start of the body, and whether it was cut at excerptBytes.
	body, bodyErr := io.ReadAll(io.LimitReader(resp.Body, excerptBytes))
	herr := &HTTPError{
		StatusCode: resp.StatusCode,
		Body:       u.scrub.with(token).excerpt(strings.ToValidUTF8(string(body), "\uFFFD"), len(body) == excerptBytes),
		RetryAfter: res.RetryAfter,
		BodyErr:    bodyErr,
	}
	if bearer {
		herr.Check = retry.CheckOAuth(resp.StatusCode, resp.Header)
	}
	if res.Outcome == retry.OutcomeRedirect {
		herr.Location = resp.Header.Get("Location")
	}
	drain(resp.Body)
	return res, herr
}

// drain reads what is left of a body, up to a bound, so that closing it
// returns the connection to the pool.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, drainBytes)
}
