// Callbacks shows how a program learns what happened to each event: a
// Callback that counts deliveries and failures and logs every failure with
// slog (matching the reason with errors.Is, the details with errors.As),
// the SDK's own logs as JSON through WithLogger, and the client's Stats
// published with expvar on a local debug endpoint.
//
//	go run ./examples/callbacks
//	go run ./examples/callbacks -hold 1m   # and meanwhile: curl http://127.0.0.1:PORT/debug/vars
//
// Its local tracking API fails batches on purpose: the first gets a 400
// (fatal: never retried), the second two 503s and then a 200 (delivered
// after two retries), the third 503s until its retries run out.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"expvar"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"sync/atomic"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C ends -hold early
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "callbacks:", err)
		os.Exit(1)
	}
}

// outcomes is the Callback. The SDK calls it from its upload goroutines,
// several at once, and a batch's upload slot stays taken until its
// callbacks return: so it counts, logs and returns. Anything slow (writing
// failed events to a file to replay them) belongs on a goroutine of yours.
type outcomes struct {
	log       *slog.Logger
	delivered atomic.Int64
	mu        sync.Mutex
	failed    map[string]int // by reason
}

func (o *outcomes) Success(analytics.Message) { o.delivered.Add(1) }

func (o *outcomes) Failure(msg analytics.Message, err error) {
	reason := reasonOf(err)
	o.mu.Lock()
	o.failed[reason]++
	o.mu.Unlock()

	attrs := []slog.Attr{slog.String("reason", reason), slog.String("message_id", analytics.MessageID(msg))}
	// The error is an *analytics.BatchError: how many attempts were made,
	// and the last attempt's error.
	var batchErr *analytics.BatchError
	if errors.As(err, &batchErr) {
		attrs = append(attrs, slog.Int("attempts", batchErr.Attempts))
	}
	// The last attempt got a response: its status (and Body, RetryAfter,
	// Location).
	var httpErr *analytics.HTTPError
	if errors.As(err, &httpErr) {
		attrs = append(attrs, slog.Int("status", httpErr.StatusCode))
	}
	// The last attempt got no response: had the request been written? If
	// so, the API may have the event (it de-duplicates by messageId).
	var netErr *analytics.TransportError
	if errors.As(err, &netErr) {
		attrs = append(attrs, slog.Bool("maybe_delivered", netErr.Written()))
	}
	attrs = append(attrs, slog.String("error", err.Error()))
	o.log.LogAttrs(context.Background(), slog.LevelError, "event not delivered", attrs...)
}

// reasonOf names why an event failed, for logs and metrics, with errors.Is
// against the SDK's sentinels: never by matching error text.
func reasonOf(err error) string {
	switch {
	case errors.Is(err, analytics.ErrFatalStatus):
		return "fatal_status" // the API refused it: resending cannot help
	case errors.Is(err, analytics.ErrRetriesExhausted):
		return "retries_exhausted" // the API kept failing: an outage
	case errors.Is(err, analytics.ErrBackoffBudgetExceeded), errors.Is(err, analytics.ErrRateLimitBudgetExceeded):
		return "retry_budget_spent"
	case errors.Is(err, analytics.ErrRedirect):
		return "redirect" // check the endpoint
	case errors.Is(err, analytics.ErrShutdown):
		return "shutdown_deadline" // Shutdown's context ended first
	}
	return "other"
}

// currentClient is what the expvar "analytics" shows. expvar has one
// registry per process and Publish panics on a name published twice, so
// the variable is published once and reads whichever client run made last
// (the test calls run more than once). A program with one client calls
// expvar.Publish once, in main, and needs neither of these.
var (
	currentClient atomic.Pointer[analytics.Client]
	publishOnce   sync.Once
)

func publishStats(client *analytics.Client) {
	currentClient.Store(client)
	publishOnce.Do(func() {
		expvar.Publish("analytics", expvar.Func(func() any {
			return currentClient.Load().Stats() // a snapshot, safe from any goroutine
		}))
	})
}

