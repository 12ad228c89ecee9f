package analytics

import (
	"cmp"
	"context"
	"errors"
	"fmt"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/retry"
)

// Errors that Enqueue, Flush and Shutdown return, and that a failed event's
// error wraps. Match them with errors.Is.
var (
	// ErrClosed is returned by Enqueue and Flush once Close or Shutdown has
	// begun.
	ErrClosed = errors.New("analytics: client is closed")
	// ErrQueueFull is returned by Enqueue when the queue holds MaxQueueSize
	// events or MaxQueueBytes bytes, and wrapped, with the context's error,
	// by the error of an EnqueueContext whose context ended while it
	// waited for room. Nothing already queued is touched.
	ErrQueueFull = errors.New("analytics: queue is full")
	// ErrInvalidMessage is wrapped by every validation or encoding error of
	// Enqueue (a *FieldError names the field).
	ErrInvalidMessage = errors.New("analytics: invalid message")
	// ErrMessageTooLarge is returned by Enqueue for a message whose JSON is
	// larger than MaxMessageBytes.
	ErrMessageTooLarge = errors.New("analytics: message too large")

	// ErrRedirect: the tracking API answered a 3xx, or a user-supplied
	// http.Client followed a redirect that turned the POST into another
	// method. The *HTTPError has the Location.
	ErrRedirect = retry.ErrRedirect
	// ErrRetriesExhausted: the batch failed RetryCount+1 times on the
	// backoff path; the error also wraps the last attempt's error.
	ErrRetriesExhausted = retry.ErrRetriesExhausted
	// ErrBackoffBudgetExceeded: the next backoff wait did not fit in what
	// was left of MaxTotalBackoffDuration.
	ErrBackoffBudgetExceeded = retry.ErrBackoffBudgetExceeded
	// ErrRateLimitBudgetExceeded: the next Retry-After wait did not fit in
	// what was left of MaxRateLimitDuration.
	ErrRateLimitBudgetExceeded = retry.ErrRateLimitBudgetExceeded
	// ErrFatalStatus: the tracking API answered a status that no resend can
	// fix (4xx other than 408, 410, 413, 429, 460; 501, 505, 511), or 413
	// for a single event.
	ErrFatalStatus = retry.ErrFatalStatus
	// ErrRetriesStopped: Close or Shutdown began with WithCloseRetries
	// off, and the batch was waiting to retry or its attempt failed then;
	// the error also wraps the last attempt's error.
	ErrRetriesStopped = retry.ErrRetriesStopped
)

// HTTPError is a non-2xx response to an upload attempt: a
// failed event's error wraps the last one its batch got. Find it with
// errors.As. It is [consumer.HTTPError]; its Error method describes the
// response, e.g. `HTTP 503 Service Unavailable: "busy"`, and on a 401, 403
// or 404 says what to check.
//
// Its fields:
//   - StatusCode: the response status.
//   - Body: the start of the response body (at most 4 KiB), with the
//     write key removed.
//   - RetryAfter: the response's valid Retry-After, 0 when it had none or
//     it was invalid or ignored.
//   - Location: the redirect target of a 3xx, or the URL a user-supplied
//     http.Client was redirected to.
//   - Method: the method of the request that got the response when it was
//     not the SDK's POST (a followed 301, 302 or 303 makes it a GET).
//   - BodyErr: the error that cut reading the body's excerpt short, nil
//     when the excerpt was read.
//   - Check: what to check, when the SDK knows better than the status
//     says: with WithOAuth, the OAuth app's settings, or, in a
//     TokenError, the client's; "" when retry.Check's hint for the status
//     stands (the write key on a 401 or 403, the endpoint on a 404).
type HTTPError = consumer.HTTPError

// Phase is how far an attempt got before its transport error, from
// net/http/httptrace. It tells "sent 0 times"
// from "maybe delivered". It is [consumer.Phase]; its methods are Written,
// which reports whether the request had been completely written (so the
// server may have received it), and String, which names the phase.
type Phase = consumer.Phase

// How far a request got before a transport error.
const (
	// PhaseNotConnected: no connection was obtained (DNS failure, refused,
	// TLS handshake failure). The request was not written.
	PhaseNotConnected = consumer.PhaseNotConnected
	// PhaseConnected: a connection was obtained but the request was not
	// completely written (reset before or during the write).
	PhaseConnected = consumer.PhaseConnected
	// PhaseWritten: the request was written and no response byte arrived
	// (EOF, reset, TLS EOF without close_notify, timeout). The server may
	// have processed it.
	PhaseWritten = consumer.PhaseWritten
	// PhaseResponding: a response had started but broke off.
	PhaseResponding = consumer.PhaseResponding
)

// TransportError is an upload attempt that got no HTTP response: a
// failed event's error wraps it when its batch's last
// attempt ended so. Find it with errors.As. It is [consumer.TransportError];
// it unwraps to Err, its Written method reports whether the request had been
// completely written, and its Error reads like "transport error (request
// written, no response): EOF". Err's text differs across Go versions and
// platforms, so nothing in the SDK decides on it.
//
// Its fields:
//   - Phase: how far the request got.
//   - Err: the HTTP client's error, with the write key removed.
type TransportError = consumer.TransportError

