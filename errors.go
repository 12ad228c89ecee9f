package analytics

import (
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
	// events or MaxQueueBytes bytes. Nothing already queued is touched.
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
)

// HTTPError is a non-2xx response; a failed event's error wraps the last
// one its batch got. Use errors.As.
type HTTPError = consumer.HTTPError

// TransportError is an attempt that got no response; its Phase says
// whether the request had been written. Use errors.As.
type TransportError = consumer.TransportError

// BatchError is the error a failed event is reported with: the reason (one
// of the sentinel errors, or the context's error of a Shutdown that ran out
// of time), how many attempts its batch made, and the last attempt's error.
type BatchError = consumer.BatchError

// Phase is how far a failed attempt got: see TransportError.
type Phase = consumer.Phase

// How far a request got before a transport error.
const (
	PhaseNotConnected = consumer.PhaseNotConnected
	PhaseConnected    = consumer.PhaseConnected
	PhaseWritten      = consumer.PhaseWritten
	PhaseResponding   = consumer.PhaseResponding
)

// FieldError is a message that failed validation or encoding at Enqueue. It
// names the message type and the field. errors.Is(err, ErrInvalidMessage)
// is true.
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

func shutdownCause(ctxErr error) error {
	if ctxErr == nil {
		ctxErr = context.Canceled
	}
	return &shutdownError{ctxErr}
}

type shutdownError struct{ ctxErr error }

// Error says the shutdown ended first, and why.
func (e *shutdownError) Error() string { return ErrShutdown.Error() + ": " + e.ctxErr.Error() }

// Unwrap returns ErrShutdown and the context's error.
func (e *shutdownError) Unwrap() []error { return []error{ErrShutdown, e.ctxErr} }
