package retry

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/dualpath/analytics-go/retryafter"
)

// Outcome is how one upload attempt ended, seen by the retry policy: a row
// of SPEC §5's table, or the 413 exception below it.
type Outcome int

// The outcomes. Each name says it is an Outcome, so that OutcomeRedirect
// is not read as ErrRedirect, nor OutcomeSuccess as a delivery.
const (
	// OutcomeSuccess is a 2xx response.
	OutcomeSuccess Outcome = iota + 1
	// OutcomeRateLimited is a retryable status that carried a valid
	// Retry-After.
	OutcomeRateLimited
	// OutcomeRetryable is a retryable status without a valid Retry-After,
	// or a transport error (no response at all).
	OutcomeRetryable
	// OutcomeTooLarge is a 413: the server takes less than the batch; the
	// batch is split rather than resent whole.
	OutcomeTooLarge
	// OutcomeRedirect is a 3xx that reached the SDK: a POST must not be
	// turned into a GET, so it is a failure, never followed (SPEC §4).
	OutcomeRedirect
	// OutcomeFatal is any other status: 1xx, other 4xx, 501, 505, 511.
	OutcomeFatal
	// OutcomeTokenRefused is an upload refused for its OAuth 2.0 access
	// token, not for its batch (ClassifyBearer): it is sent again, once,
	// with a fresh token.
	OutcomeTokenRefused
)

var outcomeNames = [...]string{
	OutcomeSuccess:      "success",
	OutcomeRateLimited:  "rate-limited",
	OutcomeRetryable:    "retryable",
	OutcomeTooLarge:     "too large",
	OutcomeRedirect:     "redirect",
	OutcomeFatal:        "fatal",
	OutcomeTokenRefused: "token refused",
}

// String returns the outcome's name, for logs.
func (o Outcome) String() string {
	if o > 0 && int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "unknown"
}

// Result is the classified end of one attempt.
type Result struct {
	// Outcome is how the attempt ended.
	Outcome Outcome
	// RetryAfter is the server's valid Retry-After, set only when Outcome is
	// OutcomeRateLimited.
	RetryAfter time.Duration
}

// NoResponse returns the Result of an attempt that got no HTTP response: a
// transport error or a per-attempt timeout. It is retried on the backoff
// path, whether or not the request had been written, because every event
// carries a messageId that the tracking API de-duplicates (SPEC §5,
// transport errors).
func NoResponse() Result { return Result{Outcome: OutcomeRetryable} }

// isRetryableStatus reports whether status is worth sending again: 408,
// 410, 429, 460, and 500–599 except 501 (Not Implemented), 505 (HTTP
// Version Not Supported) and 511 (Network Authentication Required), which
// no resend can fix (SPEC §5).
func isRetryableStatus(status int) bool {
	switch status {
	case http.StatusRequestTimeout, http.StatusGone, http.StatusTooManyRequests, 460:
		return true
	case http.StatusNotImplemented, http.StatusHTTPVersionNotSupported, http.StatusNetworkAuthenticationRequired:
		return false
	}
	return status >= 500 && status <= 599
}

// RejectsCredentials reports whether status says the request's
// credentials, the write key, were refused: 401 Unauthorized or 403
// Forbidden. Both are fatal like any other 4xx; this picks what a log says
// about them, not what happens.
func RejectsCredentials(status int) bool {
	return status == http.StatusUnauthorized || status == http.StatusForbidden
}

// RejectsEndpoint reports whether status says the request reached no
// tracking API that takes it: 404 Not Found, for a path that is not the
// API's (an endpoint that is not its base URL) or, at a real gateway,
// "source is disabled" for a write key whose source is turned off. It is
// fatal like any other 4xx; this picks what a log and an error say.
func RejectsEndpoint(status int) bool { return status == http.StatusNotFound }

// Check returns what to check when a request is refused with status, for
// the log and the error to say: the write key on 401 or 403, the
// endpoint and the source on 404; "" for any other status (SPEC §8).
func Check(status int) string {
	switch {
	case RejectsCredentials(status):
		return "check the write key"
	case RejectsEndpoint(status):
		return "check the endpoint URL and path (batches go to the endpoint + /v1/batch) and that the write key's source is enabled"
	}
	return ""
}

// MayFollowRedirect reports whether a redirect of this status may be
// followed: only 307 and 308, which keep the method and the body. A 301,
// 302 or 303 would turn the POST into a bodiless GET (SPEC §4).
func MayFollowRedirect(status int) bool {
	return status == http.StatusTemporaryRedirect || status == http.StatusPermanentRedirect
}

