// Package analytics records analytics events and delivers them, in
// batches, to a tracking API that speaks the Segment HTTP Tracking API.
//
//	client, err := analytics.New(writeKey)
//	if err != nil { ... }
//	defer client.Close()
//	client.Enqueue(analytics.Track{UserId: "u1", Event: "Signed Up"})
//
// Enqueue validates and encodes the event and returns at once; it never
// blocks on the network or on a full queue. EnqueueContext waits for room
// in a full queue instead, until its context ends. In the background the
// client
// cuts batches (every FlushAt events, every FlushInterval, or on Flush) and
// uploads up to MaxConcurrentRequests of them at a time.
//
// Each batch runs a retry loop with two paths. A retryable response with a
// valid Retry-After takes the rate-limit path: the whole client waits as
// long as the server asked (capped), without spending the batch's retry
// count, within MaxRateLimitDuration. Every other retryable outcome takes
// the backoff path: jittered exponential waits, RetryCount retries at most,
// within MaxTotalBackoffDuration. Every resend carries X-Retry-Count, and
// the events and their messageIds are byte-identical on every attempt.
//
// Every accepted event ends in exactly one Callback call, Success or
// Failure; Stats reports counters; failures are logged, to slog.Default()
// unless WithLogger says otherwise. Close sends what is queued and waits
// for it, 30 s at most by default (WithCloseTimeout); Shutdown bounds the
// wait with a context.
//
// The work is split the way data flows: package queue holds events and cuts
// batches, package consumer uploads a batch and runs its loop, package retry
// makes every retry decision, and package retryafter parses the header.
package analytics
