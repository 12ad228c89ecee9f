package otelmetrics

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	analytics "github.com/dualpath/analytics-go"
)

// ScopeName is the instrumentation scope of every instrument: the name of
// the meter Register takes from the MeterProvider, and of the scope
// NewProducer reports.
const ScopeName = "github.com/dualpath/analytics-go/otelmetrics"

// Attribute keys.
const (
	// ErrorType is the reason of a refusal or of a failure, on
	// analytics.event.rejected and analytics.event.failed: the JSON name
	// of its field in analytics.RejectedStats or analytics.FailedStats
	// (queue_full, retries_exhausted, ...), and _OTHER for FailedStats.Other.
	ErrorType = attribute.Key("error.type")
	// RetryPath is the retry path, on analytics.upload.retries: backoff,
	// rate_limit, or token (an upload sent again with a fresh OAuth access
	// token after the last one was refused).
	RetryPath = attribute.Key("analytics.retry.path")
	// QueueState is where the events counted by analytics.queue.size
	// are: queued, or in_flight (in a batch being uploaded or waiting to
	// retry). Both count against analytics.queue.capacity.
	QueueState = attribute.Key("analytics.queue.state")
	// SendRateState is the state of the client-wide send rate, on
	// analytics.send_rate.state: unlimited, limited or probing.
	SendRateState = attribute.Key("analytics.send_rate.state")
	// Outcome is the final outcome of the events in
	// analytics.event.duration: delivered or failed.
	Outcome = attribute.Key("analytics.event.outcome")
)

// instruments are the observable instruments Register creates.
type instruments struct {
	enqueued, rejected, delivered, failed metric.Int64ObservableCounter
	attempts, retries                     metric.Int64ObservableCounter
	queueSize, queueCapacity              metric.Int64ObservableUpDownCounter
	queueMemory, queueMemoryCapacity      metric.Int64ObservableUpDownCounter
	spoolSize, spoolBacklog               metric.Int64ObservableUpDownCounter
	spoolFileSize, spoolFileCapacity      metric.Int64ObservableUpDownCounter
	spoolRecovered, spoolSkipped          metric.Int64ObservableCounter
	sendRateLimit                         metric.Float64ObservableGauge
	sendRateState                         metric.Int64ObservableUpDownCounter
	sendRateHeld                          metric.Int64ObservableCounter
	sendRateWaiting                       metric.Int64ObservableUpDownCounter
}

// Register creates the client's instruments with a meter of mp and one
// callback that reads client.Stats() each time a reader collects, and
// observes every instrument from that one snapshot. Unregister on the
// registration it returns stops the callback (do it before the client is
// dropped; reading Stats after Close is fine). It returns the first error
// the meter returned, with nothing registered.
//
// The spool's instruments report nothing for a client without WithSpool.
func Register(mp metric.MeterProvider, client *analytics.Client) (metric.Registration, error) {
	return register(mp, client.Stats)
}

