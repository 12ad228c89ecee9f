// Command compare measures this SDK against segmentio/analytics-go v3,
// posthog-go and rudderlabs/analytics-go v4 on the same work, against one
// local sink, in clean and faulty conditions, and prints one table.
//
// It is one program in several roles, each its own process, so that every
// measurement is clean: the orchestrator (no -role) starts a sink process
// per run and a driver process per (SDK, scenario) run, and reads both. A
// driver holds one SDK and nothing else, so its allocation counters and its
// peak RSS are that SDK's.
//
//	go run ./cmd/compare                      # every SDK and ours-spool × every scenario, the floor in clean, 200,000 events each
//	go run ./cmd/compare -events 20000        # a quick run
//	go run ./cmd/compare -producers 16        # 16 goroutines calling Track at once (default: rows for 1 and 16)
//	go run ./cmd/compare -shared-props        # one shared properties map instead of a fresh one per event
//	go run ./cmd/compare -repeat 3 -out RESULTS.md
//	go run ./cmd/compare -stalled             # ours against a tracking API that never answers
//	go run ./cmd/compare -sdks ours,ours-spool -scenarios clean -repeat 5   # ours with and without the spool
//	go run ./cmd/compare -sdks ours -scenarios clean -profile /tmp/prof   # CPU and alloc profiles
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/dualpath/analytics-go/benchmarks/sdk"
)

func main() {
	var (
		role      = flag.String("role", "", "internal: sink, driver or stalled-driver (the orchestrator starts these)")
		events    = flag.Int("events", 200_000, "events per run")
		sdks      = flag.String("sdks", strings.Join(defaultSDKs(), ","), "SDKs to run, comma-separated: of "+strings.Join(sdk.Names, ", ")+", "+strings.Join(sdk.Variants, ", ")+" (ours with WithSpool in a temporary directory) and "+sdk.Floor+" (the least work an event needs: clean scenario only)")
		scens     = flag.String("scenarios", strings.Join(scenarios, ","), "fault scenarios to run, comma-separated")
		timeout   = flag.Duration("timeout", 120*time.Second, "limit for one driver run; a run that takes longer is reported as a timeout")
		repeat    = flag.Int("repeat", 1, "runs per row; the table shows the median (lost and duplicates: the worst run)")
		out       = flag.String("out", "", "also write the table to this file")
		seed      = flag.Uint64("seed", 1, "seed of the p10 scenario's random answers")
		producers = flag.String("producers", "1,16", "producer goroutines calling Track at once, comma-separated: one row per count (driver: the count)")
		shared    = flag.Bool("shared-props", false, "give every event one shared, read-only properties map instead of a fresh map per event (as an application builds)")
		onFull    = flag.String("on-full", "wait", "what our SDK does when its queue is full: wait for room (EnqueueContext, as the peers block) or drop (Enqueue refuses with ErrQueueFull)")
		profile   = flag.String("profile", "", "write each driver's CPU and alloc profiles into this directory (slows the runs)")
		verbose   = flag.Bool("v", false, "print every driver's and sink's raw JSON to stderr")
		stalled   = flag.Bool("stalled", false, "run the stalled-API scenario for our SDK instead of the table")
		stalledN  = flag.Int("stalled-events", 1_000_000, "events the stalled scenario enqueues")
		scenario  = flag.String("scenario", "clean", "internal (sink): the fault scenario")
		sdkName   = flag.String("sdk", "ours", "internal (driver): the SDK")
		endpoint  = flag.String("endpoint", "", "internal (driver): where the SDK sends")
		variant   = flag.String("variant", "", "internal (stalled-driver): the configuration")
		cpuProf   = flag.String("cpuprofile", "", "driver: write a CPU profile of the measured window to this file (sink: of its whole life)")
		memProf   = flag.String("memprofile", "", "driver: write an alloc profile to this file at the end")
		shutdownT = flag.Duration("shutdown-timeout", 2*time.Second, "stalled: the context Shutdown gets")
	)
	flag.Usage = usage
	flag.Parse()

	var err error
	switch *role {
	case "sink":
		err = runSink(*scenario, *seed, *cpuProf)
	case "driver":
		n, perr := strconv.Atoi(*producers)
		if perr != nil {
			err = fmt.Errorf("driver: -producers: %w", perr)
			break
		}
		err = runDriver(driverConfig{sdk: *sdkName, endpoint: *endpoint, onFull: *onFull, events: *events,
			producers: n, sharedProps: *shared, cpuProfile: *cpuProf, memProfile: *memProf})
	case "stalled-driver":
		err = runStalledDriver(*variant, *endpoint, *events, *shutdownT)
	case "":
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		o := &orchestrator{events: *events, timeout: *timeout, repeat: max(*repeat, 1), seed: *seed,
			onFull: *onFull, sharedProps: *shared, profile: *profile, verbose: *verbose, out: *out}
		if o.producers, err = counts(*producers); err != nil {
			break
		}
		if *stalled {
			err = o.runStalled(ctx, *stalledN, *shutdownT)
		} else {
			err = o.runTable(ctx, split(*sdks, defaultSDKs()), split(*scens, scenarios))
		}
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

// defaultSDKs are the rows of a run, in table order: the SDKs, then the
// floor and ours's variants.
func defaultSDKs() []string {
	return append(append(slices.Clone(sdk.Names), sdk.Floor), sdk.Variants...)
}

// counts parses a comma-separated list of producer counts.
func counts(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("-producers: %q is not a count of 1 or more", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("-producers: no count")
	}
	return out, nil
}

// split parses a comma-separated list, keeping known names only.
func split(list string, known []string) []string {
	var out []string
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !slices.Contains(known, s) {
			fmt.Fprintf(os.Stderr, "compare: unknown name %q (known: %s)\n", s, strings.Join(known, ", "))
			os.Exit(2)
		}
		out = append(out, s)
	}
	return out
}

func usage() {
	fmt.Fprintf(os.Stderr, "usage: go run ./cmd/compare [flags]\n\nScenarios:\n")
	for _, s := range append(slices.Clone(scenarios), "stalled") {
		fmt.Fprintf(os.Stderr, "  %-8s %s\n", s, scenarioDoc[s])
	}
	fmt.Fprintf(os.Stderr, "\nFlags:\n")
	flag.PrintDefaults()
}
