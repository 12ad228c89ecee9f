// Quickstart sends events through the SDK to a local tracking API that
// fails some requests on purpose, then shows what happened to every event.
//
//	go run ./examples/quickstart            # 10,000 events
//	go run ./examples/quickstart -events 500
//
// It exits 0 when every event was delivered exactly once.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func main() {
	events := flag.Int("events", 10_000, "how many events to send (above 10000, the default MaxQueueSize, Enqueue may return ErrQueueFull)")
	flag.Parse()
	if err := run(*events, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "quickstart:", err)
		os.Exit(1)
	}
}

// outcomes is the Callback. The SDK calls it from several upload goroutines
// at once, so it counts with atomics and keeps the first error under a Once.
type outcomes struct {
	delivered, failed atomic.Int64
	firstErr          sync.Once
	err               error // the first failure's error; read after Close
}

func (o *outcomes) Success(analytics.Message) { o.delivered.Add(1) }

func (o *outcomes) Failure(_ analytics.Message, err error) {
	o.failed.Add(1)
	o.firstErr.Do(func() { o.err = err })
}

func run(events int, stdout io.Writer) error {
	if events < 1 {
		return fmt.Errorf("-events must be at least 1, got %d", events)
	}

	// The first answers exercise both retry paths: 503s take the backoff
	// path (jittered waits, counted retries); a 429 with Retry-After pauses
	// every upload for that long without spending a retry. Then all 200s.
	server := analyticstest.New().Script(
		analyticstest.Status(503),
		analyticstest.Status(503),
		analyticstest.RetryAfter(429, "1"),
		analyticstest.Status(200),
		analyticstest.Status(503),
	)
	ln, err := server.Start()
	if err != nil {
		return fmt.Errorf("starting the local tracking API: %w", err)
	}
	defer ln.Close() // deferred, so it runs after the client has shut down
	fmt.Fprintf(stdout, "local tracking API at %s answers 503, 503, 429 (Retry-After: 1), 200, 503, then 200s\n\n", ln.URL)

	var cb outcomes
	client, err := analytics.New("demo-write-key", analytics.WithEndpoint(ln.URL), analytics.WithCallback(&cb))
	if err != nil {
		return err
	}

	start := time.Now()
	plans := []string{"free", "pro", "enterprise"}
	names := []string{"Page Viewed", "Button Clicked", "Order Completed", "Signed Up"}
	enqueueErrs, refused := map[string]int{}, 0
	for i := range events {
		err := client.Enqueue(analytics.Track{
			UserId: fmt.Sprintf("user-%04d", i%1000),
			Event:  names[i%len(names)],
			Properties: analytics.NewProperties().Set("plan", plans[i%len(plans)]).
				Set("seq", i).SetRevenue(float64(i%50) + 0.99),
		})
		// Enqueue never blocks: it fails fast (invalid, too large, queue
		// full, closed) and the event is not queued.
		if err != nil {
			enqueueErrs[err.Error()]++
			refused++
		}
	}

	// Shutdown sends what is queued and waits for every batch, retries
	// included; the deadline only guards against a server that never heals.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shutdownErr := client.Shutdown(ctx)
	elapsed := time.Since(start)

	st := client.Stats()
	statuses := map[int]int{}
	for _, r := range server.Requests() {
		statuses[r.Status]++
	}
	var answers []string
	for _, code := range slices.Sorted(maps.Keys(statuses)) {
		answers = append(answers, fmt.Sprintf("%d×%d", statuses[code], code))
	}
	received, copies := server.Delivered(), 0
	for _, n := range received {
		copies += n
	}

	w := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	row := func(label string, value any) { fmt.Fprintf(w, "%s\t%v\n", label, value) }
	row("events enqueued", st.Enqueued)
	row("enqueue errors", refused)
	row("delivered (callback successes)", cb.delivered.Load())
	row("failed (callback failures)", cb.failed.Load())
	row("batches delivered / failed", fmt.Sprintf("%d / %d", st.BatchesDelivered, st.BatchesFailed))
	row("HTTP requests", st.Attempts)
	row("retries, backoff path", st.Retries.Backoff)
	row("retries, rate-limit path", st.Retries.RateLimit)
	row("rate-limited waits", st.RateLimitedWaits)
	row("bytes sent (gzip)", st.BytesSent)
	row("server: TCP connections", ln.Conns())
	row("server: answers", strings.Join(answers, " "))
	row("server: events in 2xx answers", copies)
	row("server: distinct messageIds", len(received))
	row("elapsed", elapsed.Round(time.Millisecond))
	w.Flush()

	for _, msg := range slices.Sorted(maps.Keys(enqueueErrs)) {
		fmt.Fprintf(stdout, "enqueue error ×%d: %s\n", enqueueErrs[msg], msg)
	}

	problem := verdict(events, refused, &cb, received, copies, shutdownErr)
	if problem != nil {
		fmt.Fprintln(stdout, "\nverdict: FAILED:", problem)
		return problem
	}
	fmt.Fprintf(stdout, "\nverdict: all %d events delivered exactly once\n", events)
	return nil
}

// verdict says what, if anything, kept the run from delivering every event
// exactly once.
func verdict(events, enqueueErrs int, cb *outcomes, received map[string]int, copies int, shutdownErr error) error {
	switch {
	case shutdownErr != nil:
		return fmt.Errorf("shutdown did not finish in time (%w); undelivered events were reported as failed", shutdownErr)
	case enqueueErrs > 0:
		return fmt.Errorf("%d of %d events were refused by Enqueue", enqueueErrs, events)
	case cb.failed.Load() > 0:
		return fmt.Errorf("%d events failed, the first with: %w", cb.failed.Load(), cb.err)
	case cb.delivered.Load() != int64(events):
		return fmt.Errorf("%d success callbacks for %d events", cb.delivered.Load(), events)
	case len(received) != events:
		return fmt.Errorf("the server received %d distinct events, want %d", len(received), events)
	case copies != events:
		return fmt.Errorf("the server accepted %d copies of %d events: duplicates", copies, events)
	}
	return nil
}
