// Package consumer takes batches of encoded events from a queue.Queue,
// uploads them to a tracking API that speaks the Segment HTTP Tracking
// API, retries them, and reports each event's outcome.
//
// A Loop cuts batches from its queue (every FlushAt events, every
// FlushInterval, on Flush), uploads them with an Uploader and reports what
// became of each event, exactly once, to the Outcomes it is given (SPEC
// §3, §4, §8). An Uploader can also be used alone: Deliver runs one
// batch's retry loop (SPEC §5) in the caller's goroutine.
//
// The Uploader does the I/O (one POST per attempt, under its own deadline,
// response bodies drained and closed so connections are reused); every
// decision about what an attempt's end means and how long to wait is asked
// of package retry. That includes when an attempt may go (retry.Gate: the
// rate-limit pause and the client-wide send rate): this package only
// waits as the gate tells it, takes the attempt's request slot, and
// sleeps through backoff waits, which the gate ends when the API
// recovers. With Config.OAuth, an attempt first gets the access token its
// upload carries, from the one token the Uploader keeps (a request for a
// new one is part of the attempt, its failure the attempt's). It reads
// time.Now and waits on timers, so budgets are measured on the monotonic
// clock; its tests run the loop in a testing/synctest bubble, where every
// wait is exact and instant.
package consumer

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dualpath/analytics-go/internal/defaults"
	"github.com/dualpath/analytics-go/retry"
)

// BatchPath is where the tracking API takes batches, under its endpoint.
const BatchPath = "/v1/batch"

// Config is what an Uploader needs. Every field is required unless marked
// optional.
type Config struct {
	// Endpoint is the base URL of the tracking API; batches go to
	// Endpoint + BatchPath.
	Endpoint string
	// WriteKey authenticates every request, in Basic credentials; with
	// OAuth, in the body's writeKey member, as Segment's API takes it. It
	// is never logged nor put in an error.
	WriteKey string
	// OAuth is optional: with it, every upload carries an OAuth 2.0 access
	// token (Authorization: Bearer), which the Uploader gets from
	// OAuth.AuthServer, shares between uploads and refreshes, instead of
	// the write key's Basic credentials (SPEC §4).
	OAuth *OAuth
	// UserAgent is sent on every request.
	UserAgent string
	// Context is the JSON of the body's "context" member, e.g.
	// {"library":{"name":"analytics-go","version":"1.0.0"}}.
	Context []byte
	// JSONTimes is optional: it writes the body's sentAt as encoding/json
	// writes a time.Time (RFC 3339 in local time, with as many fraction
	// digits as the time has) instead of in UTC with milliseconds.
	JSONTimes bool
	// BatchMessageID is optional: it gives each batch a "messageId"
	// member, a UUID v4 drawn once per batch (each half of a split batch
	// draws its own) and sent on each of its attempts.
	BatchMessageID bool
	// Client sends the requests.
	Client *http.Client
	// Gzip compresses request bodies.
	Gzip bool
	// RequestTimeout bounds each attempt.
	RequestTimeout time.Duration
	// MaxBodyBytes is the largest body a request may carry, envelope
	// included, before compression: a batch whose body would be larger is
	// split before it is sent, as is one of more than 2,500 events, the
	// most Segment's API takes in a request (past them it answers 200 but
	// rejects the events).
	MaxBodyBytes int
	// MaxConcurrentRequests bounds the requests in flight at once, across
	// every Deliver call. A batch holds a slot only while its request is
	// in flight, not while it waits to retry.
	MaxConcurrentRequests int
	// Policy is the retry policy.
	Policy retry.Policy
	// AdaptiveSendRate turns on the client-wide send rate
	// (retry.Gate): every attempt waits for its turn, so that during
	// an outage the client probes instead of retrying every batch, and
	// after it the backlog goes out at a rising rate. Off, attempts wait
	// only for their own backoff and the rate-limit pause, and a pause
	// ends exactly when the server asked.
	AdaptiveSendRate bool
	// Logger is optional; it receives per-attempt failures that will be
	// retried. Nil discards.
	Logger *slog.Logger
}

