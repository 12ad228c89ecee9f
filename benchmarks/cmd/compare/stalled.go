package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	ours "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
)

// The stalled scenario: our SDK against a tracking API that accepts
// connections and never answers. Enqueue must go on returning at once
// (ErrQueueFull once the queue is full), memory must stay bounded by the
// queue, and Shutdown(ctx) must return when ctx ends, reporting every
// event it could not send as failed.

// defaultMaxQueueBytes is our SDK's documented default of MaxQueueBytes.
const defaultMaxQueueBytes = 64 << 20

// maxBatchBody bounds one batch body; MaxConcurrentRequests of them may be
// in flight, out of the queue.
const maxBatchBody = ours.MaxBatchBytes

// stalledVariants are the configurations the stalled scenario runs.
var stalledVariants = []struct{ name, doc string }{
	{"defaults", "every default (MaxQueueSize 10,000 binds first), a Callback counting outcomes"},
	{"bytes", "MaxQueueSize 1,000,000 so that MaxQueueBytes (64 MiB) binds; no Callback (failures from Stats)"},
	{"bytes+callback", "MaxQueueSize 1,000,000, a Callback counting outcomes (the queue also keeps each Message)"},
	{"bytes+memlimit", "as `bytes`, in a process with a soft memory limit (GOMEMLIMIT) of 64 MiB"},
}

type stalledResult struct {
	Variant       string  `json:"variant"`
	Events        int     `json:"events"`
	Accepted      int64   `json:"accepted"`
	QueueFull     int64   `json:"queue_full"`
	OtherErrors   int64   `json:"other_errors"`
	EnqueueNs     int64   `json:"enqueue_ns"` // all Enqueue calls
	LatP50Ns      int64   `json:"lat_p50_ns"`
	LatP99Ns      int64   `json:"lat_p99_ns"`
	LatP999Ns     int64   `json:"lat_p999_ns"`
	LatMaxNs      int64   `json:"lat_max_ns"`
	LatMaxFullNs  int64   `json:"lat_max_full_ns"` // slowest ErrQueueFull answer
	Over1ms       int64   `json:"over_1ms"`        // Enqueue calls that took 1 ms or more
	NoiseGaps     int64   `json:"noise_gaps"`      // gaps of 1 ms or more in 1 s of busy loop before New: the machine's hiccups
	GCCycles      uint64  `json:"gc_cycles"`       // during the enqueue phase
	GCAssistSec   float64 `json:"gc_assist_sec"`   // CPU time goroutines spent assisting the GC then
	GCPauseMaxNs  int64   `json:"gc_pause_max_ns"` // longest stop-the-world pause then (bucket bound)
	AllocPerCall  float64 `json:"alloc_per_call"`  // bytes allocated per Enqueue, over the enqueue phase
	MallocPerCall float64 `json:"malloc_per_call"`

	BaselineRSSKiB int64   `json:"baseline_rss_kib"` // before New
	PeakRSSKiB     int64   `json:"peak_rss_kib"`     // VmHWM at the end
	LiveHeapBytes  uint64  `json:"live_heap_bytes"`  // heap in use after a GC, queue full, before Shutdown
	BaselineHeap   uint64  `json:"baseline_heap"`    // the same before New
	QueueBytes     int     `json:"queue_bytes"`      // Stats().QueueBytes then
	QueueDepth     int     `json:"queue_depth"`
	InFlight       int64   `json:"in_flight"`
	RSSTimeline    []int64 `json:"rss_timeline_kib"` // VmRSS every 100 ms

	ShutdownNs      int64  `json:"shutdown_ns"`
	ShutdownErr     string `json:"shutdown_err"`
	CallbackFailed  int64  `json:"callback_failed"`  // Failure calls
	CallbackCtxErr  int64  `json:"callback_ctx_err"` // of which errors.Is(err, ctx.Err())
	CallbackSuccess int64  `json:"callback_success"`
	StatsFailedShut int64  `json:"stats_failed_shutdown"`
	StatsDelivered  int64  `json:"stats_delivered"`
	Goroutines      int    `json:"goroutines_after"` // after Shutdown returned
}

// outcomes is a Callback that counts.
type outcomes struct {
	success, failed, ctxErr atomic.Int64
}

