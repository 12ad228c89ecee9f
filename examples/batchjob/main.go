// Batchjob is a short-lived program, like a cron job or a CLI command, that
// records events and must not lose any when it exits. It shows what such a
// program needs: settings from the environment (OptionsFromEnv), Shutdown
// with a deadline before the exit (a deferred Close never runs when a
// program calls os.Exit), and an exit status that says whether every event
// was delivered.
//
//	go run ./examples/batchjob
//	ANALYTICS_FLUSH_AT=50 go run ./examples/batchjob -events 300
//	ANALYTICS_RETRY_COUNT=0 go run ./examples/batchjob   # no retries: the 503s lose events, exit status 1
//
// Its local tracking API answers 503 to the first two requests, so the
// exit has to wait for retries. ANALYTICS_ENDPOINT (with
// ANALYTICS_WRITE_KEY) sends the events elsewhere.
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func main() {
	// A SIGINT or SIGTERM (a cron daemon or Kubernetes stopping the job)
	// stops the recording; what was recorded is still sent.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	// os.Exit runs no deferred call. Everything that must happen before
	// the process ends, Shutdown above all, happens inside run, whose
	// defers have all run by now.
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode is 0 when every event was delivered, 2 for bad flags, 1 for
// anything else: a scheduler then sees a job that lost events as failed.
func exitCode(err error, stderr io.Writer) int {
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		return 2 // the flag package has printed the error and the usage
	}
	fmt.Fprintln(stderr, "batchjob:", err)
	return 1
}

// usageError is a bad flag; it wraps the flag package's error.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("batchjob", flag.ContinueOnError)
	fs.SetOutput(stderr)
	events := fs.Int("events", 1000, "events to record")
	failFirst := fs.Int("fail-first", 2, "the local tracking API answers 503 to this many requests first")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "how long the exit may wait for delivery, retries included")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}

	// The job is tuned without a rebuild: ANALYTICS_FLUSH_AT,
	// ANALYTICS_RETRY_COUNT, ANALYTICS_REQUEST_TIMEOUT, ... A malformed
	// value is an error that names the variable.
	envOpts, err := analytics.OptionsFromEnv()
	if err != nil {
		return err
	}
	// The SDK's warnings (attempts that will be retried) and errors
	// (events not delivered) go to stderr, the job's log.
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	opts := []analytics.Option{analytics.WithLogger(logger)}

	// The write key is a secret: OptionsFromEnv does not read it; this
	// example takes it from ANALYTICS_WRITE_KEY.
	writeKey := os.Getenv("ANALYTICS_WRITE_KEY")
	if os.Getenv("ANALYTICS_ENDPOINT") == "" {
		answers := make([]analyticstest.Answer, *failFirst)
		for i := range answers {
			answers[i] = analyticstest.Status(503)
		}
		api, err := analyticstest.New().Script(answers...).Start()
		if err != nil {
			return err
		}
		defer api.Close() // runs after Shutdown: the client sends to it until then
		opts = append(opts, analytics.WithEndpoint(api.URL))
		writeKey = cmp.Or(writeKey, "demo-write-key")
		fmt.Fprintf(stdout, "tracking API:   a local mock at %s, answers 503 to the first %d requests\n", api.URL, *failFirst)
	}
	// Later options win: the environment's come last, so that they
	// override the code's.
	opts = append(opts, envOpts...)
	fmt.Fprintf(stdout, "environment:    %s\n", analyticsEnv())

	client, err := analytics.New(writeKey, opts...)
	if err != nil {
		return err // names the option at fault, e.g. ANALYTICS_FLUSH_AT=0
	}

	start := time.Now()
	recorded, refused := 0, 0
	for i := range *events {
		if ctx.Err() != nil {
			break // interrupted: stop recording, but send what was recorded
		}
		// The job's work; here, one invoice per iteration.
		ev := analytics.Track{
			UserId: fmt.Sprintf("customer-%d", i%100),
			Event:  "Invoice Sent",
			Properties: analytics.NewProperties().
				Set("invoice", fmt.Sprintf("INV-%05d", i)).
				SetRevenue(float64(100 + i%50)).SetCurrency("EUR"),
		}
		// A job that records faster than the API takes events fills the
		// queue (10,000 events by default). It can afford to wait:
		// EnqueueContext waits for room, woken as soon as a batch ends,
		// where Enqueue would return ErrQueueFull at once. A signal ends
		// the wait (ctx), with an error matching ErrQueueFull.
		if err := client.EnqueueContext(ctx, ev); err != nil {
			refused++
			logger.Error("event not recorded", "invoice", i, "error", err)
			continue
		}
		recorded++
	}
	fmt.Fprintf(stdout, "recorded:       %d events in %v\n", recorded, time.Since(start).Round(time.Millisecond))

	// The exit. Shutdown sends what is queued and waits for every batch,
	// retries included, up to the deadline; an event still undelivered
	// then is counted as failed, never dropped silently. The deadline gets
	// a fresh context: ctx may be cancelled already by a signal.
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()
	shutdownErr := client.Shutdown(shutdownCtx)

	// After Shutdown nothing is queued or in flight: every accepted event
	// is delivered or failed.
	st := client.Stats()
	failed := st.Failed.Total()
	fmt.Fprintf(stdout, "delivered:      %d of %d events in %v (%d HTTP requests, %d retries)\n",
		st.Delivered, *events, time.Since(start).Round(time.Millisecond), st.Attempts, st.Retries.Backoff+st.Retries.RateLimit)
	if failed > 0 {
		fmt.Fprintf(stdout, "failed:         %d (%s)\n", failed, failReasons(st.Failed))
	}

	switch {
	case shutdownErr != nil:
		return fmt.Errorf("shutdown did not finish within %v (%w): %d events not delivered", *grace, shutdownErr, failed)
	case failed > 0 || refused > 0:
		return fmt.Errorf("%d events failed, %d refused", failed, refused)
	case recorded < *events:
		return fmt.Errorf("interrupted after %d of %d events (all %d delivered)", recorded, *events, recorded)
	}
	return nil
}

// failReasons lists the reasons events failed for, with their counts.
func failReasons(f analytics.FailedStats) string {
	var out []string
	for _, r := range []struct {
		name string
		n    int64
	}{
		{"retries exhausted", f.RetriesExhausted},
		{"backoff budget exceeded", f.BackoffBudgetExceeded},
		{"rate-limit budget exceeded", f.RateLimitBudgetExceeded},
		{"refused by the API", f.FatalStatus},
		{"redirected", f.Redirect},
		{"shutdown deadline", f.Shutdown},
		{"other", f.Other},
	} {
		if r.n > 0 {
			out = append(out, fmt.Sprintf("%s: %d", r.name, r.n))
		}
	}
	return strings.Join(out, ", ")
}

// analyticsEnv lists the ANALYTICS_ variables that are set, the write key
// excepted.
func analyticsEnv() string {
	var vars []string
	for _, kv := range os.Environ() {
		name, value, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "ANALYTICS_") && name != "ANALYTICS_WRITE_KEY" && value != "" {
			vars = append(vars, kv)
		}
	}
	if len(vars) == 0 {
		return "no ANALYTICS_ variables set: the SDK's defaults (try ANALYTICS_FLUSH_AT=100)"
	}
	slices.Sort(vars)
	return strings.Join(vars, " ")
}
