package consumer

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// HTTPError is a non-2xx response to an upload attempt. A
// failed event's error wraps the last one its batch got: find it with
// errors.As. The analytics package names it analytics.HTTPError.
type HTTPError struct {
	// StatusCode is the response status.
	StatusCode int
	// Body is the start of the response body (at most 4 KiB), with the
	// write key removed.
	Body string
	// RetryAfter is the response's valid Retry-After, 0 when it had none or
	// it was invalid or ignored (on a non-retryable status).
	RetryAfter time.Duration
	// Location is the redirect target of a 3xx, or the URL a user-supplied
	// http.Client was redirected to.
	Location string
	// Method is the method of the request that got this response when it
	// was not the POST the SDK sent (a user-supplied http.Client that
	// follows a 301, 302 or 303 turns it into a GET); empty otherwise.
	Method string
	// BodyErr is the error that cut reading the body's excerpt short, as
	// the response body returned it (with the write key removed); nil when
	// the excerpt was read. It does not change the outcome, which the
	// status decides.
	BodyErr error
	// Check is what to check, when the SDK knows better than the status
	// alone says: with OAuth, the OAuth app's settings on an upload
	// refused for its token (retry.CheckOAuth); from a token endpoint, the
	// client's (retry.CheckTokenEndpoint). "": what retry.Check says.
	Check string
}

// Error describes the response: status, redirect target, Retry-After, the
// start of the body, and what to check (Check, else retry.Check: on a 401,
// 403 or 404), e.g. `HTTP 503 Service Unavailable: "busy"` or `HTTP 401
// Unauthorized: "bad key"; check the write key`.
func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.Method != "" {
		fmt.Fprintf(&b, " to a %s after a redirect", e.Method)
	}
	if e.Location != "" {
		fmt.Fprintf(&b, " (Location: %s)", e.Location)
	}
	if e.RetryAfter > 0 {
		fmt.Fprintf(&b, " (Retry-After: %s)", e.RetryAfter)
	}
	if body := strings.TrimSpace(e.Body); body != "" {
		const show = 200
		if len(body) > show {
			body = body[:show] + "..."
		}
		fmt.Fprintf(&b, ": %q", body)
	}
	if check := cmp.Or(e.Check, retry.Check(e.StatusCode)); check != "" {
		b.WriteString("; " + check)
	}
	return b.String()
}

// TokenError is an OAuth 2.0 token request that got no access token,
// so the upload it was for was not sent: a failed event's error
// wraps it when its batch's last attempt ended so. Find it with
// errors.As. The analytics package names it analytics.TokenError.
type TokenError struct {
	// URL is the token endpoint's.
	URL string
	// Err is why: the endpoint's answer, an *HTTPError (its Body is the
	// endpoint's error, with the JWT and the write key removed), or the
	// HTTP client's error when it gave none, or what a 2xx lacked.
	Err error
}

// Error reads like "OAuth token request to https://oauth2.segment.io/token:
// HTTP 401 Unauthorized: ...; check the client id, ...".
func (e *TokenError) Error() string {
	s := "OAuth token request to " + e.URL + ": " + errString(e.Err)
	if _, answered := e.Err.(*HTTPError); !answered {
		s += "; " + retry.CheckTokenEndpoint(0)
	}
	return s
}

// Unwrap returns Err.
func (e *TokenError) Unwrap() error { return e.Err }

// Phase is how far an attempt got before its transport error, from
// net/http/httptrace. It tells "sent 0 times" from "maybe delivered".
type Phase int

// How far a request got before a transport error.
const (
	// PhaseNotConnected: no connection was obtained (DNS failure, refused,
	// TLS handshake failure). The request was not written.
	PhaseNotConnected Phase = iota + 1
	// PhaseConnected: a connection was obtained but the request was not
	// completely written (reset before or during the write).
	PhaseConnected
	// PhaseWritten: the request was written and no response byte arrived
	// (EOF, reset, TLS EOF without close_notify, timeout). The server may
	// have processed it.
	PhaseWritten
	// PhaseResponding: a response had started but broke off.
	PhaseResponding
)

// Written reports whether the request had been completely written, so the
// server may have received it.
func (p Phase) Written() bool { return p >= PhaseWritten }

var phaseNames = [...]string{
	PhaseNotConnected: "not connected, request not written",
	PhaseConnected:    "connected, request not written",
	PhaseWritten:      "request written, no response",
	PhaseResponding:   "response started",
}

// String names the phase, e.g. "request written, no response".
func (p Phase) String() string {
	if p > 0 && int(p) < len(phaseNames) {
		return phaseNames[p]
	}
	return "unknown phase"
}

// TransportError is an upload attempt that got no HTTP response: a
// failed event's error wraps it when its batch's last
// attempt ended so. Find it with errors.As. Err's text differs across Go
// versions and platforms, so nothing in the SDK decides on it. The
// analytics package names it analytics.TransportError.
type TransportError struct {
	// Phase is how far the request got.
	Phase Phase
	// Err is the HTTP client's error, with the write key removed.
	Err error
}

// Error says how far the request got and what went wrong, e.g.
// "transport error (request written, no response): EOF".
func (e *TransportError) Error() string {
	return fmt.Sprintf("transport error (%s): %v", e.Phase, e.Err)
}

// Unwrap returns the HTTP client's error.
func (e *TransportError) Unwrap() error { return e.Err }

// Written reports whether the request had been completely written, so the
// server may have received it.
func (e *TransportError) Written() bool { return e.Phase.Written() }

// BatchError is the error a failed event is reported with: why
// its batch stopped (Reason), how many attempts the batch made, and the
// last attempt's error. The analytics package names it
// analytics.BatchError.
//
// errors.Is matches Reason (one of package retry's sentinel errors, such
// as retry.ErrRetriesExhausted, or, when the context of Uploader.Deliver
// ended first, context.Cause of it: for a Shutdown that ran out of time,
// the analytics package's ErrShutdown and the context's error) and
// anything Err wraps; errors.As finds the *HTTPError or *TransportError in
// Err.
type BatchError struct {
	// Reason is why the batch stopped.
	Reason error
	// Attempts is how many attempts were made; 0 means it was never sent.
	Attempts int
	// Err is the last attempt's error: an *HTTPError or a
	// *TransportError, or nil when no attempt was made.
	Err error
}

// Error reads like "analytics: retries exhausted after 11 attempts: HTTP 503
// Service Unavailable".
func (e *BatchError) Error() string {
	reason := "analytics: batch failed"
	if e.Reason != nil {
		reason = e.Reason.Error()
		if !strings.HasPrefix(reason, "analytics:") {
			reason = "analytics: " + reason
		}
	}
	var b strings.Builder
	b.WriteString(reason)
	switch e.Attempts {
	case 0:
		b.WriteString(" (never sent)")
	case 1:
		b.WriteString(" after 1 attempt")
	default:
		fmt.Fprintf(&b, " after %d attempts", e.Attempts)
	}
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns Reason and Err, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	return slices.DeleteFunc([]error{e.Reason, e.Err}, func(err error) bool { return err == nil })
}