func (o *outcomes) Success(ours.Message) { o.success.Add(1) }
func (o *outcomes) Failure(_ ours.Message, err error) {
	o.failed.Add(1)
	if errors.Is(err, context.DeadlineExceeded) {
		o.ctxErr.Add(1)
	}
}

// latencies is a log-linear histogram of durations: 8 buckets per power of
// two, so a quantile is within 12.5%.
type latencies struct {
	counts [64 * 8]int64
	n      int64
	max    int64
}

func (h *latencies) add(ns int64) {
	if ns < 1 {
		ns = 1
	}
	e := bits.Len64(uint64(ns)) - 1 // 2^e <= ns
	m := 0
	if e >= 3 {
		m = int(ns>>(e-3)) & 7
	}
	h.counts[e*8+m]++
	h.n++
	h.max = max(h.max, ns)
}

// quantile returns the upper edge of the bucket holding quantile q.
func (h *latencies) quantile(q float64) int64 {
	want := int64(q * float64(h.n))
	var seen int64
	for i, c := range h.counts {
		seen += c
		if seen > want {
			e, m := i/8, i%8
			if e < 3 {
				return int64(1) << (e + 1)
			}
			return int64(8+m+1) << (e - 3)
		}
	}
	return h.max
}

// hiccups spins for d and counts the gaps of 1 ms or more between two
// readings of the clock: how often this shared machine stops the process
// for reasons that are not the SDK's.
func hiccups(d time.Duration) int64 {
	var n int64
	start := time.Now()
	last := start
	for last.Sub(start) < d {
		now := time.Now()
		if now.Sub(last) >= time.Millisecond {
			n++
		}
		last = now
	}
	return n
}

// gcState is what runtime/metrics says about the GC at one moment.
type gcState struct {
	cycles uint64
	assist float64
	pauses *metrics.Float64Histogram
}

func readGC() gcState {
	m := []metrics.Sample{
		{Name: "/gc/cycles/total:gc-cycles"},
		{Name: "/cpu/classes/gc/mark/assist:cpu-seconds"},
		{Name: "/sched/pauses/total/gc:seconds"},
	}
	metrics.Read(m)
	var g gcState
	if m[0].Value.Kind() == metrics.KindUint64 {
		g.cycles = m[0].Value.Uint64()
	}
	if m[1].Value.Kind() == metrics.KindFloat64 {
		g.assist = m[1].Value.Float64()
	}
	if m[2].Value.Kind() == metrics.KindFloat64Histogram {
		g.pauses = m[2].Value.Float64Histogram()
	}
	return g
}

// maxPauseSince returns the upper bound of the highest pause bucket that
// gained counts since b.
func (g gcState) maxPauseSince(b gcState) int64 {
	if g.pauses == nil || b.pauses == nil || len(g.pauses.Counts) != len(b.pauses.Counts) {
		return -1
	}
	for i := len(g.pauses.Counts) - 1; i >= 0; i-- {
		if g.pauses.Counts[i] > b.pauses.Counts[i] {
			hi := g.pauses.Buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = g.pauses.Buckets[i]
			}
			return int64(hi * 1e9)
		}
	}
	return 0
}

func heapAfterGC() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

