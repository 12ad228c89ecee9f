package consumer

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

const (
	// excerptBytes is how much of an error response's body is kept.
	excerptBytes = 4 << 10
	// drainBytes is how much more is read and discarded so the connection
	// can be reused; a longer body costs a new connection, not a stall.
	drainBytes = 64 << 10
)

// readResponse classifies an attempt's response and, unless it is a success,
// describes it in an *HTTPError (SPEC §4), its body scrubbed of the write
// key and of token, the OAuth access token the request carried if any,
// which a refusal may be for (retry.ClassifyBearer). It reads at most an excerpt and a
// bounded drain of the body, then closes it, so the connection can be
// reused. ctx is the attempt's: every read ends by its deadline and by
// Shutdown whatever the transport does, since a 101 Switching Protocols
// hands back the raw connection as the body, which no context reaches.
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
	body, cut, bodyErr := excerpt(resp.Body)
	herr := &HTTPError{
		StatusCode: resp.StatusCode,
		Body:       u.scrub.with(token).excerpt(body, cut),
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

// excerpt reads the start of an error response's body, and reports
// whether it was cut at excerptBytes, and the error that ended the read
// early, if any.
func excerpt(body io.Reader) (string, bool, error) {
	b, err := io.ReadAll(io.LimitReader(body, excerptBytes))
	return strings.ToValidUTF8(string(b), "\uFFFD"), len(b) == excerptBytes, err
}

// drain reads what is left of a body, up to a bound, so that closing it
// returns the connection to the pool.
func drain(body io.Reader) {
	_, _ = io.CopyN(io.Discard, body, drainBytes)
}