// batchOf returns which batch of 5 a request carries, from its first
// event's "seq" property; -1 if it has none.
func batchOf(r analyticstest.Request) int {
	if len(r.Events) == 0 {
		return -1
	}
	props, _ := r.Events[0]["properties"].(map[string]any)
	seq, _ := props["seq"].(json.Number) // the mock keeps numbers exact
	n, err := seq.Int64()
	if err != nil {
		return -1
	}
	return int(n) / 5
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("callbacks", flag.ContinueOnError)
	events := fs.Int("events", 25, "events to send, in batches of 5")
	debugAddr := fs.String("debug-addr", "127.0.0.1:0", "address of the debug endpoint /debug/vars")
	hold := fs.Duration("hold", 0, "keep /debug/vars up this long after the run, to curl it")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// The mock answers by batch (each batch is 5 events in Enqueue order,
	// so its first event's "seq" says which it is) and by X-Retry-Count:
	// batch 0 is rejected, batch 1 recovers on its third attempt, batch 2
	// never does; the others are accepted.
	server := analyticstest.New().Rule(func(r analyticstest.Request) analyticstest.Answer {
		retries := r.Header.Get("X-Retry-Count")
		switch batchOf(r) {
		case 0:
			return analyticstest.Answer{Status: 400, Body: `{"code":"invalid_request","message":"bad batch"}`}
		case 1:
			if retries != "2" {
				return analyticstest.Status(503)
			}
		case 2:
			return analyticstest.Status(503)
		}
		return analyticstest.Status(200)
	})
	api, err := server.Start()
	if err != nil {
		return err
	}
	defer api.Close()

	// One JSON logger for the program and the SDK. The SDK logs at Warn
	// each attempt that failed and will be retried, and at Error each
	// batch it could not deliver.
	logger := slog.New(slog.NewJSONHandler(stdout, nil))
	cb := &outcomes{log: logger, failed: map[string]int{}}
	client, err := analytics.New("demo-write-key",
		analytics.WithEndpoint(api.URL),
		analytics.WithCallback(cb),
		analytics.WithLogger(logger),
		analytics.WithFlushAt(5),
		// Demo settings: one upload at a time, two retries at most, short
		// waits. In production, keep the defaults (8, 10, 500 ms).
		analytics.WithMaxConcurrentRequests(1),
		analytics.WithRetryCount(2),
		analytics.WithBackoffBase(100*time.Millisecond),
	)
	if err != nil {
		return err
	}
	publishStats(client)

	// expvar registers /debug/vars on http.DefaultServeMux; serving it on
	// a mux of our own, on a loopback address, keeps it off the public
	// listener of a service.
	mux := http.NewServeMux()
	mux.Handle("GET /debug/vars", expvar.Handler())
	debugLn, err := net.Listen("tcp", *debugAddr)
	if err != nil {
		client.Close()
		return err
	}
	debugSrv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = debugSrv.Serve(debugLn) }()
	defer debugSrv.Close()
	varsURL := "http://" + debugLn.Addr().String() + "/debug/vars"
	logger.Info("serving client stats", "url", varsURL)

	for i := range *events {
		err := client.Enqueue(analytics.Track{
			UserId:     fmt.Sprintf("user-%d", i%4),
			Event:      "Report Exported",
			Properties: analytics.NewProperties().Set("seq", i),
		})
		if err != nil { // refused: no callback will come for it
			logger.Error("event not queued", "error", err)
		}
	}

	shutdownCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := client.Shutdown(shutdownCtx); err != nil {
		return err
	}

	// Every callback has returned: the counts are final.
	st := client.Stats()
	failed := 0
	for _, n := range cb.failed {
		failed += n
	}
	fmt.Fprintf(stdout, "\nsummary\n")
	fmt.Fprintf(stdout, "  delivered (Success calls)   %d\n", cb.delivered.Load())
	fmt.Fprintf(stdout, "  failed (Failure calls)      %d\n", failed)
	for _, reason := range []string{"fatal_status", "retries_exhausted", "retry_budget_spent", "redirect", "shutdown_deadline", "other"} {
		if n := cb.failed[reason]; n > 0 {
			fmt.Fprintf(stdout, "    %-25s %d\n", reason, n)
		}
	}
	fmt.Fprintf(stdout, "  HTTP requests               %d (%d backoff retries)\n", st.Attempts, st.Retries.Backoff)

	vars, err := fetchStats(ctx, varsURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nGET %s, \"analytics\":\n%s\n", varsURL, vars)

	// Exactly one callback per accepted event: the SDK's promise.
	if got := cb.delivered.Load() + int64(failed); got != st.Enqueued {
		return fmt.Errorf("%d callbacks for %d events", got, st.Enqueued)
	}

	if *hold > 0 {
		logger.Info("holding the debug endpoint", "url", varsURL, "for", *hold)
		select {
		case <-time.After(*hold):
		case <-ctx.Done():
		}
	}
	return nil
}

// fetchStats reads the "analytics" variable from /debug/vars, as a
// dashboard or `curl | jq .analytics` would.
func fetchStats(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var vars map[string]json.RawMessage
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil {
		return "", fmt.Errorf("decoding /debug/vars: %w", err)
	}
	out, err := json.MarshalIndent(vars["analytics"], "  ", "  ")
	return "  " + string(out), err
}
