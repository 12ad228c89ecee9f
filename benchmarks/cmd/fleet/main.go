// Command fleet simulates a fleet of clients against one tracking API that
// is healthy, then fails every request for a while, then recovers, and
// measures what the API saw: its request rate in each phase, the burst
// after recovery, how long the backlog took to arrive, and whether every
// event arrived exactly once.
//
// Every client is a real analytics.Client, with the SDK's own HTTP client,
// in this one process; the tracking API is a small handler in this process
// on 127.0.0.1. The command never changes a retry setting: it measures the
// SDK's retry defaults as they are.
//
//	go run ./cmd/fleet                                  # the form: 50 clients × 100 events/s, FlushAt 25, a 20 s outage; 503, then 429
//	go run ./cmd/fleet -fault 503 -json                 # one run, its figures as JSON
//	go run ./cmd/fleet -clients 20 -rate 20 -sdk-defaults -outage 5m -fault 503   # the long form (~6 min)
//	go run ./cmd/fleet -sdk-defaults -clients 20 -rate 20 -outage 10m -queue 20000 -fault 503
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

func main() {
	var (
		clients      = flag.Int("clients", 50, "clients (each a real analytics.Client with its own HTTP client)")
		rateFlag     = flag.Float64("rate", 100, "events/s each client enqueues")
		flushAt      = flag.Int("flushat", 25, "FlushAt of every client")
		healthy      = flag.Duration("healthy", 10*time.Second, "how long the API is healthy before the outage")
		outage       = flag.Duration("outage", 20*time.Second, "how long the API fails every request")
		after        = flag.Duration("after", 20*time.Second, "how long the clients keep producing after recovery; then every client is closed, and Close waits for the rest")
		faults       = flag.String("fault", "503,429", "what the API answers during the outage: 503, 429, or both comma-separated (one run each)")
		retryAfter   = flag.Int("retry-after", 5, "the Retry-After (seconds) sent with a 429; 0 sends none")
		queue        = flag.Int("queue", 0, "MaxQueueSize of every client; 0: room for every event of the run (with -sdk-defaults: the SDK's default)")
		sdkDefaults  = flag.Bool("sdk-defaults", false, "every option at the SDK's default except the endpoint, a callback, a silent logger and the close timeout; -flushat and -queue apply only when given")
		closeTimeout = flag.Duration("close-timeout", 5*time.Minute, "WithCloseTimeout of every client: how long Close may wait for the backlog (the run gives up 30 s after it)")
		jsonOut      = flag.Bool("json", false, "print each run's figures as one JSON line instead of tables")
		timeline     = flag.Bool("timeline", false, "also print the requests the API saw in every second of the run")
	)
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: go run ./cmd/fleet [flags]\n\n"+
			"A fleet of clients against one mock tracking API that is healthy, fails, then recovers.\n\n")
		flag.PrintDefaults()
	}
	flag.Parse()

	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	cfg := runConfig{
		clients: *clients, rate: *rateFlag, flushAt: *flushAt, queue: *queue,
		healthy: *healthy, outage: *outage, after: *after,
		retryAfter: *retryAfter, closeTimeout: *closeTimeout,
	}
	settings := "SDK defaults"
	if *sdkDefaults {
		settings = "SDK defaults (every option)"
		if !set["flushat"] {
			cfg.flushAt = 0
		}
	} else if cfg.queue == 0 {
		// Room for every event the run makes, so that the queue never
		// refuses one: the run measures retries, not the queue's bound.
		cfg.queue = max(cfg.flushAt, int(math.Ceil(cfg.rate*cfg.producing().Seconds()*1.1)))
	}
	if err := check(cfg); err != nil {
		fatal(err)
	}
	var runs []int
	for f := range strings.SplitSeq(*faults, ",") {
		code, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || (code != 503 && code != 429) {
			fatal(fmt.Errorf("-fault: %q is not 503 or 429", f))
		}
		runs = append(runs, code)
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var results []*result
	for _, fault := range runs {
		cfg.fault = fault
		if !*jsonOut {
			fmt.Fprintf(os.Stderr, "fleet: running %d clients against a %d outage (about %v, then Close)...\n",
				cfg.clients, fault, cfg.producing().Round(time.Second))
		}
		run, err := runFleet(ctx, cfg)
		if err != nil {
			fatal(err)
		}
		r := report(run, settings)
		results = append(results, r)
		if *jsonOut {
			b, err := json.Marshal(r)
			if err != nil {
				fatal(err)
			}
			fmt.Println(string(b))
			continue
		}
		writeRun(os.Stdout, r)
		if *timeline {
			writeTimeline(r)
		}
		if ctx.Err() != nil {
			fatal(ctx.Err())
		}
	}
	if !*jsonOut && len(results) > 1 {
		writeSummary(os.Stdout, results)
	}
}

func check(c runConfig) error {
	switch {
	case c.clients < 1 || c.clients > 1000:
		return fmt.Errorf("-clients must be 1 to 1000, got %d", c.clients)
	case c.rate <= 0 || c.rate > 100_000:
		return fmt.Errorf("-rate must be positive and at most 100000, got %g", c.rate)
	case c.healthy <= 0 || c.outage <= 0 || c.after <= 0:
		return fmt.Errorf("-healthy, -outage and -after must be positive")
	case c.healthy+c.outage+c.after > 2*time.Hour:
		return fmt.Errorf("-healthy + -outage + -after must be at most 2h")
	case c.closeTimeout <= 0 || c.closeTimeout > time.Hour:
		return fmt.Errorf("-close-timeout must be positive and at most 1h (the run must end by itself)")
	case c.retryAfter < 0:
		return fmt.Errorf("-retry-after must not be negative")
	}
	return nil
}

// writeTimeline prints the requests of every second, ten to a line.
func writeTimeline(r *result) {
	fmt.Println("requests per second since the start:")
	for i := 0; i < len(r.PerSecond); i += 10 {
		var b strings.Builder
		fmt.Fprintf(&b, "%4ds:", i)
		for _, n := range r.PerSecond[i:min(i+10, len(r.PerSecond))] {
			fmt.Fprintf(&b, " %6d", n)
		}
		fmt.Println(b.String())
	}
	fmt.Println()
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "fleet:", err)
	os.Exit(1)
}