func runStalledDriver(variant, endpoint string, events int, shutdownTimeout time.Duration) error {
	res := stalledResult{Variant: variant, Events: events, NoiseGaps: hiccups(time.Second)}
	res.BaselineHeap = heapAfterGC()
	res.BaselineRSSKiB = figures.ProcStatusKiB("VmRSS")

	opts := []ours.Option{ours.WithEndpoint(endpoint)}
	var cb *outcomes
	switch variant {
	case "defaults":
		cb = &outcomes{}
	case "bytes":
		opts = append(opts, ours.WithMaxQueueSize(1_000_000))
	case "bytes+callback":
		cb = &outcomes{}
		opts = append(opts, ours.WithMaxQueueSize(1_000_000))
	case "bytes+memlimit":
		debug.SetMemoryLimit(64 << 20)
		opts = append(opts, ours.WithMaxQueueSize(1_000_000))
	default:
		return fmt.Errorf("unknown variant %q", variant)
	}
	if cb != nil {
		opts = append(opts, ours.WithCallback(cb))
	}
	c, err := ours.New("wk", opts...)
	if err != nil {
		return err
	}

	// RSS over time, sampled by a goroutine of our own.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				res.RSSTimeline = append(res.RSSTimeline, figures.ProcStatusKiB("VmRSS"))
			}
		}
	})

	props := ours.NewProperties().Set("plan", "pro").Set("currency", "USD").Set("coupon", "WINTER").
		Set("sku", "sku-42").Set("category", "books")
	us := users()
	var h latencies
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	gcBefore := readGC()
	start := time.Now()
	for i := range events {
		t0 := time.Now()
		err := c.Enqueue(ours.Track{UserId: us[i%len(us)], Event: "Order Completed", Properties: props})
		d := time.Since(t0).Nanoseconds()
		h.add(d)
		if d >= int64(time.Millisecond) {
			res.Over1ms++
		}
		switch {
		case err == nil:
			res.Accepted++
		case errors.Is(err, ours.ErrQueueFull):
			res.QueueFull++
			res.LatMaxFullNs = max(res.LatMaxFullNs, d)
		default:
			res.OtherErrors++
		}
	}
	res.EnqueueNs = time.Since(start).Nanoseconds()
	gcAfter := readGC()
	runtime.ReadMemStats(&after)
	res.GCCycles = gcAfter.cycles - gcBefore.cycles
	res.GCAssistSec = gcAfter.assist - gcBefore.assist
	res.GCPauseMaxNs = gcAfter.maxPauseSince(gcBefore)
	res.AllocPerCall = float64(after.TotalAlloc-before.TotalAlloc) / float64(events)
	res.MallocPerCall = float64(after.Mallocs-before.Mallocs) / float64(events)
	res.LatP50Ns, res.LatP99Ns, res.LatP999Ns, res.LatMaxNs = h.quantile(0.5), h.quantile(0.99), h.quantile(0.999), h.max

	res.LiveHeapBytes = heapAfterGC()
	st := c.Stats()
	res.QueueBytes, res.QueueDepth, res.InFlight = st.QueueBytes, st.QueueDepth, st.InFlight

	ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	t0 := time.Now()
	if err := c.Shutdown(ctx); err != nil {
		res.ShutdownErr = err.Error()
	}
	res.ShutdownNs = time.Since(t0).Nanoseconds()
	close(stop)
	wg.Wait()

	st = c.Stats()
	res.StatsFailedShut, res.StatsDelivered = st.Failed.Shutdown, st.Delivered
	if cb != nil {
		res.CallbackFailed, res.CallbackCtxErr, res.CallbackSuccess = cb.failed.Load(), cb.ctxErr.Load(), cb.success.Load()
	}
	res.PeakRSSKiB = figures.ProcStatusKiB("VmHWM")
	time.Sleep(50 * time.Millisecond) // let exited goroutines be reaped from the count
	res.Goroutines = runtime.NumGoroutine()
	return json.NewEncoder(os.Stdout).Encode(res)
}

func (o *orchestrator) runStalled(ctx context.Context, events int, shutdownTimeout time.Duration) error {
	var results []stalledResult
	var sinks []sinkStats
	for _, v := range stalledVariants {
		fmt.Fprintf(os.Stderr, "stalled / %s ...", v.name)
		sk, err := startSink(ctx, "stalled", o.seed)
		if err != nil {
			return err
		}
		line, timedOut, err := o.runDriverProc(ctx, []string{"-role", "stalled-driver", "-variant", v.name,
			"-endpoint", sk.endpoint, "-events", strconv.Itoa(events), "-shutdown-timeout", shutdownTimeout.String()})
		st, serr := sk.stats()
		sk.stop()
		switch {
		case err != nil:
			fmt.Fprintln(os.Stderr)
			return err
		case timedOut:
			fmt.Fprintln(os.Stderr)
			return fmt.Errorf("stalled %s: the driver timed out (limit %s): Shutdown did not return", v.name, o.timeout)
		case serr != nil:
			fmt.Fprintln(os.Stderr)
			return serr
		}
		var r stalledResult
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("stalled %s: bad driver output: %w", v.name, err)
		}
		if o.verbose {
			fmt.Fprintf(os.Stderr, "\n  %s\n", line)
		}
		fmt.Fprintln(os.Stderr, " done")
		results = append(results, r)
		sinks = append(sinks, st)
	}
	var b strings.Builder
	writeStalled(&b, results, sinks, shutdownTimeout, o.conditions())
	fmt.Print(b.String())
	if o.out != "" {
		return os.WriteFile(o.out, []byte(b.String()), 0o644)
	}
	return nil
}