// TokenError is an OAuth 2.0 token request that got no access token
// (WithOAuth), so the upload it was for was not sent: a failed
// event's error wraps it when its batch's last attempt ended so. Find it
// with errors.As. It is [consumer.TokenError]; it unwraps to Err, and its
// Error reads like "OAuth token request to https://oauth2.segment.io/token:
// HTTP 401 Unauthorized: ...; check the client id, ...": what to check
// follows what the token endpoint said.
//
// Its fields:
//   - URL: the token endpoint's.
//   - Err: the endpoint's answer, an *HTTPError (its Body is the
//     endpoint's error, its Check what to check), or the HTTP client's
//     error when it gave none, or what a 2xx answer lacked.
type TokenError = consumer.TokenError

// BatchError is the error a failed event is reported with: why its
// batch stopped (Reason), how many attempts the batch made, and the last
// attempt's error. It is [consumer.BatchError]; its Error reads like
// "analytics: retries exhausted after 11 attempts: HTTP 503 Service
// Unavailable".
//
// errors.Is matches Reason (one of the sentinel errors, such as
// ErrRetriesExhausted, or, for a Shutdown that ran out of time, ErrShutdown
// and the context's error) and anything Err wraps; errors.As finds the
// *HTTPError or *TransportError in Err.
//
// Its fields:
//   - Reason: why the batch stopped.
//   - Attempts: how many attempts were made; 0 means it was never sent.
//   - Err: the last attempt's error, an *HTTPError or a *TransportError,
//     or nil when no attempt was made.
type BatchError = consumer.BatchError

// OptionError is New's error for an invalid configuration: it names the
// option at fault and says why. Find it with errors.As.
type OptionError struct {
	// Option is the option's name without its With prefix, such as
	// "FlushAt", or "WriteKey" for an empty write key.
	Option string
	// Reason says what is wrong, with the bound and the value given, such
	// as "must be at least 1, got 0". It never shows the write key, nor an
	// endpoint's user information.
	Reason string
}

// Error reads like "analytics: invalid option FlushAt: must be at least 1,
// got 0".
func (e *OptionError) Error() string {
	return "analytics: invalid option " + e.Option + ": " + e.Reason
}

// invalidOption is the OptionError of option, with its reason formatted.
func invalidOption(option, format string, args ...any) error {
	return &OptionError{Option: option, Reason: fmt.Sprintf(format, args...)}
}

// FieldError is a message that failed validation or encoding at Enqueue. It
// names the message type and the field. errors.Is(err,
// ErrInvalidMessage) is true.
type FieldError struct {
	// Type is the message type, e.g. "analytics.Track".
	Type string
	// Name is the field, e.g. "Event", or a path such as
	// `Properties["price"]` for a value JSON cannot hold.
	Name string
	// Reason says what is wrong with it.
	Reason string
}

// Error reads like "analytics: invalid message: analytics.Track.Event:
// required".
func (e *FieldError) Error() string {
	return fmt.Sprintf("%v: %s.%s: %s", ErrInvalidMessage, e.Type, e.Name, e.Reason)
}

// Is makes errors.Is(err, ErrInvalidMessage) true.
func (e *FieldError) Is(target error) bool { return target == ErrInvalidMessage }

// ErrShutdown is wrapped by the error of every event that a Shutdown cut
// short when its context ended; that error also wraps the context's error
// (context.DeadlineExceeded or context.Canceled).
var ErrShutdown = errors.New("analytics: shutdown ended before delivery")

// shutdownCause is the error of the events a shutdown cut short when its
// context ended with ctxErr; nil is taken for context.Canceled.
func shutdownCause(ctxErr error) error {
	return &wrapped{ErrShutdown, cmp.Or(ctxErr, context.Canceled)}
}

// ErrSpool is wrapped by Enqueue's error when the spool (WithSpool) could
// not write the event: the error wraps the file system's cause too (no
// space, an I/O error, a read-only file system), which errors.Is finds
// (syscall.ENOSPC, say). The event is not accepted; what was accepted
// before is kept, and Enqueue works again once the disk does.
var ErrSpool = errors.New("analytics: the spool could not keep the event")

// wrapped is one of the sentinel errors with its cause, and matches both:
// a shutdown cut short (ErrShutdown and the context's error), an
// EnqueueContext that waited in vain (ErrQueueFull and the context's
// error), an event the spool could not keep (ErrSpool and the file
// system's error).
type wrapped struct{ sentinel, cause error }

// Error reads like "analytics: queue is full: context deadline exceeded",
// or "analytics: the spool could not keep the event: spool: write
// /dir/...seg: no space left on device".
func (e *wrapped) Error() string { return e.sentinel.Error() + ": " + e.cause.Error() }

// Unwrap returns the sentinel and the cause.
func (e *wrapped) Unwrap() []error { return []error{e.sentinel, e.cause} }
