// Command spoolrss measures the memory our SDK holds while the tracking
// API is down, without and with the spool (WithSpool). The API answers 503
// to everything; each case offers 1,000,000 events (-events) to Enqueue as
// fast as one goroutine can:
//
//   - memory: every default; the queue takes MaxQueueSize (10,000) and
//     Enqueue refuses the rest with ErrQueueFull;
//   - spool: WithSpool in a temporary directory, WithSpoolMaxBytes 2 GiB
//     (-spool-max-bytes); the queue holds the same, the rest waits on
//     disk, so every event is accepted.
//
// Each case runs in a process of its own, so that its peak RSS (VmHWM) is
// its own. Then it calls Shutdown with a 2 s context: the memory client
// fails what it holds, the spool client leaves it in the directory, which
// the program then removes. The spool needs about 320 bytes of disk per
// event (320 MB for a million) in -dir, by default the system's temporary
// directory.
//
//	go run ./cmd/spoolrss
//	go run ./cmd/spoolrss -events 200000 -dir /var/tmp
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	ours "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
)

// cases are the configurations, in the table's order.
var cases = []string{"memory", "spool"}

// result is the one JSON line a case prints.
type result struct {
	Case        string `json:"case"`
	Offered     int    `json:"offered"`
	Accepted    int64  `json:"accepted"`
	QueueFull   int64  `json:"queue_full"`
	OtherErrors int64  `json:"other_errors"`
	FirstError  string `json:"first_error,omitempty"`
	EnqueueNs   int64  `json:"enqueue_ns"` // all Enqueue calls
	// RSS before New, and once every event was offered: now and the peak.
	RSSBeforeKiB int64 `json:"rss_before_kib"`
	RSSKiB       int64 `json:"rss_kib"`
	PeakRSSKiB   int64 `json:"peak_rss_kib"`
	// The heap once every event was offered, after a GC.
	HeapInuse uint64     `json:"heap_inuse"`
	HeapAlloc uint64     `json:"heap_alloc"`
	Stats     ours.Stats `json:"stats"` // once every event was offered
	Shutdown  int64      `json:"shutdown_ns"`
	After     ours.Stats `json:"after"`     // after Shutdown
	DirBytes  int64      `json:"dir_bytes"` // the spool's files after Shutdown
}

func main() {
	var (
		role     = flag.String("role", "", "internal: case (the orchestrator starts it)")
		kase     = flag.String("case", "", "internal (case): memory or spool")
		endpoint = flag.String("endpoint", "", "internal (case): the tracking API")
		events   = flag.Int("events", 1_000_000, "events each case offers to Enqueue")
		maxBytes = flag.Int64("spool-max-bytes", 2<<30, "WithSpoolMaxBytes of the spool case")
		dir      = flag.String("dir", "", "where the spool's temporary directory goes (default: the system's temporary directory)")
		timeout  = flag.Duration("timeout", 10*time.Minute, "limit for one case")
		verbose  = flag.Bool("v", false, "the SDK's logs on stderr (without: none)")
	)
	flag.Parse()
	var err error
	switch *role {
	case "case":
		err = runCase(*kase, *endpoint, *events, *maxBytes, *dir, *verbose)
	case "":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		err = orchestrate(ctx, *events, *maxBytes, *dir, *timeout, *verbose)
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "spoolrss:", err)
		os.Exit(1)
	}
}

// orchestrate starts the down API, runs each case in a child process and
// prints the table.
func orchestrate(ctx context.Context, events int, maxBytes int64, dir string, timeout time.Duration, verbose bool) error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	var requests atomic.Int64
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusServiceUnavailable)
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	var results []result
	var reqs []int64
	for _, c := range cases {
		fmt.Fprintf(os.Stderr, "%s ...", c)
		t0 := time.Now()
		before := requests.Load()
		r, err := runChild(ctx, exe, timeout, "-role", "case", "-case", c, "-endpoint", "http://"+ln.Addr().String(),
			"-events", strconv.Itoa(events), "-spool-max-bytes", strconv.FormatInt(maxBytes, 10), "-dir", dir,
			"-v="+strconv.FormatBool(verbose))
		if err != nil {
			fmt.Fprintln(os.Stderr)
			return fmt.Errorf("case %s: %w", c, err)
		}
		fmt.Fprintf(os.Stderr, " %s\n", time.Since(t0).Round(10*time.Millisecond))
		results = append(results, r)
		reqs = append(reqs, requests.Load()-before)
	}
	printTable(os.Stdout, events, results, reqs)
	return nil
}

func runChild(ctx context.Context, exe string, timeout time.Duration, args ...string) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return result{}, err
	}
	var r result
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "{") {
			err = json.Unmarshal(sc.Bytes(), &r)
		}
	}
	if r.Case == "" && err == nil {
		err = errors.New("no result line")
	}
	return r, err
}

// props are the five string properties of every event, as in cmd/compare.
var props = ours.NewProperties().Set("plan", "pro").Set("currency", "USD").Set("coupon", "WINTER").
	Set("sku", "sku-42").Set("category", "books")

