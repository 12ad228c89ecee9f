package analytics

import (
	"errors"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/retry"
)

// Stats is a snapshot of a client's counters since New (SPEC §8). Each
// counter is read on its own, so while events move a snapshot may be a few
// events off; once Close or Shutdown has returned, Enqueued == Delivered +
// Failed.Total() exactly (with WithSpool: Enqueued + Spool.Recovered ==
// Delivered + Failed.Total() + Spool.Left; SPEC §11).
type Stats struct {
	// Enqueued counts events Enqueue accepted.
	Enqueued int64 `json:"enqueued"`
	// Rejected counts events Enqueue refused, by reason.
	Rejected RejectedStats `json:"rejected"`
	// Delivered counts events the tracking API accepted.
	Delivered int64 `json:"delivered"`
	// Failed counts events reported to Callback.Failure, by reason.
	Failed FailedStats `json:"failed"`

	// Batches counts batches cut from the queue.
	Batches int64 `json:"batches"`
	// UploadStats are the uploader's counters: batches by outcome, splits,
	// attempts, retries by path, resends, waits at the rate-limit pause,
	// bytes sent and transport errors. Its fields read as Stats' own
	// (Stats.Attempts), and its JSON members are Stats' own.
	UploadStats
	// SendRate is the adaptive client-wide send rate now
	// (WithAdaptiveSendRate); all zero when it is off.
	SendRate SendRateStats `json:"send_rate"`

	// QueueDepth and QueueBytes are the events and encoded bytes queued now.
	QueueDepth int `json:"queue_depth"`
	QueueBytes int `json:"queue_bytes"`
	// InFlight is the events in batches being uploaded or waiting to retry.
	InFlight int64 `json:"in_flight"`
	// QueueMaxSize and QueueMaxBytes are the queue's bounds
	// (WithMaxQueueSize, WithMaxQueueBytes). QueueDepth + InFlight events
	// count against the first, and QueueHeldBytes against the second: their
	// encoded bytes and the memory kept for the Callback.
	QueueMaxSize   int `json:"queue_max_size"`
	QueueMaxBytes  int `json:"queue_max_bytes"`
	QueueHeldBytes int `json:"queue_held_bytes"`

	// Latency is the time from Enqueue to each event's final outcome.
	Latency LatencyStats `json:"latency"`

	// Spool is the durable spool's state (WithSpool); all zero when it is
	// off.
	Spool SpoolStats `json:"spool"`
}

// SpoolStats is the state of the durable spool (WithSpool, SPEC §11).
type SpoolStats struct {
	// Bytes is the size of the spool's files now.
	Bytes int64 `json:"bytes"`
	// MaxBytes is the spool's bound (WithSpoolMaxBytes), which Bytes
	// stays within.
	MaxBytes int64 `json:"max_bytes"`
	// Records is the events in the spool now that have no final outcome
	// yet: queued, in flight, or waiting on disk.
	Records int64 `json:"records"`
	// OnDisk is those of them that wait on disk only, beyond the memory
	// queue's bounds, to be read back when there is room.
	OnDisk int64 `json:"on_disk"`
	// Recovered counts events an earlier client left in the directory,
	// found by New; they are sent before anything newer (SPEC §11.2).
	Recovered int64 `json:"recovered"`
	// SkippedCorrupt counts damaged records skipped (and logged) since New:
	// a checksum that fails, or a stretch of a file that cannot be read
	// (SPEC §11.8).
	SkippedCorrupt int64 `json:"skipped_corrupt"`
	// Left counts events Close or Shutdown left in the spool, undelivered,
	// for the next New instead of failing them (SPEC §11.4).
	Left int64 `json:"left"`
}

// RejectedStats counts events Enqueue refused, by the error it returned.
type RejectedStats struct {
	Invalid   int64 `json:"invalid"`    // ErrInvalidMessage
	TooLarge  int64 `json:"too_large"`  // ErrMessageTooLarge
	QueueFull int64 `json:"queue_full"` // ErrQueueFull
	Closed    int64 `json:"closed"`     // ErrClosed
	Spool     int64 `json:"spool"`      // ErrSpool: the spool could not write the event
}

