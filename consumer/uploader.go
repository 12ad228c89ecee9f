// Package consumer uploads batches of encoded events to a tracking API and
// runs each batch's retry loop.
//
// The Uploader does the I/O (one POST per attempt, under its own deadline,
// response bodies drained and closed so connections are reused); every
// decision about what an attempt's end means and how long to wait is asked
// of package retry. Waits go through a Clock, so tests drive the loop
// without sleeping.
package consumer

import (
	"context"
	"encoding/base64"
	"log/slog"
	"net/http"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// Config is what an Uploader needs. Every field is required unless marked
// optional.
type Config struct {
	// Endpoint is the base URL of the tracking API; batches go to
	// Endpoint + "/v1/batch".
	Endpoint string
	// WriteKey authenticates every request. It is never logged nor put in
	// an error.
	WriteKey string
	// UserAgent is sent on every request.
	UserAgent string
	// Context is the JSON of the body's "context" member, e.g.
	// {"library":{"name":"analytics-go","version":"1.0.0"}}.
	Context []byte
	// Client sends the requests.
	Client *http.Client
	// Gzip compresses request bodies.
	Gzip bool
	// RequestTimeout bounds each attempt.
	RequestTimeout time.Duration
	// MaxConcurrentRequests bounds the requests in flight at once, across
	// every Deliver call. A batch holds a slot only while its request is
	// in flight, not while it waits to retry.
	MaxConcurrentRequests int
	// Policy is the retry policy.
	Policy retry.Policy
	// Clock is optional; nil uses SystemClock.
	Clock Clock
	// Logger is optional; it receives per-attempt failures that will be
	// retried. Nil discards.
	Logger *slog.Logger
}

// Uploader sends batches. It is safe for concurrent use: each Deliver call
// runs one batch's retry loop in the caller's goroutine, and all of them
// share one rate-limit pause and the MaxConcurrentRequests request slots.
type Uploader struct {
	url       string
	auth      string
	scrub     *scrubber // removes the write key from what servers send back
	userAgent string
	context   []byte
	client    *http.Client
	gzip      bool
	timeout   time.Duration
	policy    retry.Policy
	clock     Clock
	log       *slog.Logger

	pause    retry.Pause
	requests chan struct{} // a token per request in flight
	stats    counters
}

// New returns an Uploader for cfg. It does not validate cfg: the analytics
// package does, naming the option at fault.
func New(cfg Config) *Uploader {
	u := &Uploader{
		url:       cfg.Endpoint + "/v1/batch",
		auth:      "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.WriteKey+":")),
		scrub:     newScrubber(cfg.WriteKey),
		userAgent: cfg.UserAgent,
		context:   cfg.Context,
		client:    cfg.Client,
		gzip:      cfg.Gzip,
		timeout:   cfg.RequestTimeout,
		policy:    cfg.Policy,
		clock:     cfg.Clock,
		log:       cfg.Logger,
		requests:  make(chan struct{}, max(cfg.MaxConcurrentRequests, 1)),
	}
	if u.clock == nil {
		u.clock = SystemClock()
	}
	if u.log == nil {
		u.log = slog.New(slog.DiscardHandler)
	}
	return u
}

// EventBytes is how many bytes the events of one batch may take, joined by
// commas, so that the whole body stays within MaxBodyBytes.
func (u *Uploader) EventBytes() int {
	return MaxBodyBytes - envelopeSize(u.context)
}

// Counters returns a snapshot of the Uploader's counters.
func (u *Uploader) Counters() Counters { return u.stats.snapshot() }

// Deliver sends events (each one encoded JSON object) as one batch and runs
// its retry loop until every event has a final outcome. It calls report
// once for each run events[lo:hi] that ended: err nil means delivered, else
// a *BatchError. A batch answered 413 is split in halves, each with its own
// retry state, so report may be called several times; together the calls
// cover every event exactly once.
//
// The caller holds a request slot from AcquireRequest: the first attempt
// uses it, so that batches go out in the order their slots were taken.
// Deliver gives it back; later attempts take a slot each, and none is held
// while the batch waits to retry.
//
// When ctx ends, the events not yet delivered are reported with a
// *BatchError whose Reason is context.Cause(ctx).
func (u *Uploader) Deliver(ctx context.Context, events [][]byte, report func(lo, hi int, err error)) {
	held := true
	defer func() {
		if held {
			u.release()
		}
	}()
	u.deliver(ctx, events, 0, report, &held)
}

// AcquireRequest takes a request slot for a Deliver call, waiting while
// MaxConcurrentRequests requests are in flight, or returns the context's
// cause.
func (u *Uploader) AcquireRequest(ctx context.Context) error { return u.acquire(ctx) }

// deliver runs the loop of one batch; *held says whether this goroutine
// holds a request slot.
func (u *Uploader) deliver(ctx context.Context, events [][]byte, offset int, report func(lo, hi int, err error), held *bool) {
	end := offset + len(events)
	// Spliced first, checked second: a body over the limit is split before
	// it is sent. A single event always fits: the analytics package refuses
	// events over MaxMessageBytes at Enqueue.
	if len(events) > 1 && eventsLen(events)+envelopeSize(u.context) > MaxBodyBytes {
		u.split(ctx, events, offset, report, held)
		return
	}

	budget := u.policy.NewBudget(len(events))
	var last error
	fail := func(reason error, attempts int) {
		u.stats.failed.Add(1)
		report(offset, end, &BatchError{Reason: reason, Attempts: attempts, Err: last})
	}
	for {
		if !*held {
			waited, err := u.wait(ctx)
			if waited {
				u.stats.gateWaits.Add(1)
			}
			if err != nil {
				fail(err, budget.Attempts())
				return
			}
			if err := u.acquire(ctx); err != nil {
				fail(err, budget.Attempts())
				return
			}
			*held = true
		}
		if u.pause.Until().After(u.clock.Now()) {
			// The client is paused by a Retry-After: wait without the slot.
			u.release()
			*held = false
			continue
		}
		res, err := u.attempt(ctx, events, budget.Attempts())
		u.release()
		*held = false
		if err != nil {
			last = err
		}
		if _, noAnswer := err.(*TransportError); !noAnswer && res.Outcome != retry.OutcomeRateLimited {
			// Answered without a Retry-After: the rate-limit episode is over.
			u.pause.Answered()
		}
		if res.Outcome != retry.OutcomeSuccess && ctx.Err() != nil {
			fail(context.Cause(ctx), budget.Attempts()+1)
			return
		}
		now := u.clock.Now()
		d := budget.Next(res, now)
		switch d.Action {
		case retry.ActionDeliver:
			u.stats.delivered.Add(1)
			report(offset, end, nil)
			return
		case retry.ActionSplit:
			u.split(ctx, events, offset, report, held)
			return
		case retry.ActionFail:
			fail(d.Reason, budget.Attempts())
			return
		}
		u.log.LogAttrs(ctx, slog.LevelWarn, "analytics: upload attempt failed, will retry",
			slog.Int("attempt", budget.Attempts()),
			slog.Int("events", len(events)),
			slog.String("path", d.Path.String()),
			slog.String("wait", d.Wait.String()),
			slog.String("error", errString(last)))
		if d.Path == retry.RateLimitPath {
			u.stats.rateLimitRetries.Add(1)
			// One server signal pauses every worker; this batch waits at
			// the gate like the others.
			u.pause.Hold(now, d.Wait)
			continue
		}
		u.stats.backoffRetries.Add(1)
		if err := u.clock.Sleep(ctx, d.Wait); err != nil {
			fail(err, budget.Attempts())
			return
		}
	}
}

// acquire takes a request slot, waiting while MaxConcurrentRequests are in
// flight, or returns the context's cause.
func (u *Uploader) acquire(ctx context.Context) error {
	select {
	case u.requests <- struct{}{}:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

func (u *Uploader) release() { <-u.requests }

// split sends each half of events as a batch of its own.
func (u *Uploader) split(ctx context.Context, events [][]byte, offset int, report func(lo, hi int, err error), held *bool) {
	u.stats.splits.Add(1)
	mid := len(events) / 2
	u.deliver(ctx, events[:mid], offset, report, held)
	u.deliver(ctx, events[mid:], offset+mid, report, held)
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