// register is Register with the snapshot read by stats.
func register(mp metric.MeterProvider, stats func() analytics.Stats) (metric.Registration, error) {
	m := mp.Meter(ScopeName, metric.WithInstrumentationVersion(analytics.Version))
	var in instruments
	var errs []error
	counter := func(name, unit, desc string) metric.Int64ObservableCounter {
		c, err := m.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	upDown := func(name, unit, desc string) metric.Int64ObservableUpDownCounter {
		c, err := m.Int64ObservableUpDownCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	in.enqueued = counter("analytics.event.enqueued", "{event}", "Events Enqueue accepted.")
	in.rejected = counter("analytics.event.rejected", "{event}", "Events Enqueue refused, by error.type.")
	in.delivered = counter("analytics.event.delivered", "{event}", "Events the tracking API accepted.")
	in.failed = counter("analytics.event.failed", "{event}", "Events reported to Callback.Failure, by error.type.")
	in.attempts = counter("analytics.upload.attempts", "{attempt}", "HTTP requests sent, first attempts and retries.")
	in.retries = counter("analytics.upload.retries", "{retry}", "Retries, by analytics.retry.path.")
	in.queueSize = upDown("analytics.queue.size", "{event}", "Events counted against the queue's capacity, by analytics.queue.state.")
	in.queueCapacity = upDown("analytics.queue.capacity", "{event}", "The queue's bound in events (WithMaxQueueSize).")
	in.queueMemory = upDown("analytics.queue.memory.size", "By", "Bytes counted against the queue's byte bound: events queued and in flight.")
	in.queueMemoryCapacity = upDown("analytics.queue.memory.capacity", "By", "The queue's bound in bytes (WithMaxQueueBytes).")
	in.spoolSize = upDown("analytics.spool.size", "{event}", "Events in the spool without a final outcome yet.")
	in.spoolBacklog = upDown("analytics.spool.backlog", "{event}", "Events waiting on disk only, beyond the memory queue's bounds.")
	in.spoolFileSize = upDown("analytics.spool.file.size", "By", "The size of the spool's files.")
	in.spoolFileCapacity = upDown("analytics.spool.file.capacity", "By", "The spool's bound (WithSpoolMaxBytes).")
	in.spoolRecovered = counter("analytics.spool.recovered", "{event}", "Events an earlier client left in the spool, found by New.")
	in.spoolSkipped = counter("analytics.spool.skipped", "{record}", "Damaged spool records skipped.")
	var err error
	in.sendRateLimit, err = m.Float64ObservableGauge("analytics.send_rate.limit", metric.WithUnit("{attempt}/s"),
		metric.WithDescription("The attempts per second the client allows itself; 0 while nothing is limited."))
	errs = append(errs, err)
	in.sendRateState = upDown("analytics.send_rate.state", "{state}", "1 for the send rate's state now (analytics.send_rate.state), 0 for the others.")
	in.sendRateHeld = counter("analytics.send_rate.held", "{attempt}", "Attempts that waited for their turn under the send rate.")
	in.sendRateWaiting = upDown("analytics.send_rate.waiting", "{attempt}", "Attempts waiting for their turn now.")
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return m.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		in.observe(o, stats())
		return nil
	}, in.all()...)
}

func (in *instruments) all() []metric.Observable {
	return []metric.Observable{
		in.enqueued, in.rejected, in.delivered, in.failed, in.attempts, in.retries,
		in.queueSize, in.queueCapacity, in.queueMemory, in.queueMemoryCapacity,
		in.spoolSize, in.spoolBacklog, in.spoolFileSize, in.spoolFileCapacity, in.spoolRecovered, in.spoolSkipped,
		in.sendRateLimit, in.sendRateState, in.sendRateHeld, in.sendRateWaiting,
	}
}

// Attribute sets, made once: observing with a prepared set allocates
// nothing.
var (
	rejectedInvalid   = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("invalid")))
	rejectedTooLarge  = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("too_large")))
	rejectedQueueFull = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("queue_full")))
	rejectedClosed    = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("closed")))
	errorSpool        = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("spool")))

	failedExhausted = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("retries_exhausted")))
	failedBackoff   = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("backoff_budget_exceeded")))
	failedRateLimit = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("rate_limit_budget_exceeded")))
	failedFatal     = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("fatal_status")))
	failedRedirect  = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("redirect")))
	failedShutdown  = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("shutdown")))
	failedOther     = metric.WithAttributeSet(attribute.NewSet(ErrorType.String("_OTHER")))

	retryBackoff   = metric.WithAttributeSet(attribute.NewSet(RetryPath.String("backoff")))
	retryRateLimit = metric.WithAttributeSet(attribute.NewSet(RetryPath.String("rate_limit")))
	retryToken     = metric.WithAttributeSet(attribute.NewSet(RetryPath.String("token")))

	queueQueued   = metric.WithAttributeSet(attribute.NewSet(QueueState.String("queued")))
	queueInFlight = metric.WithAttributeSet(attribute.NewSet(QueueState.String("in_flight")))

	rateUnlimited = metric.WithAttributeSet(attribute.NewSet(SendRateState.String("unlimited")))
	rateLimited   = metric.WithAttributeSet(attribute.NewSet(SendRateState.String("limited")))
	rateProbing   = metric.WithAttributeSet(attribute.NewSet(SendRateState.String("probing")))
)