// Total is the number of events Enqueue refused.
func (r RejectedStats) Total() int64 {
	return r.Invalid + r.TooLarge + r.QueueFull + r.Closed + r.Spool
}

// FailedStats counts failed events by the reason of their error.
type FailedStats struct {
	RetriesExhausted        int64 `json:"retries_exhausted"`          // ErrRetriesExhausted
	BackoffBudgetExceeded   int64 `json:"backoff_budget_exceeded"`    // ErrBackoffBudgetExceeded
	RateLimitBudgetExceeded int64 `json:"rate_limit_budget_exceeded"` // ErrRateLimitBudgetExceeded
	FatalStatus             int64 `json:"fatal_status"`               // ErrFatalStatus
	Redirect                int64 `json:"redirect"`                   // ErrRedirect
	Shutdown                int64 `json:"shutdown"`                   // Shutdown's context ended first
	Spool                   int64 `json:"spool"`                      // ErrSpool: the record was damaged on disk
	Other                   int64 `json:"other"`                      // anything else
}

// Total is the number of events reported to Callback.Failure.
func (f FailedStats) Total() int64 {
	return f.RetriesExhausted + f.BackoffBudgetExceeded + f.RateLimitBudgetExceeded + f.FatalStatus +
		f.Redirect + f.Shutdown + f.Spool + f.Other
}

// UploadStats counts what the uploader did since New. It is
// [consumer.Counters]; Stats embeds it, so that its fields read as Stats'
// own (Stats.Attempts) and its JSON members, its fields in snake_case, are
// Stats' own.
//
// Its fields:
//   - BatchesDelivered: batches delivered; each half of a split batch
//     counts as a batch.
//   - BatchesFailed: batches failed, counted the same way.
//   - Splits: batches split in two after a 413, or before they were sent,
//     over MaxBatchBytes or of more than MaxBatchEvents events.
//   - Attempts: attempts sent, first attempts and retries: the HTTP
//     requests sent, but for Resends.
//   - Retries: retries by path.
//   - Resends: attempts sent a second time at once, as part of the same
//     attempt, because a reused keep-alive connection closed under them
//     without a byte of answer; they spend no retry and no budget, and are
//     in neither Attempts nor Retries.
//   - RateLimitedWaits: attempts held back by the client-wide pause that a
//     Retry-After starts, the rate-limited batch's own included.
//   - BytesSent: request body bytes written, after compression.
//   - TransportErrors: attempts that got no response, by whether the
//     request had been written.
type UploadStats = consumer.Counters

// RetryStats counts retries by path (SPEC §5). It is [consumer.RetryStats];
// its JSON names are its fields' in snake_case.
//
// Its fields:
//   - Backoff: counted retries after a failure without Retry-After.
//   - RateLimit: uncounted retries after a valid Retry-After.
//   - Token: uncounted resends with a fresh OAuth access token after an
//     upload was refused for its token (WithOAuth), at most one a batch.
type RetryStats = consumer.RetryStats

// TransportErrorStats counts attempts that got no HTTP response (SPEC §5,
// transport errors). It is [consumer.TransportErrorStats]; its JSON names
// are its fields' in snake_case.
//
// Its fields:
//   - NotWritten: the request never left: nothing was sent.
//   - Written: the request was written: the server may have it.
type TransportErrorStats = consumer.TransportErrorStats

// SendRateStats is the state of the adaptive client-wide send rate
// (WithAdaptiveSendRate, SPEC §5). It is [retry.GateState]; its JSON
// names are its fields' in snake_case.
//
// Its fields:
//   - Limit: the attempts per second the client allows itself now (the
//     lowered limit after failures, or one over the probe's spacing while
//     probing); 0 while the API answers and nothing is limited.
//   - Probing: true while the API seems down: one attempt at a time goes
//     out, spaced by the backoff schedule, up to ProbeInterval apart, but
//     further for a client that sends little (its probes cost at most an
//     eighth of its healthy rate), and after a rate-limited answer by the
//     pause.
//   - Held: the attempts that had to wait for their turn, since New.
//   - Waiting: the attempts waiting for their turn now.
type SendRateStats = retry.GateState

