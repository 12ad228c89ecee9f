package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	analytics "github.com/dualpath/analytics-go"
)

// outcomes is the Callback: it marks each event's outcome by its number.
type outcomes struct {
	delivered, failed *bitset
	nDelivered        atomic.Int64
	nFailed           atomic.Int64
	twice             atomic.Int64 // a second outcome for an event: must stay 0
	unknown           atomic.Int64 // an outcome for a messageId we did not send

	mu       sync.Mutex
	reasons  map[string]int64 // failed events by sentinel
	firstErr error
}

func newOutcomes(events int) *outcomes {
	return &outcomes{delivered: newBitset(events), failed: newBitset(events), reasons: map[string]int64{}}
}

func (o *outcomes) Success(m analytics.Message) {
	o.nDelivered.Add(1)
	o.mark(m, o.delivered)
}

func (o *outcomes) Failure(m analytics.Message, err error) {
	o.nFailed.Add(1)
	o.mark(m, o.failed)
	o.mu.Lock()
	o.reasons[reason(err)]++
	if o.firstErr == nil {
		o.firstErr = err
	}
	o.mu.Unlock()
}

func (o *outcomes) mark(m analytics.Message, b *bitset) {
	t, _ := m.(analytics.Track)
	n, ok := parseID(t.MessageId)
	if !ok {
		o.unknown.Add(1)
		return
	}
	other := o.failed
	if b == o.failed {
		other = o.delivered
	}
	if b.set(n) || other.has(n) {
		o.twice.Add(1)
	}
}

// budgetReasons are the failures a fault mix may cause legitimately: the
// server failed for longer than the retry settings allow.
var budgetReasons = map[string]bool{"retries exhausted": true, "backoff budget exceeded": true, "rate-limit budget exceeded": true}

func reason(err error) string {
	switch {
	case errors.Is(err, analytics.ErrRetriesExhausted):
		return "retries exhausted"
	case errors.Is(err, analytics.ErrBackoffBudgetExceeded):
		return "backoff budget exceeded"
	case errors.Is(err, analytics.ErrRateLimitBudgetExceeded):
		return "rate-limit budget exceeded"
	case errors.Is(err, analytics.ErrFatalStatus):
		return "fatal status"
	case errors.Is(err, analytics.ErrRedirect):
		return "redirect"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "shutdown cut short"
	}
	return "other"
}

// rssSample is the process's resident set at a moment of the run.
type rssSample struct {
	at  time.Duration
	rss int64 // bytes; 0 when not available
}

// result is what a run found; OK is the verdict.
type result struct {
	enqueued, refused   int64
	delivered, failed   int64
	budgetFailed        int64
	twice, unknown      int64
	notReceived         int64 // delivered, but in no 2xx request the mock answered
	checkedServer       bool
	rssFirst, rssSecond int64 // max RSS of each half of the run
	rssJudged, rssFlat  bool
	shutdownErr         error
	problems            []string
}

// OK: nothing lost, nothing reported twice, no failure but budget ones,
// RSS flat (when there were enough samples to judge).
func (r *result) OK() bool { return len(r.problems) == 0 }

// minRSSJudge is the shortest run whose RSS is judged: in a shorter one,
// the heap and (under -race) the shadow memory are still growing to their
// working size.
const minRSSJudge = time.Minute

// rssFlat reports whether the second half's largest RSS is at most 10%
// and 8 MiB above the first half's, for what the GC's pacing moves about.
func rssFlat(first, second int64) bool { return second <= first+first/10+8<<20 }