// observe reports st on every instrument. A reason with no event yet is
// reported as 0, so that a rate over it exists from the start.
func (in *instruments) observe(o metric.Observer, st analytics.Stats) {
	o.ObserveInt64(in.enqueued, st.Enqueued)
	o.ObserveInt64(in.rejected, st.Rejected.Invalid, rejectedInvalid)
	o.ObserveInt64(in.rejected, st.Rejected.TooLarge, rejectedTooLarge)
	o.ObserveInt64(in.rejected, st.Rejected.QueueFull, rejectedQueueFull)
	o.ObserveInt64(in.rejected, st.Rejected.Closed, rejectedClosed)
	o.ObserveInt64(in.rejected, st.Rejected.Spool, errorSpool)
	o.ObserveInt64(in.delivered, st.Delivered)
	o.ObserveInt64(in.failed, st.Failed.RetriesExhausted, failedExhausted)
	o.ObserveInt64(in.failed, st.Failed.BackoffBudgetExceeded, failedBackoff)
	o.ObserveInt64(in.failed, st.Failed.RateLimitBudgetExceeded, failedRateLimit)
	o.ObserveInt64(in.failed, st.Failed.FatalStatus, failedFatal)
	o.ObserveInt64(in.failed, st.Failed.Redirect, failedRedirect)
	o.ObserveInt64(in.failed, st.Failed.Shutdown, failedShutdown)
	o.ObserveInt64(in.failed, st.Failed.Spool, errorSpool)
	o.ObserveInt64(in.failed, st.Failed.Other, failedOther)
	o.ObserveInt64(in.attempts, st.Attempts)
	o.ObserveInt64(in.retries, st.Retries.Backoff, retryBackoff)
	o.ObserveInt64(in.retries, st.Retries.RateLimit, retryRateLimit)
	o.ObserveInt64(in.retries, st.Retries.Token, retryToken)

	o.ObserveInt64(in.queueSize, int64(st.QueueDepth), queueQueued)
	o.ObserveInt64(in.queueSize, st.InFlight, queueInFlight)
	o.ObserveInt64(in.queueCapacity, int64(st.QueueMaxSize))
	o.ObserveInt64(in.queueMemory, int64(st.QueueHeldBytes))
	o.ObserveInt64(in.queueMemoryCapacity, int64(st.QueueMaxBytes))

	if sp := st.Spool; sp.MaxBytes > 0 { // with WithSpool
		o.ObserveInt64(in.spoolSize, sp.Records)
		o.ObserveInt64(in.spoolBacklog, sp.OnDisk)
		o.ObserveInt64(in.spoolFileSize, sp.Bytes)
		o.ObserveInt64(in.spoolFileCapacity, sp.MaxBytes)
		o.ObserveInt64(in.spoolRecovered, sp.Recovered)
		o.ObserveInt64(in.spoolSkipped, sp.SkippedCorrupt)
	}

	sr := st.SendRate
	o.ObserveFloat64(in.sendRateLimit, sr.Limit)
	state := [3]int64{} // unlimited, limited, probing
	switch {
	case sr.Probing:
		state[2] = 1
	case sr.Limit > 0:
		state[1] = 1
	default:
		state[0] = 1
	}
	o.ObserveInt64(in.sendRateState, state[0], rateUnlimited)
	o.ObserveInt64(in.sendRateState, state[1], rateLimited)
	o.ObserveInt64(in.sendRateState, state[2], rateProbing)
	o.ObserveInt64(in.sendRateHeld, sr.Held)
	o.ObserveInt64(in.sendRateWaiting, int64(sr.Waiting))
}
