package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
)

// runConfig is one fleet run.
type runConfig struct {
	clients      int
	rate         float64 // events/s per client
	flushAt      int     // 0: the SDK's default
	queue        int     // MaxQueueSize per client; 0: the SDK's default
	healthy      time.Duration
	outage       time.Duration
	after        time.Duration
	fault        int // 503 or 429
	retryAfter   int // seconds, with a 429
	closeTimeout time.Duration
}

// sdkFlushAt and sdkFlushInterval are the SDK's documented defaults of
// FlushAt and FlushInterval (the command never sets FlushInterval). They
// give the healthy request rate the phases are compared with.
const (
	sdkFlushAt       = 250
	sdkFlushInterval = 5 * time.Second
)

// eventsPerBatch is how many events a healthy client's batch holds: FlushAt,
// or what arrives in one FlushInterval when that is fewer.
func (c runConfig) eventsPerBatch() float64 {
	flushAt := c.flushAt
	if flushAt == 0 {
		flushAt = sdkFlushAt
	}
	return min(float64(flushAt), c.rate*sdkFlushInterval.Seconds())
}

// nominalHealthy is the request rate of the whole fleet while the API is
// healthy: every client sends a batch per eventsPerBatch events.
func (c runConfig) nominalHealthy() float64 {
	return float64(c.clients) * c.rate / c.eventsPerBatch()
}

func (c runConfig) recovery() time.Duration  { return c.healthy + c.outage }
func (c runConfig) producing() time.Duration { return c.healthy + c.outage + c.after }

// fleetClient is one analytics.Client of the fleet and what its producer
// did.
type fleetClient struct {
	index  int
	client *analytics.Client
	// enqueued holds, by sequence number, when each event was accepted
	// (since the run started), or -1 where Enqueue refused it. Only the
	// producer touches it until the producer has ended.
	enqueued  []time.Duration
	refusals  map[string]int // Enqueue errors by text
	closeErr  error
	closeTook time.Duration
}

// outcomes collects the Callback's reports of every client. It is safe
// for concurrent use.
type outcomes struct {
	succeeded atomic.Int64
	mu        sync.Mutex
	failed    map[string]string // messageId → reason
}

// callback returns the analytics.Callback every client of the run shares.
func (o *outcomes) callback() analytics.Callback {
	return analytics.CallbackFunc(func(msg analytics.Message, err error) {
		if err == nil {
			o.succeeded.Add(1)
			return
		}
		id := ""
		if t, ok := msg.(analytics.Track); ok {
			id = t.MessageId
		}
		o.mu.Lock()
		o.failed[id] = failureReason(err)
		o.mu.Unlock()
	})
}

// failureReason names the sentinel err matches, in the order the SDK
// documents them, or gives its text.
func failureReason(err error) string {
	for _, s := range []struct {
		err  error
		name string
	}{
		{analytics.ErrShutdown, "ErrShutdown"},
		{analytics.ErrRetriesExhausted, "ErrRetriesExhausted"},
		{analytics.ErrBackoffBudgetExceeded, "ErrBackoffBudgetExceeded"},
		{analytics.ErrRateLimitBudgetExceeded, "ErrRateLimitBudgetExceeded"},
		{analytics.ErrFatalStatus, "ErrFatalStatus"},
		{analytics.ErrRedirect, "ErrRedirect"},
	} {
		if errors.Is(err, s.err) {
			return s.name
		}
	}
	return err.Error()
}

// messageID is the id of client's event seq: unique in the run.
func messageID(client, seq int) string { return fmt.Sprintf("fleet-c%03d-%09d", client, seq) }

// produce enqueues the client's events at lim's pace until ctx ends. It
// uses Enqueue, which refuses at once when the queue is full, so that a
// full queue does not slow the producer: what it refused is counted.
func (fc *fleetClient) produce(ctx context.Context, start time.Time, lim *rate.Limiter) {
	for seq := 0; ; seq++ {
		if lim.Wait(ctx) != nil {
			return
		}
		at := time.Since(start)
		err := fc.client.Enqueue(analytics.Track{
			MessageId: messageID(fc.index, seq),
			UserId:    fmt.Sprintf("user-%d", seq%1000),
			Event:     "Order Completed",
			Properties: analytics.Properties{
				"fleet_enqueued_ns": int64(at),
				"plan":              "pro",
				"currency":          "USD",
				"sku":               "sku-42",
			},
		})
		if err != nil {
			fc.enqueued = append(fc.enqueued, -1)
			fc.refusals[errorKind(err)]++
			continue
		}
		fc.enqueued = append(fc.enqueued, at)
	}
}

