package consumer

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

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
	return res, u.scrub.with(token).error(err)
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
	u.stats.attempts.Add(1)
	// Each attempt has its own deadline, from a context, so no transport
	// level retry hidden in net/http can outlive it, nor can the resend.
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	var phase progress
	req, err := u.newRequest(ctx, events, id, retryCount, auth, &phase)
	if err != nil {
		// The endpoint was validated by the analytics package; a request
		// that cannot even be built will not build on a retry either.
		return retry.Result{Outcome: retry.OutcomeFatal}, token, err
	}
	resp, err := u.client.Do(req)
	if err != nil && lostToClose(ctx, &phase, err) {
		resp, err = u.resend(req, len(events), retryCount, err)
	}
	if err != nil {
		p := phase.get()
		if p.Written() {
			u.stats.written.Add(1)
		} else {
			u.stats.notWritten.Add(1)
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
	u.stats.resends.Add(1)
	u.log.LogAttrs(req.Context(), slog.LevelDebug, "analytics: kept-alive connection closed without an answer, batch resent",
		slog.Int("attempt", retryCount+1),
		slog.Int("events", events),
		slog.String("error", errString(u.scrub.error(lost))),
	)
	again := req.Clone(req.Context())
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	again.Body = body
	return u.client.Do(again)
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
