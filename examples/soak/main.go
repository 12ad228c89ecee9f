// Soak enqueues events at a set rate for a set time against the mock
// tracking API answering with a mix of faults, prints what the SDK is
// doing every few seconds, and ends with a verdict: nothing lost (every
// accepted event delivered or failed, exactly once; every delivered one
// received by the server in a 2xx answer), no failure unless a retry
// budget ran out, and a flat RSS (the largest RSS of the second half of
// the run at most a little above that of the first half).
//
//	go run ./examples/soak                                  # 1 minute at 2,000 events/s
//	go run ./examples/soak -duration 10m -rate 2000 -report 10s
//	go run ./examples/soak -faults '503=5,429=1,drop=1' -latency 50ms
//	go run ./examples/soak -endpoint http://127.0.0.1:8787  # an external tracking API: client-side checks only
//
// The mock runs in this process on 127.0.0.1 (analyticstest), so the RSS is
// that of the SDK and the mock together; the mock's record is cleared
// twice a second and the run's bookkeeping is a few bitsets sized at
// start, so neither grows with the run. It stops by itself after
// -duration (or at SIGINT), closes the client, and exits 0 when the
// verdict is OK, 1 when not, 2 for bad flags.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	analytics "github.com/dualpath/analytics-go"
)

func main() {
	cfg := defaultConfig()
	var mix string
	flag.Float64Var(&cfg.rate, "rate", cfg.rate, "events enqueued per second")
	flag.DurationVar(&cfg.duration, "duration", cfg.duration, "how long to enqueue; then the client is closed and the verdict printed")
	flag.DurationVar(&cfg.report, "report", cfg.report, "interval between progress lines")
	flag.StringVar(&mix, "faults", defaultMix, "fault mix, percent of requests: 503, 500, 429 (with -retry-after), drop (connection closed after the request), partial (half a response), stall (no answer: the per-attempt timeout)")
	flag.DurationVar(&cfg.latency, "latency", cfg.latency, "each answered request waits a random time up to this")
	flag.StringVar(&cfg.retryAfter, "retry-after", cfg.retryAfter, "the Retry-After value of the 429s")
	flag.DurationVar(&cfg.timeout, "timeout", cfg.timeout, "the SDK's per-attempt RequestTimeout")
	flag.IntVar(&cfg.flushAt, "flush-at", cfg.flushAt, "the SDK's FlushAt: events per batch")
	flag.DurationVar(&cfg.backoffBase, "backoff-base", cfg.backoffBase, "the SDK's BackoffBase")
	flag.DurationVar(&cfg.shutdown, "shutdown", cfg.shutdown, "how long Shutdown may take at the end")
	flag.StringVar(&cfg.endpoint, "endpoint", "", "an external tracking API; default: the mock, in process on 127.0.0.1")
	flag.Parse()

	var err error
	if cfg.faults, err = parseMix(mix); err == nil {
		err = cfg.validate()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "soak:", err)
		os.Exit(1)
	}
	if !res.OK() {
		os.Exit(1)
	}
}

// config is a run's settings; see the flags.
type config struct {
	rate        float64
	duration    time.Duration
	report      time.Duration
	faults      mix
	latency     time.Duration
	retryAfter  string
	timeout     time.Duration
	flushAt     int
	backoffBase time.Duration
	shutdown    time.Duration
	endpoint    string
	sample      time.Duration // RSS sampling interval
}

const defaultMix = "503=5,429=1,drop=1,partial=0.5,stall=0.05"

func defaultConfig() config {
	m, _ := parseMix(defaultMix)
	return config{
		rate:        2000,
		duration:    time.Minute,
		report:      5 * time.Second,
		faults:      m,
		latency:     20 * time.Millisecond,
		retryAfter:  "1",
		timeout:     2 * time.Second,
		flushAt:     250,                    // the SDK's default
		backoffBase: 500 * time.Millisecond, // the SDK's default
		shutdown:    2 * time.Minute,
		sample:      250 * time.Millisecond,
	}
}

func (c config) validate() error {
	switch {
	case c.rate <= 0 || c.rate > 1e6:
		return fmt.Errorf("-rate %v: want more than 0 and at most 1e6 events/s", c.rate)
	case c.duration <= 0 || c.duration > 24*time.Hour:
		return fmt.Errorf("-duration %v: want more than 0 and at most 24h", c.duration)
	case c.report <= 0:
		return fmt.Errorf("-report %v: want more than 0", c.report)
	case c.latency < 0 || c.timeout <= 0 || c.shutdown <= 0 || c.backoffBase < 0:
		return fmt.Errorf("-latency, -timeout, -shutdown and -backoff-base must not be negative; -timeout and -shutdown not 0")
	case c.flushAt < 1 || c.flushAt > analytics.MaxBatchEvents:
		return fmt.Errorf("-flush-at %d: want 1 to %d, the most events a batch request holds", c.flushAt, analytics.MaxBatchEvents)
	}
	return nil
}