// counters are the client's own; the uploader keeps the per-attempt ones.
type counters struct {
	enqueued, delivered atomic.Int64
	rejections          [len(rejectReasons)]atomic.Int64 // by rejectReasons
	failures            [len(failReasons)]atomic.Int64   // by failReasons
	latency             latencies
}

// A reason is an error that RejectedStats or FailedStats counts events
// by, with the field of Stats that counts them.
type reason struct {
	err   error
	field func(*Stats) *int64
}

// rejectReasons are the errors RejectedStats counts Enqueue's refusals
// by, each with its field; the last, ErrInvalidMessage, also counts a
// refusal that wraps none of the others.
var rejectReasons = [...]reason{
	{ErrMessageTooLarge, func(s *Stats) *int64 { return &s.Rejected.TooLarge }},
	{ErrQueueFull, func(s *Stats) *int64 { return &s.Rejected.QueueFull }},
	{ErrClosed, func(s *Stats) *int64 { return &s.Rejected.Closed }},
	{ErrSpool, func(s *Stats) *int64 { return &s.Rejected.Spool }},
	{ErrInvalidMessage, func(s *Stats) *int64 { return &s.Rejected.Invalid }},
}

// failReasons are the errors FailedStats counts failures by, in the order
// they are looked for, each with its field; the last, Other, counts a
// failure that wraps none of the others.
var failReasons = [...]reason{
	{ErrRetriesExhausted, func(s *Stats) *int64 { return &s.Failed.RetriesExhausted }},
	{ErrBackoffBudgetExceeded, func(s *Stats) *int64 { return &s.Failed.BackoffBudgetExceeded }},
	{ErrRateLimitBudgetExceeded, func(s *Stats) *int64 { return &s.Failed.RateLimitBudgetExceeded }},
	{ErrFatalStatus, func(s *Stats) *int64 { return &s.Failed.FatalStatus }},
	{ErrRedirect, func(s *Stats) *int64 { return &s.Failed.Redirect }},
	{ErrShutdown, func(s *Stats) *int64 { return &s.Failed.Shutdown }},
	{ErrSpool, func(s *Stats) *int64 { return &s.Failed.Spool }},
	{nil, func(s *Stats) *int64 { return &s.Failed.Other }},
}

// countReason adds n to the count, of counts, of the first of reasons
// that err wraps, or of the last reason when it wraps none before it.
func countReason(counts []atomic.Int64, reasons []reason, err error, n int64) {
	i := 0
	for i < len(reasons)-1 && !errors.Is(err, reasons[i].err) {
		i++
	}
	counts[i].Add(n)
}

// loadReasons stores counts in the fields of st that reasons name.
func loadReasons(st *Stats, counts []atomic.Int64, reasons []reason) {
	for i, r := range reasons {
		*r.field(st) = counts[i].Load()
	}
}

// refused counts a message Enqueue refused with err.
func (c *counters) refused(err error) { countReason(c.rejections[:], rejectReasons[:], err, 1) }

// failed counts n events failed with err under the reason it wraps.
func (c *counters) failed(err error, n int64) { countReason(c.failures[:], failReasons[:], err, n) }

