// Package analytics records analytics events and delivers them, in
// batches, to a tracking API that speaks the Segment HTTP Tracking API.
//
//	client, err := analytics.New(writeKey)
//	if err != nil { ... }
//	defer client.Close()
//	client.Enqueue(analytics.Track{UserId: "u1", Event: "Signed Up"})
//
// Enqueue validates and encodes the event and returns at once, never
// waiting on the network or on a full queue; EnqueueContext waits for room
// instead, until its context ends. In the background the client cuts
// batches (every FlushAt events, every FlushInterval, or on Flush) and
// uploads up to MaxConcurrentRequests of them at a time. A retryable
// response with a valid Retry-After pauses the whole client as long as the
// server asked (capped), within MaxRateLimitDuration, without spending the
// batch's RetryCount; any other retryable outcome waits a jittered
// exponential backoff, RetryCount times at most, within
// MaxTotalBackoffDuration. A resend carries the same events, byte for byte.
//
// Every accepted event ends in exactly one Callback call, Success or
// Failure; Stats counts them; failures are logged, to slog.Default()
// unless WithLogger says otherwise. Close sends what is queued and waits
// for it, 30 s at most by default (WithCloseTimeout); Shutdown bounds the
// wait with a context. With WithSpool, events wait on disk until delivered, across
// restarts.
//
// The README (https://github.com/dualpath/analytics-go) has the options,
// the failure modes and the architecture. The packages below the root
// have APIs that stand on their own; imports go down:
//
//	analytics     the face: New, Enqueue, Flush, Close, options, messages,
//	  │           errors, Stats, callbacks
//	  ├─ spool       the durable log of WithSpool
//	  └─ consumer    the loop: cuts batches from the queue, uploads them,
//	       │         retries them and reports each event's outcome back
//	       ├─ queue       holds events in memory and splices batches
//	       └─ retry       every retry decision: classify, wait, budgets,
//	            │         and the gate each attempt passes (the
//	            │         rate-limit pause, the send rate)
//	            └─ retryafter   parses the Retry-After header
//
// Package v3compat is a drop-in for segmentio/analytics-go v3; package
// analyticstest is the mock tracking API, for tests.
package analytics