// Uploader sends batches. It is safe for concurrent use: each Deliver call
// runs one batch's retry loop in the caller's goroutine, and all of them
// share one rate-limit pause, one send rate and the MaxConcurrentRequests
// request slots.
type Uploader struct {
	cfg    Config       // as New was given it, with a Logger and without the WriteKey
	url    string       // Endpoint + BatchPath
	auth   string       // the write key's Basic credentials
	tokens *tokenSource // with OAuth, the access token in their place
	scrub  *scrubber    // removes the write key from what servers send back
	env    envelope

	gate     *retry.Gate   // the pause and the send rate (when on)
	requests chan struct{} // a token per request in flight: see slot

	statsMu sync.Mutex
	stats   Counters // what Counters returns; change it with count
}

// New returns an Uploader for cfg. It does not validate cfg: the caller
// does (the analytics package names the option at fault).
func New(cfg Config) *Uploader {
	u := &Uploader{
		cfg:      cfg,
		url:      cfg.Endpoint + BatchPath,
		auth:     "Basic " + base64.StdEncoding.EncodeToString([]byte(cfg.WriteKey+":")),
		scrub:    newScrubber(cfg.WriteKey),
		env:      envelope{context: cfg.Context, jsonTimes: cfg.JSONTimes, batchID: cfg.BatchMessageID},
		requests: make(chan struct{}, max(cfg.MaxConcurrentRequests, 1)),
	}
	u.cfg.WriteKey = "" // kept only where it is sent: auth, and the OAuth body's writeKey
	u.gate = retry.NewGate(&u.cfg.Policy, cfg.AdaptiveSendRate)
	u.cfg.Logger = cmp.Or(u.cfg.Logger, slog.New(slog.DiscardHandler))
	if cfg.OAuth != nil {
		key, _ := json.Marshal(cfg.WriteKey) // a string: never fails
		u.env.context = slices.Concat(cfg.Context, []byte(`,"writeKey":`), key)
		u.tokens = &tokenSource{OAuth: *cfg.OAuth, url: cfg.OAuth.AuthServer + TokenPath, u: u}
	}
	return u
}

// eventBytes is how many bytes the events of one batch may take, joined by
// commas, so that the whole body stays within Config.MaxBodyBytes.
func (u *Uploader) eventBytes() int {
	return u.cfg.MaxBodyBytes - u.env.size()
}

// eventsDoneAtReturn reports whether nothing reads a batch's events once
// Deliver has returned, so that their memory may be reused. It does with
// gzip on: each attempt compresses the events into a body of its own
// before it is sent. Without gzip the body is read from the events as the
// transport writes it, and an http.RoundTripper may go on reading it after
// the round trip has returned.
func (u *Uploader) eventsDoneAtReturn() bool { return u.cfg.Gzip }

// Deliver sends events (each one encoded JSON object) as one batch and runs
// its retry loop until every event has a final outcome. It calls report
// once for each run events[lo:hi] that ended: err nil means delivered, else
// a *BatchError. A batch answered 413 is split in halves, each with its own
// retry state, so report may be called several times; together the calls
// cover every event exactly once. So is, before it is sent, a batch over
// Config.MaxBodyBytes or of more than 2,500 events.
//
// Its first attempt waits for a request slot, as every later attempt does;
// none is held while the batch waits to retry.
//
// An attempt whose request a reused HTTP/1 connection lost as it closed
// (no byte of answer, not a timeout) is sent again at once, once, as part
// of the same attempt, with the same bytes and X-Retry-Count; it spends no
// retry and is counted in Counters.Resends (SPEC §5).
//
// When ctx ends, the events not yet delivered are reported with a
// *BatchError whose Reason is context.Cause(ctx).
func (u *Uploader) Deliver(ctx context.Context, events [][]byte, report func(lo, hi int, err error)) {
	u.deliver(ctx, nil, events, report)
}

// StopRetries ends every batch's retries, from now on: a batch waiting to
// retry (through a backoff wait, a Retry-After pause or the send rate)
// fails at once, and one whose attempt fails from now on fails without
// waiting, each with a *BatchError whose Reason is retry.ErrRetriesStopped
// and whose Err is its last attempt's error. A batch not yet attempted
// still makes its first attempt, at once: neither the pause nor the send
// rate holds it back. It is safe to call more than once, from any
// goroutine.
func (u *Uploader) StopRetries() { u.gate.Stop() }