func errorKind(err error) string {
	switch {
	case errors.Is(err, analytics.ErrQueueFull):
		return "ErrQueueFull"
	case errors.Is(err, analytics.ErrClosed):
		return "ErrClosed"
	}
	return err.Error()
}

// fleetRun is what a run leaves for the report.
type fleetRun struct {
	cfg       runConfig
	clients   []*fleetClient
	outcomes  *outcomes
	api       apiRecord
	stats     analytics.Stats // summed over the clients
	wall, cpu time.Duration
	closeAt   time.Duration // when the producers stopped and Close began
	closeTook time.Duration // until the last Close returned
	closeHung bool          // some Close had not returned by the watchdog
}

// runFleet runs one fleet against one mock API and returns what happened.
// It ends by itself: the producers stop after cfg.producing(), every Close
// is bounded by cfg.closeTimeout, and a watchdog gives up 30 s after that.
func runFleet(ctx context.Context, cfg runConfig) (*fleetRun, error) {
	start := time.Now()
	cpu0 := figures.ProcessCPU()
	api := newMockAPI(start, schedule{
		outageStart: cfg.healthy,
		recovery:    cfg.recovery(),
		fault:       cfg.fault,
		retryAfter:  cfg.retryAfter,
	})
	url, stopAPI, err := serve(api)
	if err != nil {
		return nil, err
	}
	defer stopAPI()

	out := &outcomes{failed: make(map[string]string)}
	expected := int(cfg.rate*cfg.producing().Seconds()) + 16
	run := &fleetRun{cfg: cfg, outcomes: out}
	for i := range cfg.clients {
		opts := []analytics.Option{
			analytics.WithEndpoint(url),
			analytics.WithCallback(out.callback()),
			analytics.WithLogger(slog.New(slog.DiscardHandler)),
			analytics.WithCloseTimeout(cfg.closeTimeout),
		}
		if cfg.flushAt > 0 {
			opts = append(opts, analytics.WithFlushAt(cfg.flushAt))
		}
		if cfg.queue > 0 {
			opts = append(opts, analytics.WithMaxQueueSize(cfg.queue))
		}
		c, err := analytics.New("fleet-write-key", opts...)
		if err != nil {
			for _, fc := range run.clients {
				_ = fc.client.Close()
			}
			return nil, fmt.Errorf("client %d: %w", i, err)
		}
		run.clients = append(run.clients, &fleetClient{
			index: i, client: c,
			enqueued: make([]time.Duration, 0, expected),
			refusals: make(map[string]int),
		})
	}

	// The producers.
	pctx, stopProducers := context.WithDeadline(ctx, start.Add(cfg.producing()))
	defer stopProducers()
	burst := max(1, int(cfg.rate/10)) // lets a producer the scheduler held late catch up a little
	var producers sync.WaitGroup
	for _, fc := range run.clients {
		lim := rate.NewLimiter(rate.Limit(cfg.rate), burst)
		producers.Go(func() { fc.produce(pctx, start, lim) })
	}
	producers.Wait()

	// Close every client at once, each bounded by its close timeout.
	run.closeAt = time.Since(start)
	var closers sync.WaitGroup
	for _, fc := range run.clients {
		closers.Go(func() {
			t0 := time.Now()
			fc.closeErr = fc.client.Close()
			fc.closeTook = time.Since(t0)
		})
	}
	closed := make(chan struct{})
	go func() {
		closers.Wait()
		close(closed)
	}()
	watchdog := time.NewTimer(cfg.closeTimeout + 30*time.Second)
	defer watchdog.Stop()
	select {
	case <-closed:
	case <-watchdog.C:
		run.closeHung = true
	case <-ctx.Done():
		run.closeHung = true
	}
	run.closeTook = time.Since(start) - run.closeAt
	run.wall = time.Since(start)
	run.cpu = figures.ProcessCPU() - cpu0

	stopAPI()
	run.api = api.snapshot()
	for _, fc := range run.clients {
		run.stats = addStats(run.stats, fc.client.Stats())
	}
	return run, nil
}

// addStats sums the counters the report uses.
func addStats(a, b analytics.Stats) analytics.Stats {
	a.Enqueued += b.Enqueued
	a.Delivered += b.Delivered
	a.Batches += b.Batches
	a.Attempts += b.Attempts
	a.Retries.Backoff += b.Retries.Backoff
	a.Retries.RateLimit += b.Retries.RateLimit
	a.RateLimitedWaits += b.RateLimitedWaits
	a.TransportErrors.NotWritten += b.TransportErrors.NotWritten
	a.TransportErrors.Written += b.TransportErrors.Written
	return a
}