// runCase is one child: it fills one client and measures.
func runCase(kase, endpoint string, events int, maxBytes int64, parent string, verbose bool) error {
	// Every batch fails at the Shutdown: its log lines are noise here.
	logger := slog.New(slog.DiscardHandler)
	if verbose {
		logger = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	opts := []ours.Option{ours.WithEndpoint(endpoint), ours.WithLogger(logger)}
	spoolDir := ""
	switch kase {
	case "memory":
	case "spool":
		var err error
		if spoolDir, err = os.MkdirTemp(parent, "analytics-spoolrss-*"); err != nil {
			return err
		}
		defer os.RemoveAll(spoolDir)
		opts = append(opts, ours.WithSpool(spoolDir), ours.WithSpoolMaxBytes(maxBytes))
	default:
		return fmt.Errorf("unknown -case %q (want one of %v)", kase, cases)
	}
	users := make([]string, 1000)
	for i := range users {
		users[i] = "user-" + strconv.Itoa(i)
	}
	r := result{Case: kase, Offered: events}
	runtime.GC()
	r.RSSBeforeKiB = figures.ProcStatusKiB("VmRSS")
	c, err := ours.New("wk", opts...)
	if err != nil {
		return err
	}
	start := time.Now()
	for i := range events {
		err := c.Enqueue(ours.Track{UserId: users[i%len(users)], Event: "Order Completed", Properties: props})
		switch {
		case err == nil:
			r.Accepted++
		case errors.Is(err, ours.ErrQueueFull):
			r.QueueFull++
		default:
			r.OtherErrors++
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
		}
	}
	r.EnqueueNs = time.Since(start).Nanoseconds()
	r.Stats = c.Stats()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.HeapInuse, r.HeapAlloc = ms.HeapInuse, ms.HeapAlloc
	r.RSSKiB, r.PeakRSSKiB = figures.ProcStatusKiB("VmRSS"), figures.ProcStatusKiB("VmHWM")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	t0 := time.Now()
	_ = c.Shutdown(ctx) // the API is down: ctx ends first
	r.Shutdown = time.Since(t0).Nanoseconds()
	r.After = c.Stats()
	if spoolDir != "" {
		r.DirBytes = dirBytes(spoolDir)
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// dirBytes is the size of the regular files under dir.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

func printTable(w io.Writer, events int, rs []result, reqs []int64) {
	fmt.Fprintf(w, "Tracking API down (503 to every request); %d events offered to Enqueue as fast as possible; one process per case; %s %s/%s, %d CPUs\n\n",
		events, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU())
	fmt.Fprint(w, "| |")
	for _, r := range rs {
		fmt.Fprintf(w, " %s |", r.Case)
	}
	fmt.Fprint(w, "\n|---|")
	for range rs {
		fmt.Fprint(w, "--:|")
	}
	fmt.Fprintln(w)
	line := func(name string, f func(r result) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, r := range rs {
			fmt.Fprintf(w, " %s |", f(r))
		}
		fmt.Fprintln(w)
	}
	mib := func(b float64) string { return fmt.Sprintf("%.1f", b/(1<<20)) }
	line("events accepted", func(r result) string { return figures.Thousands(r.Accepted) })
	line("ErrQueueFull / other errors", func(r result) string {
		s := figures.Thousands(r.QueueFull) + " / " + figures.Thousands(r.OtherErrors)
		if r.FirstError != "" {
			s += " (" + r.FirstError + ")"
		}
		return s
	})
	line("all Enqueue calls took", func(r result) string {
		return fmt.Sprintf("%.2f s (%.2f µs each)", float64(r.EnqueueNs)/1e9, float64(r.EnqueueNs)/1e3/float64(r.Offered))
	})
	line("in memory: queued + in flight", func(r result) string {
		return figures.Thousands(int64(r.Stats.QueueDepth) + r.Stats.InFlight)
	})
	line("on disk: spool bytes, MiB", func(r result) string { return mib(float64(r.Stats.Spool.Bytes)) })
	line("peak RSS (VmHWM), MiB", func(r result) string { return mib(float64(r.PeakRSSKiB) * 1024) })
	line("RSS before New → after filling, MiB", func(r result) string {
		return mib(float64(r.RSSBeforeKiB)*1024) + " → " + mib(float64(r.RSSKiB)*1024)
	})
	line("heap in use after GC, MiB", func(r result) string { return mib(float64(r.HeapInuse)) })
	line("Stats().Spool when filled", func(r result) string { return spoolStats(r.Stats.Spool) })
	line("Shutdown (2 s context) took", func(r result) string { return fmt.Sprintf("%.2f s", float64(r.Shutdown)/1e9) })
	line("after Shutdown: failed / left in the spool", func(r result) string {
		return figures.Thousands(r.After.Failed.Total()) + " / " + figures.Thousands(r.After.Spool.Left)
	})
	line("after Shutdown: spool files, MiB", func(r result) string { return mib(float64(r.DirBytes)) })
	fmt.Fprint(w, "| API requests (all 503) |")
	for _, n := range reqs {
		fmt.Fprintf(w, " %s |", figures.Thousands(n))
	}
	fmt.Fprintln(w)
}

func spoolStats(s ours.SpoolStats) string {
	return fmt.Sprintf("bytes %s, records %s, on disk %s, recovered %d, skipped %d, left %d",
		figures.Thousands(s.Bytes), figures.Thousands(s.Records), figures.Thousands(s.OnDisk), s.Recovered, s.SkippedCorrupt, s.Left)
}
