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
// client cuts batches (every FlushAt events, every FlushInterval, or on
// Flush) and uploads up to MaxConcurrentRequests of them at a time.
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
// The work is split the way data flows (Enqueue → queue → consumer →
// HTTP; outcomes flow back as callbacks and stats), imports going down:
//
//	analytics     the face: New, Enqueue, Flush, Close, options, messages
//	  │           and their encoding, errors, Stats, callbacks; and the
//	  │           intake, memory-only or through the spool, chosen in New
//	  ├─ spool       the durable log of WithSpool (SPEC §11)
//	  └─ consumer    the loop: cuts batches from the queue, uploads them,
//	       │         retries them and reports each event's outcome back
//	       ├─ queue       holds events in memory and splices batches (§3)
//	       └─ retry       every retry decision: classify, wait, budgets,
//	            │         the rate-limit pause, the send rate (§5)
//	            └─ retryafter   parses the Retry-After header (§6)
//
// The root builds the queue its intake fills and the consumer empties, and
// asks retry for the hints of its failure log. Under internal/, plumbing
// several packages share and no user imports: decimal reads decimal
// literals exactly (OptionsFromEnv, the e2e CLI), jsontime writes the
// wire format of times (the encoder, the body's sentAt), defaults holds
// the defaults the root, v3compat and the mock share, jitter lets tests
// fix retry's jitter, and testsupport is the tests' shared harness.
// Package v3compat, above the root, is a drop-in for segmentio/analytics-go
// v3; package analyticstest is the mock tracking API.
package analytics