// run soaks the SDK as cfg says, printing to out, and returns the verdict.
func run(ctx context.Context, cfg config, out io.Writer) (*result, error) {
	maxEvents := int(cfg.rate*cfg.duration.Seconds()) + 1024
	endpoint := cfg.endpoint
	var snk *sink
	if endpoint == "" {
		var err error
		if snk, err = startSink(cfg, maxEvents); err != nil {
			return nil, fmt.Errorf("starting the mock tracking API: %w", err)
		}
		defer snk.close() // after the client's Shutdown
		endpoint = snk.ln.URL
		fmt.Fprintf(out, "mock tracking API at %s: %v, latency up to %v, 429 with Retry-After %s\n", endpoint, cfg.faults, cfg.latency, cfg.retryAfter)
	} else {
		fmt.Fprintf(out, "external tracking API at %s: -faults and -latency do not apply; server-side checks skipped\n", endpoint)
	}
	fmt.Fprintf(out, "%.0f events/s for %v; RequestTimeout %v, FlushAt %d, BackoffBase %v, other options the SDK's defaults\n\n",
		cfg.rate, cfg.duration, cfg.timeout, cfg.flushAt, cfg.backoffBase)

	cb := newOutcomes(maxEvents)
	client, err := analytics.New("soak-write-key",
		analytics.WithEndpoint(endpoint),
		analytics.WithCallback(cb),
		analytics.WithRequestTimeout(cfg.timeout),
		analytics.WithFlushAt(cfg.flushAt),
		analytics.WithBackoffBase(cfg.backoffBase),
	)
	if err != nil {
		return nil, err
	}

	start := time.Now()
	var (
		wg      sync.WaitGroup
		refused atomic.Int64
		sent    atomic.Int64
		samples []rssSample
		smu     sync.Mutex
	)
	runCtx, stop := context.WithTimeout(ctx, cfg.duration)
	defer stop()

	// The producer: a token per event from a limiter at the target rate,
	// taken 5 ms' worth at a time so the pacing costs little at high rates;
	// a burst of 100 ms' worth lets it catch up after a scheduling hiccup.
	wg.Go(func() {
		chunk := max(1, int(cfg.rate/200))
		pace := rate.NewLimiter(rate.Limit(cfg.rate), max(chunk, int(cfg.rate/10)))
		for n := 0; n < maxEvents; n += chunk {
			k := min(chunk, maxEvents-n)
			if err := pace.WaitN(runCtx, k); err != nil {
				return // the run is over
			}
			for i := n; i < n+k; i++ {
				if err := client.Enqueue(event(i)); err != nil {
					refused.Add(1)
				}
				sent.Add(1)
			}
		}
	})
	// RSS samples for the verdict, and the mock's record trimmed.
	wg.Go(func() {
		tick := time.NewTicker(cfg.sample)
		defer tick.Stop()
		lastTrim := time.Now()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
			}
			smu.Lock()
			samples = append(samples, rssSample{at: time.Since(start), rss: readRSS()})
			smu.Unlock()
			if snk != nil && time.Since(lastTrim) >= 500*time.Millisecond {
				snk.trim(cfg)
				lastTrim = time.Now()
			}
		}
	})
	// Progress lines.
	fmt.Fprintf(out, "%8s %10s %10s %7s %9s %9s %7s %8s %8s %8s %10s\n",
		"time", "enqueued", "delivered", "failed", "retry-bo", "retry-rl", "queue", "inflight", "RSS MiB", "heap MiB", "server-2xx")
	progress := func() {
		st := client.Stats()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		var copies int64
		if snk != nil {
			copies = snk.counts().copies
		}
		fmt.Fprintf(out, "%8s %10d %10d %7d %9d %9d %7d %8d %8.1f %8.1f %10d\n",
			time.Since(start).Round(time.Second), st.Enqueued, st.Delivered, failedSum(st.Failed),
			st.Retries.Backoff, st.Retries.RateLimit, st.QueueDepth, st.InFlight,
			mib(readRSS()), mib(int64(ms.HeapInuse)), copies)
	}
	wg.Go(func() {
		tick := time.NewTicker(cfg.report)
		defer tick.Stop()
		for {
			select {
			case <-runCtx.Done():
				return
			case <-tick.C:
				progress()
			}
		}
	})
	<-runCtx.Done()
	wg.Wait()
	progress()

	// Close: everything queued is sent, every batch reaches its outcome.
	fmt.Fprintf(out, "\nenqueueing stopped after %v; closing the client\n", time.Since(start).Round(time.Millisecond))
	sctx, cancel := context.WithTimeout(context.Background(), cfg.shutdown)
	defer cancel()
	closeStart := time.Now()
	res := &result{shutdownErr: client.Shutdown(sctx), refused: refused.Load()}
	closeTook := time.Since(closeStart)
	progress()

	st := client.Stats()
	res.enqueued, res.delivered, res.failed = st.Enqueued, cb.nDelivered.Load(), cb.nFailed.Load()
	res.twice, res.unknown = cb.twice.Load(), cb.unknown.Load()
	cb.mu.Lock()
	for r, n := range cb.reasons {
		if budgetReasons[r] {
			res.budgetFailed += n
		}
	}
	reasons, firstErr := cb.reasons, cb.firstErr
	cb.mu.Unlock()

	// Which accepted events got which outcome: events were numbered in
	// order, those that Enqueue refused got none.
	var accepted, noOutcome int64
	for n := range int(sent.Load()) {
		d, f := cb.delivered.has(n), cb.failed.has(n)
		if d || f {
			accepted++
		}
		if d && snk != nil && !snk.seen.has(n) {
			res.notReceived++
		}
	}
	noOutcome = res.enqueued - accepted
	res.checkedServer = snk != nil

	smu.Lock()
	half := cfg.duration / 2
	var n1, n2 int
	for _, s := range samples {
		if s.at < half {
			res.rssFirst, n1 = max(res.rssFirst, s.rss), n1+1
		} else {
			res.rssSecond, n2 = max(res.rssSecond, s.rss), n2+1
		}
	}
	smu.Unlock()
	res.rssJudged = cfg.duration >= minRSSJudge && n1 >= 4 && n2 >= 4 && res.rssFirst > 0
	res.rssFlat = !res.rssJudged || rssFlat(res.rssFirst, res.rssSecond)

	// The summary.
	fmt.Fprintf(out, "\nclose took %v (shutdown error: %v)\n", closeTook.Round(time.Millisecond), res.shutdownErr)
	fmt.Fprintf(out, "enqueued %d, refused by Enqueue %d; delivered %d, failed %d", res.enqueued, res.refused, res.delivered, res.failed)
	for r, n := range reasons {
		fmt.Fprintf(out, " (%s %d)", r, n)
	}
	fmt.Fprintf(out, "\nbatches %d (delivered %d, failed %d); attempts %d; retries: backoff %d, rate-limit %d; rate-limited waits %d; transport errors: not written %d, written %d; bytes sent %d\n",
		st.Batches, st.BatchesDelivered, st.BatchesFailed, st.Attempts, st.Retries.Backoff, st.Retries.RateLimit,
		st.RateLimitedWaits, st.TransportErrors.NotWritten, st.TransportErrors.Written, st.BytesSent)
	if snk != nil {
		c := snk.counts()
		fmt.Fprintf(out, "server: answers %s; events in 2xx answers %d, of which resent after a lost answer %d\n", c.answers(), c.copies, c.dupes)
	}
	if res.rssJudged {
		fmt.Fprintf(out, "RSS: max %.1f MiB in the first half, %.1f MiB in the second\n", mib(res.rssFirst), mib(res.rssSecond))
	} else {
		fmt.Fprintf(out, "RSS: not judged (a run under %v is mostly warm-up; RSS readable: %v), max %.1f MiB in the first half, %.1f MiB in the second\n",
			minRSSJudge, res.rssFirst > 0, mib(res.rssFirst), mib(res.rssSecond))
	}

	// The verdict.
	problem := func(format string, args ...any) { res.problems = append(res.problems, fmt.Sprintf(format, args...)) }
	if res.delivered+res.failed != res.enqueued {
		problem("lost: %d enqueued, %d delivered + %d failed", res.enqueued, res.delivered, res.failed)
	}
	if noOutcome != 0 {
		problem("%d accepted events have no outcome", noOutcome)
	}
	if res.twice > 0 || res.unknown > 0 {
		problem("%d events reported twice, %d outcomes for unknown events", res.twice, res.unknown)
	}
	if res.notReceived > 0 {
		problem("%d events reported delivered that the server never answered 2xx", res.notReceived)
	}
	if res.refused > 0 {
		problem("Enqueue refused %d events (queue full?)", res.refused)
	}
	if res.failed > res.budgetFailed {
		problem("%d events failed for another reason than a retry budget; the first: %v", res.failed-res.budgetFailed, firstErr)
	}
	if res.shutdownErr != nil {
		problem("Shutdown did not finish within %v: %v", cfg.shutdown, res.shutdownErr)
	}
	if !res.rssFlat {
		problem("RSS grew: max %.1f MiB in the first half, %.1f MiB in the second", mib(res.rssFirst), mib(res.rssSecond))
	}
	if res.OK() {
		fmt.Fprintf(out, "\nverdict: OK: %d events enqueued, %d delivered, %d failed (retry budgets), nothing lost, %s\n",
			res.enqueued, res.delivered, res.failed, map[bool]string{true: "RSS flat", false: "RSS not judged"}[res.rssJudged])
	} else {
		fmt.Fprintln(out, "\nverdict: FAILED")
		for _, p := range res.problems {
			fmt.Fprintln(out, "  -", p)
		}
	}
	return res, nil
}

func failedSum(f analytics.FailedStats) int64 {
	return f.RetriesExhausted + f.BackoffBudgetExceeded + f.RateLimitBudgetExceeded + f.FatalStatus + f.Redirect + f.Shutdown + f.Other
}

var (
	eventNames = []string{"Page Viewed", "Button Clicked", "Order Completed", "Signed Up"}
	plans      = []string{"free", "pro", "enterprise"}
)

func event(n int) analytics.Track {
	return analytics.Track{
		MessageId: eventID(n),
		UserId:    "user-" + strconv.Itoa(n%1000),
		Event:     eventNames[n%len(eventNames)],
		Properties: analytics.NewProperties().Set("plan", plans[n%len(plans)]).
			Set("seq", n).SetRevenue(float64(n%50) + 0.99),
	}
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// readRSS returns the process's resident set size from /proc/self/status
// (Linux), 0 where that is not available.
func readRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := bytes.CutPrefix(sc.Bytes(), []byte("VmRSS:")); ok {
			fields := bytes.Fields(rest)
			if len(fields) >= 1 {
				kb, err := strconv.ParseInt(string(fields[0]), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return 0
}