// Stats returns a snapshot of the client's counters. It is safe to call at
// any time, from any goroutine.
func (c *Client) Stats() Stats {
	// In flight is what the queue's bounds still hold but no longer queue.
	queued, queuedBytes, holding, heldBytes := c.q.Sizes()
	st := Stats{
		Enqueued:       c.stats.enqueued.Load(),
		Delivered:      c.stats.delivered.Load(),
		Batches:        c.loop.Batches(),
		UploadStats:    c.up.Counters(),
		SendRate:       c.up.SendRate(),
		QueueDepth:     queued,
		QueueBytes:     queuedBytes,
		InFlight:       int64(holding - queued),
		QueueMaxSize:   c.cfg.maxQueueSize,
		QueueMaxBytes:  c.cfg.maxQueueBytes,
		QueueHeldBytes: heldBytes,
		Latency:        LatencyStats{Delivered: c.stats.latency.delivered.snapshot(), Failed: c.stats.latency.failed.snapshot()},
		Spool:          c.in.spoolStats(),
	}
	loadReasons(&st, c.stats.rejections[:], rejectReasons[:])
	loadReasons(&st, c.stats.failures[:], failReasons[:])
	return st
}

// LatencyStats is the time events took from Enqueue to their final outcome
// (Callback.Success or Callback.Failure), by outcome, since New (SPEC §8).
// It counts the events that went from Enqueue into the memory queue, which
// are all of them without WithSpool; with WithSpool it leaves out those read
// back from disk (recovered from an earlier client, or spooled beyond the
// memory queue's bounds), whose time of Enqueue the client does not keep.
type LatencyStats struct {
	Delivered Histogram `json:"delivered"`
	Failed    Histogram `json:"failed"`
}

// Histogram is a distribution of durations, counted in buckets.
type Histogram struct {
	// Bounds are the buckets' upper bounds, ascending: 5 ms to 1 h, the
	// same for every client and every snapshot.
	Bounds []time.Duration `json:"bounds"`
	// Counts has a count per bucket, len(Bounds)+1 of them: Counts[i]
	// counts the durations d with Bounds[i-1] < d <= Bounds[i] (d <=
	// Bounds[0] for the first), and the last one those over every bound.
	Counts []int64 `json:"counts"`
	// Count is the number of durations counted: the sum of Counts.
	Count int64 `json:"count"`
	// Sum is their total.
	Sum time.Duration `json:"sum"`
}

// latencyBounds are Histogram.Bounds: from an upload that goes out at once
// to one that retried for an hour. It is never written.
var latencyBounds = [...]time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
}

// latencies are the counts behind LatencyStats. Enqueue only stamps each
// event with its time since start (consumer.Event.At), from the clock reading it
// takes anyway; the buckets are counted when a run of events ends, on the
// upload's goroutine, a few atomic adds per run (SPEC §8).
type latencies struct {
	start             time.Time // New's clock reading: events are stamped with the time since
	delivered, failed latencyHistogram
}

// endedRun counts into l the latencies of a run of events that has just
// had its final outcome, delivered or failed; those read back from the
// spool are not stamped (unstamped) and not counted.
func endedRun(l *latencies, run []queue.Item[consumer.Event], delivered bool) {
	h := &l.failed
	if delivered {
		h = &l.delivered
	}
	now := time.Since(l.start)
	var counts [len(latencyBounds) + 1]int64
	var sum time.Duration
	for i := range run {
		at := run[i].Value.At
		if at == unstamped {
			continue
		}
		d := now - at
		b, _ := slices.BinarySearch(latencyBounds[:], d) // the first bound >= d
		counts[b]++
		sum += d
	}
	for b, n := range counts {
		if n > 0 {
			h.counts[b].Add(n)
		}
	}
	if sum != 0 {
		h.sum.Add(int64(sum))
	}
}

type latencyHistogram struct {
	counts [len(latencyBounds) + 1]atomic.Int64
	sum    atomic.Int64 // nanoseconds
}

func (h *latencyHistogram) snapshot() Histogram {
	out := Histogram{Bounds: slices.Clone(latencyBounds[:]), Counts: make([]int64, len(h.counts))}
	for b := range h.counts {
		out.Counts[b] = h.counts[b].Load()
		out.Count += out.Counts[b]
	}
	out.Sum = time.Duration(h.sum.Load())
	return out
}
