package consumer

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/dualpath/analytics-go/retry"
)

const (
	// excerptBytes is how much of an error response's body is kept.
	excerptBytes = 4 << 10
	// drainBytes is how much more is read and discarded so the connection
	// can be reused; a longer body costs a new connection, not a stall.
	drainBytes = 64 << 10
)

// attempt sends the batch once. retryCount is the value of X-Retry-Count,
// 0 on a first attempt (no header). It returns the classified result and,
// unless the result is Success, an *HTTPError or *TransportError, scrubbed
// of the write key: every error of an attempt leaves through here.
func (u *Uploader) attempt(ctx context.Context, events [][]byte, retryCount int) (retry.Result, error) {
	res, err := u.send(ctx, events, retryCount)
	return res, u.scrub.error(err)
}

// send is attempt before scrubbing.
func (u *Uploader) send(ctx context.Context, events [][]byte, retryCount int) (retry.Result, error) {
	u.stats.attempts.Add(1)
	body := newBatchBody(events, u.context, u.clock.Now())
	var reader func() io.Reader
	length := body.Len()
	if u.gzip {
		payload := compress(body)
		length = len(payload)
		reader = func() io.Reader { return bytes.NewReader(payload) }
	} else {
		reader = body.Reader
	}

	// Each attempt has its own deadline, from a context, so no transport
	// level retry hidden in net/http can outlive it.
	actx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	var phase progress
	trace := &httptrace.ClientTrace{
		// Each send asks for a connection: the first, a followed 307/308,
		// or net/http's own resend of a request nothing was written of.
		// What counts is how far the last one got, so each starts over,
		// and a redirect whose dial is refused is "not connected".
		GetConn: func(string) { phase.restart(PhaseNotConnected) },
		GotConn: func(httptrace.GotConnInfo) { phase.restart(PhaseConnected) },
		WroteRequest: func(info httptrace.WroteRequestInfo) {
			if info.Err == nil {
				phase.reach(PhaseWritten)
				u.stats.bytesSent.Add(int64(length))
			}
		},
		GotFirstResponseByte: func() { phase.reach(PhaseResponding) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(actx, trace), http.MethodPost, u.url, nil)
	if err != nil {
		// The endpoint was validated by the analytics package; a request
		// that cannot even be built will not build on a retry either.
		return retry.Result{Outcome: retry.OutcomeFatal}, err
	}
	// GetBody lets net/http send the body again after a 307/308.
	req.Body, req.ContentLength = io.NopCloser(reader()), int64(length)
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(reader()), nil }
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", u.auth)
	req.Header.Set("User-Agent", u.userAgent)
	if u.gzip {
		req.Header.Set("Content-Encoding", "gzip")
	}
	if retryCount > 0 {
		req.Header.Set("X-Retry-Count", strconv.Itoa(retryCount))
	}

	resp, err := u.client.Do(req)
	if err != nil {
		p := phase.get()
		if p.Written() {
			u.stats.written.Add(1)
		} else {
			u.stats.notWritten.Add(1)
		}
		return retry.NoResponse(), &TransportError{Phase: p, Err: err}
	}
	defer resp.Body.Close()
	// Reading the body ends by the attempt's deadline and by Shutdown
	// whatever the transport does: a 101 Switching Protocols hands back
	// the raw connection as the body, which no context reaches.
	stop := context.AfterFunc(actx, func() { resp.Body.Close() })
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

	res := retry.Classify(resp.StatusCode, resp.Header, u.clock.Now())
	if res.Outcome == retry.OutcomeSuccess {
		drain(resp.Body)
		return res, nil
	}
	herr := &HTTPError{
		StatusCode: resp.StatusCode,
		Body:       u.scrub.excerpt(excerpt(resp.Body)),
		RetryAfter: res.RetryAfter,
	}
	if res.Outcome == retry.OutcomeRedirect {
		herr.Location = resp.Header.Get("Location")
	}
	drain(resp.Body)
	return res, herr
}

// excerpt reads the start of an error response's body, and reports
// whether it was cut at excerptBytes.
func excerpt(body io.Reader) (string, bool) {
	b, _ := io.ReadAll(io.LimitReader(body, excerptBytes))
	return strings.ToValidUTF8(string(b), "\uFFFD"), len(b) == excerptBytes
}

// drain reads what is left of a body, up to a bound, so that closing it
// returns the connection to the pool.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, drainBytes)
}

// progress is the furthest Phase an attempt reached. httptrace hooks may run
// on the transport's goroutines, hence the atomic.
type progress struct{ p atomic.Int32 }

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
