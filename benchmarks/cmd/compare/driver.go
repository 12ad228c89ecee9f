package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
	"github.com/dualpath/analytics-go/benchmarks/sdk"
)

// driverResult is the one JSON line a driver prints.
type driverResult struct {
	SDK           string           `json:"sdk"`
	Events        int              `json:"events"`
	Producers     int              `json:"producers"`
	EnqueueErrors int64            `json:"enqueue_errors"` // events Track refused (not counted sent)
	FirstError    string           `json:"first_error,omitempty"`
	ElapsedNs     int64            `json:"elapsed_ns"` // first Track to Close returned
	EnqueueNs     int64            `json:"enqueue_ns"` // first Track to last Track returned
	CloseNs       int64            `json:"close_ns"`   // Close alone
	CPUNs         int64            `json:"cpu_ns"`     // the process's CPU time (user + system) over the same window
	TotalAlloc    uint64           `json:"total_alloc"`
	Mallocs       uint64           `json:"mallocs"`
	NumGC         uint32           `json:"num_gc"`
	PeakRSSKiB    int64            `json:"peak_rss_kib"` // VmHWM at the end
	Counters      map[string]int64 `json:"counters,omitempty"`
}

type driverConfig struct {
	sdk, endpoint, onFull  string
	events                 int
	producers              int  // goroutines calling Track at once, each its share of the events
	sharedProps            bool // one properties map for every event instead of a fresh one each
	cpuProfile, memProfile string
}

// ids returns n distinct ids of 10 digits each, sliced from one string:
// one allocation, made before the measured window, so the window holds the
// SDK's costs and not the driver's.
func ids(n int) func(i int) string {
	const w = 10
	b := make([]byte, 0, n*w)
	for i := range n {
		b = fmt.Appendf(b, "%0*d", w, i)
	}
	s := string(b)
	return func(i int) string { return s[i*w : (i+1)*w] }
}

// users returns the user ids the events cycle through.
func users() []string {
	u := make([]string, 1000)
	for i := range u {
		u[i] = "user-" + strconv.Itoa(i)
	}
	return u
}

func runDriver(cfg driverConfig) error {
	id, us := ids(cfg.events), users()
	c, err := sdk.New(cfg.sdk, cfg.endpoint, nil, sdk.Options{SharedProperties: cfg.sharedProps})
	if err != nil {
		return err
	}
	res := driverResult{SDK: cfg.sdk, Events: cfg.events, Producers: max(cfg.producers, 1)}

	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpuBefore := figures.ProcessCPU()
	// Track waits for room when the queue is full (ours: EnqueueContext;
	// the peers block), like a producer that cannot drop events; the time
	// it waits is part of the run. With -on-full drop, ours refuses the
	// event instead (Enqueue), and it shows as lost.
	track := c.Track
	if r, ok := c.(sdk.Refuser); ok && cfg.onFull == "drop" {
		track = r.TrackOrRefuse
	}
	// Each producer tracks every producers-th event, from its own offset.
	producers := max(cfg.producers, 1)
	var mu sync.Mutex // guards res's error fields
	var wg sync.WaitGroup
	start := time.Now()
	for p := range producers {
		wg.Go(func() {
			for i := p; i < cfg.events; i += producers {
				if err := track(id(i), us[i%len(us)]); err != nil {
					mu.Lock()
					res.EnqueueErrors++
					if res.FirstError == "" {
						res.FirstError = err.Error()
					}
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	enqueued := time.Now()
	if err := c.Close(); err != nil {
		return fmt.Errorf("close: %w", err)
	}
	end := time.Now()
	cpuAfter := figures.ProcessCPU()
	runtime.ReadMemStats(&after)
	if cfg.cpuProfile != "" {
		pprof.StopCPUProfile()
	}

	res.ElapsedNs = end.Sub(start).Nanoseconds()
	res.EnqueueNs = enqueued.Sub(start).Nanoseconds()
	res.CloseNs = end.Sub(enqueued).Nanoseconds()
	res.CPUNs = (cpuAfter - cpuBefore).Nanoseconds()
	res.TotalAlloc = after.TotalAlloc - before.TotalAlloc
	res.Mallocs = after.Mallocs - before.Mallocs
	res.NumGC = after.NumGC - before.NumGC
	res.PeakRSSKiB = figures.ProcStatusKiB("VmHWM")
	if cc, ok := c.(sdk.Counters); ok {
		res.Counters = cc.Counters()
	}
	if cfg.memProfile != "" {
		f, err := os.Create(cfg.memProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(res)
}
