package analytics

import (
	"context"
	"errors"
	"sync/atomic"
)

// Stats is a snapshot of a client's counters since New. Event counts
// balance: every accepted event is, at any moment, queued, in flight,
// delivered or failed.
type Stats struct {
	// Enqueued counts events Enqueue accepted.
	Enqueued int64
	// Rejected counts events Enqueue refused, by reason.
	Rejected RejectedStats
	// Delivered counts events the tracking API accepted.
	Delivered int64
	// Failed counts events reported to Callback.Failure, by reason.
	Failed FailedStats

	// Batches counts batches cut from the queue.
	Batches int64
	// BatchesDelivered and BatchesFailed count batches by final outcome;
	// each half of a split batch counts as a batch.
	BatchesDelivered int64
	BatchesFailed    int64
	// Splits counts batches split in two after a 413.
	Splits int64
	// Attempts counts HTTP requests sent, first attempts and retries.
	Attempts int64
	// Retries counts retries by path.
	Retries RetryStats
	// RateLimitedWaits counts attempts held back by the client-wide pause
	// that a Retry-After starts, the rate-limited batch's own included.
	RateLimitedWaits int64
	// BytesSent counts request body bytes written, after compression.
	BytesSent int64
	// TransportErrors counts attempts that got no response, by whether the
	// request had been written.
	TransportErrors TransportErrorStats

	// QueueDepth and QueueBytes are the events and encoded bytes queued now.
	QueueDepth int
	QueueBytes int
	// InFlight is the events in batches being uploaded or waiting to retry.
	InFlight int64
}

// RejectedStats counts events Enqueue refused, by the error it returned.
type RejectedStats struct {
	Invalid   int64 // ErrInvalidMessage
	TooLarge  int64 // ErrMessageTooLarge
	QueueFull int64 // ErrQueueFull
	Closed    int64 // ErrClosed
}

// FailedStats counts failed events by the reason of their error.
type FailedStats struct {
	RetriesExhausted        int64 // ErrRetriesExhausted
	BackoffBudgetExceeded   int64 // ErrBackoffBudgetExceeded
	RateLimitBudgetExceeded int64 // ErrRateLimitBudgetExceeded
	FatalStatus             int64 // ErrFatalStatus
	Redirect                int64 // ErrRedirect
	Shutdown                int64 // Shutdown's context ended first
	Other                   int64 // anything else
}

// RetryStats counts retries by path.
type RetryStats struct {
	Backoff   int64 // counted retries after a failure without Retry-After
	RateLimit int64 // uncounted retries after a valid Retry-After
}

// TransportErrorStats counts attempts that got no HTTP response.
type TransportErrorStats struct {
	NotWritten int64 // the request never left: nothing was sent
	Written    int64 // the request was written: the server may have it
}

// counters are the client's own; the uploader keeps the per-attempt ones.
type counters struct {
	enqueued, delivered, inFlight                atomic.Int64
	rejInvalid, rejTooLarge, rejFull, rejClosed  atomic.Int64
	batches                                      atomic.Int64
	failExhausted, failBackoff, failRateLimit    atomic.Int64
	failFatal, failRedirect, failShutdown, other atomic.Int64
}

// failed counts n events failed with err under the reason it wraps.
func (c *counters) failed(err error, n int64) {
	var reason *atomic.Int64
	switch {
	case errors.Is(err, ErrRetriesExhausted):
		reason = &c.failExhausted
	case errors.Is(err, ErrBackoffBudgetExceeded):
		reason = &c.failBackoff
	case errors.Is(err, ErrRateLimitBudgetExceeded):
		reason = &c.failRateLimit
	case errors.Is(err, ErrFatalStatus):
		reason = &c.failFatal
	case errors.Is(err, ErrRedirect):
		reason = &c.failRedirect
	case errors.Is(err, errShutdown):
		reason = &c.failShutdown
	default:
		reason = &c.other
	}
	reason.Add(n)
}

// errShutdown is wrapped by the error of events that Shutdown's context cut
// short; it also wraps that context's error.
var errShutdown = errors.New("analytics: shutdown ended before delivery")

func shutdownCause(ctxErr error) error {
	if ctxErr == nil {
		ctxErr = context.Canceled
	}
	return &shutdownError{ctxErr}
}

type shutdownError struct{ ctxErr error }

// Error says the shutdown ended first, and why.
func (e *shutdownError) Error() string { return errShutdown.Error() + ": " + e.ctxErr.Error() }

// Unwrap returns errShutdown and the context's error.
func (e *shutdownError) Unwrap() []error { return []error{errShutdown, e.ctxErr} }

// Stats returns a snapshot of the client's counters. It is safe to call at
// any time, from any goroutine.
func (c *Client) Stats() Stats {
	u := c.up.Counters()
	return Stats{
		Enqueued: c.stats.enqueued.Load(),
		Rejected: RejectedStats{
			Invalid:   c.stats.rejInvalid.Load(),
			TooLarge:  c.stats.rejTooLarge.Load(),
			QueueFull: c.stats.rejFull.Load(),
			Closed:    c.stats.rejClosed.Load(),
		},
		Delivered: c.stats.delivered.Load(),
		Failed: FailedStats{
			RetriesExhausted:        c.stats.failExhausted.Load(),
			BackoffBudgetExceeded:   c.stats.failBackoff.Load(),
			RateLimitBudgetExceeded: c.stats.failRateLimit.Load(),
			FatalStatus:             c.stats.failFatal.Load(),
			Redirect:                c.stats.failRedirect.Load(),
			Shutdown:                c.stats.failShutdown.Load(),
			Other:                   c.stats.other.Load(),
		},
		Batches:          c.stats.batches.Load(),
		BatchesDelivered: u.BatchesDelivered,
		BatchesFailed:    u.BatchesFailed,
		Splits:           u.Splits,
		Attempts:         u.Attempts,
		Retries:          RetryStats{Backoff: u.BackoffRetries, RateLimit: u.RateLimitRetries},
		RateLimitedWaits: u.RateLimitedWaits,
		BytesSent:        u.BytesSent,
		TransportErrors:  TransportErrorStats{NotWritten: u.TransportErrorsNotWritten, Written: u.TransportErrorsWritten},
		QueueDepth:       c.queue.Len(),
		QueueBytes:       c.queue.Bytes(),
		InFlight:         c.stats.inFlight.Load(),
	}
}