// Classify classifies an HTTP response by its status and header. now is the
// local clock, the reference for an HTTP-date Retry-After when the response
// has no valid Date. Retry-After is read only on a retryable status; on any
// other status it is ignored (SPEC §5). Classify is safe for concurrent use.
func Classify(status int, header http.Header, now time.Time) Result {
	switch {
	case status >= 200 && status <= 299:
		return Result{Outcome: OutcomeSuccess}
	case status == http.StatusRequestEntityTooLarge:
		return Result{Outcome: OutcomeTooLarge}
	case status >= 300 && status <= 399:
		return Result{Outcome: OutcomeRedirect}
	case isRetryableStatus(status):
		if d, ok := retryafter.FromHeader(header, now); ok {
			return Result{Outcome: OutcomeRateLimited, RetryAfter: d}
		}
		return Result{Outcome: OutcomeRetryable}
	}
	return Result{Outcome: OutcomeFatal}
}

// ClassifyBearer is Classify for an upload that carried an OAuth 2.0
// access token (Authorization: Bearer, SPEC §4): a 401, 403 or 511, or a
// 400 whose WWW-Authenticate challenges Bearer (RFC 6750 §3: a token
// missing or malformed), is OutcomeTokenRefused, a refusal of the token,
// which a fresh one may cure. A 400 without that challenge is the batch's,
// fatal as Classify has it, so that a payload the API refuses is not sent
// again. Segment's SDKs drop their token on a 400, 401, 403 or 511 alike;
// they cannot tell a payload's 400 from a token's, and this can only by
// the challenge.
func ClassifyBearer(status int, header http.Header, now time.Time) Result {
	if status == http.StatusUnauthorized || status == http.StatusForbidden || status == http.StatusNetworkAuthenticationRequired ||
		status == http.StatusBadRequest && strings.HasPrefix(strings.ToLower(header.Get("WWW-Authenticate")), "bearer") {
		return Result{Outcome: OutcomeTokenRefused}
	}
	return Classify(status, header, now)
}

// ClassifyTokenAnswer classifies an OAuth 2.0 token endpoint's answer as
// Classify does an upload's, but for a 429 without a valid Retry-After:
// its wait comes from X-RateLimit-Reset (see rateLimitReset), and takes
// the rate-limit path. So a token endpoint that fails spends the budgets
// of the batches that wait for its token, on the same paths (SPEC §5).
func ClassifyTokenAnswer(status int, header http.Header, now time.Time) Result {
	r := Classify(status, header, now)
	if status == http.StatusTooManyRequests && r.Outcome == OutcomeRetryable {
		if d, ok := rateLimitReset(header, now); ok {
			return Result{Outcome: OutcomeRateLimited, RetryAfter: d}
		}
	}
	return r
}

// rateLimitReset reads X-RateLimit-Reset, which rate limiters write in
// several ways: delta-seconds (Segment's Python SDK reads the token
// endpoint's so), a Unix time in seconds or in milliseconds (its Node
// SDK), an HTTP-date (Segment's Public API). A whole number of at least
// 10^8 is a Unix time (a delay of 3 years is none), in seconds below 10^11
// (the year 5138) and in milliseconds from it (1973 on); anything else is
// read as a Retry-After is. A time counts from the answer's Date, the
// server's clock, when retryafter.ServerDate reads one, else from now.
func rateLimitReset(h http.Header, now time.Time) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("X-RateLimit-Reset"))
	ref, ok := retryafter.ServerDate(h, now)
	if !ok {
		ref = now
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 1e8 {
		at := time.Unix(n, 0)
		if n >= 1e11 {
			at = time.UnixMilli(n)
		}
		d := at.Sub(ref)
		return d, d > 0
	}
	d, err := retryafter.Parse(v, ref)
	return d, err == nil
}

// CheckOAuth returns what to check when an upload is refused for its
// OAuth access token even with a fresh one (OutcomeTokenRefused twice);
// "" for any other status.
func CheckOAuth(status int, header http.Header) string {
	if ClassifyBearer(status, header, time.Time{}).Outcome != OutcomeTokenRefused {
		return ""
	}
	return "check that the source is connected to the OAuth app and has OAuth enabled, that the app's scope has tracking_api:write, " +
		"that the auth server is in the endpoint's region, and that the write key is the source's"
}

// CheckTokenEndpoint returns what to check when an OAuth token endpoint
// gave no token, for the log and the error to say: its settings for a
// refusal (a 4xx but 404, 408 and 429), its URL for no answer (status 0),
// a 404 or a 5xx; "" for a 408 or a 429.
func CheckTokenEndpoint(status int) string {
	switch {
	case status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		return ""
	case status >= 400 && status <= 499 && status != http.StatusNotFound:
		return "check the client id, the key id and that its public key is registered in the OAuth app and matches the private key, " +
			"that the auth server is the app's region's (https://oauth2.segment.io, or https://oauth2.eu1.segmentapis.com in the EU), " +
			"that the clock is right, and that the OAuth app is enabled"
	}
	return "check that the auth server URL is right (tokens come from it + /token) and reachable"
}