// deliver is Deliver with slot, the request slot of the first attempt,
// taken with acquire, so that batches go out in the order their slots were
// taken (SPEC §5). It releases slot, whatever happens. A slot that holds
// nothing (the zero slot, nil, or one already released) makes the first
// attempt take a slot of its own.
func (u *Uploader) deliver(ctx context.Context, slot *slot, events [][]byte, report func(lo, hi int, err error)) {
	defer slot.release()
	// Spliced first, checked second: a batch over the API's limits, a body
	// over MaxBodyBytes or more events than the API takes in a request, is
	// split before it is sent (SPEC §3). A single event always fits: the
	// analytics package refuses events over MaxMessageBytes at Enqueue.
	if len(events) > defaults.MaxBatchEvents || len(events) > 1 && eventsLen(events) > u.eventBytes() {
		u.split(ctx, slot, events, report)
		return
	}

	budget := u.cfg.Policy.NewBudget(len(events))
	var id string // the batch's messageId, when the body carries one
	if u.env.batchID {
		id = uuid.NewString()
	}
	var last error
	fail := func(reason error, attempts int) {
		u.count(&u.stats.BatchesFailed, 1)
		report(0, len(events), &BatchError{Reason: reason, Attempts: attempts, Err: last})
	}
	for {
		held, admitted, err := u.ready(ctx, slot, budget)
		if err != nil {
			fail(err, budget.Attempts())
			return
		}
		res, err := u.attempt(ctx, held, admitted.Turn, events, id, budget.Attempts())
		if err != nil {
			last = err
		}
		if res.Outcome != retry.OutcomeSuccess && ctx.Err() != nil {
			fail(context.Cause(ctx), budget.Attempts()+1)
			return
		}
		now := time.Now()
		d := budget.Next(res, now)
		switch d.Action {
		case retry.ActionDeliver:
			u.count(&u.stats.BatchesDelivered, 1)
			report(0, len(events), nil)
			return
		case retry.ActionSplit:
			u.split(ctx, slot, events, report)
			return
		case retry.ActionFail:
			fail(d.Reason, budget.Attempts())
			return
		}
		attrs := []slog.Attr{
			slog.Int("attempt", budget.Attempts()),
			slog.Int("events", len(events)),
			slog.String("path", d.Path.String()),
			slog.String("wait", d.Wait.String()),
		}
		switch d.Path {
		case retry.TokenPath:
			// At once, with a fresh token: the attempt dropped the one refused.
			u.count(&u.stats.Retries.Token, 1)
		case retry.RateLimitPath:
			// One server signal pauses every worker; this batch waits at
			// the gate like the others. With the send rate on, the client
			// resumes a jitter of its own after the server's time, so that
			// a fleet does not come back at once.
			u.count(&u.stats.Retries.RateLimit, 1)
			if jitter, ok := u.gate.Hold(now, d.Wait); ok {
				attrs = append(attrs, slog.String("jitter", jitter.String()))
			}
		default:
			u.count(&u.stats.Retries.Backoff, 1)
		}
		attrs = append(attrs, slog.String("error", errString(last)))
		u.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "analytics: upload attempt failed, will retry", attrs...)
		if d.Path != retry.BackoffPath {
			continue
		}
		// A batch sleeping through its backoff goes as soon as the client
		// sees the API recover; the send rate spaces it from the others.
		if err := sleep(ctx, now.Add(d.Wait), admitted.Recovered); err != nil {
			fail(err, budget.Attempts())
			return
		}
	}
}

// split sends each half of events as a batch of its own. The first half's
// first attempt uses slot if it still holds one.
func (u *Uploader) split(ctx context.Context, slot *slot, events [][]byte, report func(lo, hi int, err error)) {
	u.count(&u.stats.Splits, 1)
	mid := len(events) / 2
	u.deliver(ctx, slot, events[:mid], report)
	u.deliver(ctx, nil, events[mid:], func(lo, hi int, err error) { report(mid+lo, mid+hi, err) })
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
