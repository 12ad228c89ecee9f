package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// writeStalled prints the stalled scenario's figures, one column per
// configuration, then its checks with PASS or FAIL.
func writeStalled(b *strings.Builder, rs []stalledResult, sinks []sinkStats, shutdownTimeout time.Duration, cond string) {
	mib := func(x float64) string { return fmt.Sprintf("%.1f", x/(1<<20)) }
	us := func(ns int64) string { return fmt.Sprintf("%.1f µs", float64(ns)/1e3) }
	fmt.Fprintf(b, "Stalled tracking API (accepts, reads, never answers); our SDK; %d events enqueued as fast as possible; Shutdown(ctx with %s timeout); %s\n\n",
		rs[0].Events, shutdownTimeout, cond)
	for _, v := range stalledVariants {
		fmt.Fprintf(b, "- `%s`: %s\n", v.name, v.doc)
	}
	b.WriteString("\n| | " + strings.Join(func() []string {
		var s []string
		for _, r := range rs {
			s = append(s, "`"+r.Variant+"`")
		}
		return s
	}(), " | ") + " |\n|---" + strings.Repeat("|--:", len(rs)) + "|\n")
	line := func(name string, f func(r stalledResult, i int) string) {
		fmt.Fprintf(b, "| %s |", name)
		for i, r := range rs {
			fmt.Fprintf(b, " %s |", f(r, i))
		}
		b.WriteString("\n")
	}
	line("accepted", func(r stalledResult, _ int) string { return thousands(float64(r.Accepted)) })
	line("ErrQueueFull", func(r stalledResult, _ int) string { return thousands(float64(r.QueueFull)) })
	line("other Enqueue errors", func(r stalledResult, _ int) string { return thousands(float64(r.OtherErrors)) })
	line("all Enqueue calls took", func(r stalledResult, _ int) string {
		return fmt.Sprintf("%.2f s", float64(r.EnqueueNs)/1e9)
	})
	line("Enqueue p50 / p99 / p99.9", func(r stalledResult, _ int) string {
		return us(r.LatP50Ns) + " / " + us(r.LatP99Ns) + " / " + us(r.LatP999Ns)
	})
	line("Enqueue max (max of an ErrQueueFull)", func(r stalledResult, _ int) string {
		return us(r.LatMaxNs) + " (" + us(r.LatMaxFullNs) + ")"
	})
	line("Enqueue calls ≥ 1 ms", func(r stalledResult, _ int) string { return thousands(float64(r.Over1ms)) })
	line("for scale: gaps ≥ 1 ms in 1 s of a busy loop, no SDK", func(r stalledResult, _ int) string { return thousands(float64(r.NoiseGaps)) })
	line("GC while enqueueing: cycles / assist CPU / longest STW pause", func(r stalledResult, _ int) string {
		return fmt.Sprintf("%d / %.2f s / %s", r.GCCycles, r.GCAssistSec, us(r.GCPauseMaxNs))
	})
	line("allocated per Enqueue call", func(r stalledResult, _ int) string {
		return fmt.Sprintf("%.0f B, %.1f allocs", r.AllocPerCall, r.MallocPerCall)
	})
	line("queue when full: events / encoded MiB", func(r stalledResult, _ int) string {
		return thousands(float64(r.QueueDepth)) + " / " + mib(float64(r.QueueBytes))
	})
	line("events in flight (stalled uploads)", func(r stalledResult, _ int) string { return thousands(float64(r.InFlight)) })
	line("live heap growth after GC, MiB", func(r stalledResult, _ int) string {
		return mib(float64(r.LiveHeapBytes) - float64(r.BaselineHeap))
	})
	line("RSS before New → peak (VmHWM), MiB", func(r stalledResult, _ int) string {
		return mib(float64(r.BaselineRSSKiB)*1024) + " → " + mib(float64(r.PeakRSSKiB)*1024)
	})
	line("RSS growth ÷ (MaxQueueBytes + 8 × 500 KB in flight)", func(r stalledResult, _ int) string {
		bound := float64(defaultMaxQueueBytes + maxConcurrentRequests*maxBatchBody)
		return fmt.Sprintf("%.2f", float64(r.PeakRSSKiB-r.BaselineRSSKiB)*1024/bound)
	})
	line("RSS over time, MiB", func(r stalledResult, _ int) string { return timeline(r.RSSTimeline) })
	line("Shutdown returned after", func(r stalledResult, _ int) string {
		return fmt.Sprintf("%.3f s (%s)", float64(r.ShutdownNs)/1e9, r.ShutdownErr)
	})
	line("failed: Callback (with ctx error) / Stats", func(r stalledResult, _ int) string {
		cb := "no callback"
		if strings.Contains(r.Variant, "callback") || r.Variant == "defaults" {
			cb = thousands(float64(r.CallbackFailed)) + " (" + thousands(float64(r.CallbackCtxErr)) + ")"
		}
		return cb + " / " + thousands(float64(r.StatsFailedShut))
	})
	line("delivered (Stats)", func(r stalledResult, _ int) string { return thousands(float64(r.StatsDelivered)) })
	line("accepted − failed (should be 0)", func(r stalledResult, _ int) string {
		return thousands(float64(r.Accepted - r.StatsFailedShut - r.StatsDelivered))
	})
	line("goroutines left after Shutdown (driver's own: 1)", func(r stalledResult, _ int) string { return strconv.Itoa(r.Goroutines) })
	line("sink: TCP connections / bytes read", func(_ stalledResult, i int) string {
		return fmt.Sprintf("%d / %s", sinks[i].Conns, thousands(float64(sinks[i].WireBytes)))
	})

	inFlight := int64(maxConcurrentRequests * maxBatchBody)
	b.WriteString("\nChecks:\n\n| check |")
	for _, r := range rs {
		b.WriteString(" `" + r.Variant + "` |")
	}
	b.WriteString("\n|---" + strings.Repeat("|---", len(rs)) + "|\n")
	check := func(name string, ok func(r stalledResult) bool) {
		line(name, func(r stalledResult, _ int) string { return verdict(ok(r)) })
	}
	check("Enqueue returns at once: p99.9 ≤ 100 µs", func(r stalledResult) bool { return r.LatP999Ns <= 100_000 })
	check("Enqueue refuses, never blocks: ErrQueueFull for everything past the queue", func(r stalledResult) bool {
		return r.OtherErrors == 0 && r.Accepted+r.QueueFull == int64(r.Events) && r.QueueFull > 0
	})
	check("retained memory: live heap growth ≤ MaxQueueBytes + in-flight batches + 8 MiB", func(r stalledResult) bool {
		return int64(r.LiveHeapBytes)-int64(r.BaselineHeap) <= defaultMaxQueueBytes+inFlight+8<<20
	})
	check("RSS growth ≤ MaxQueueBytes + in-flight batches + 16 MiB", func(r stalledResult) bool {
		return (r.PeakRSSKiB-r.BaselineRSSKiB)*1024 <= defaultMaxQueueBytes+inFlight+16<<20
	})
	check(fmt.Sprintf("Shutdown returns when ctx ends (≤ %s + 100 ms)", shutdownTimeout), func(r stalledResult) bool {
		return time.Duration(r.ShutdownNs) <= shutdownTimeout+100*time.Millisecond && strings.Contains(r.ShutdownErr, "deadline")
	})
	check("every accepted event reported failed, with the ctx error where a Callback sees it", func(r stalledResult) bool {
		ok := r.StatsFailedShut == r.Accepted && r.StatsDelivered == 0
		if strings.Contains(r.Variant, "callback") || r.Variant == "defaults" {
			ok = ok && r.CallbackCtxErr == r.Accepted && r.CallbackFailed == r.Accepted
		}
		return ok
	})
	check("no goroutine of the SDK left", func(r stalledResult) bool { return r.Goroutines <= 1 })
}

func verdict(ok bool) string {
	if ok {
		return "PASS"
	}
	return "FAIL"
}

// timeline shows RSS samples compactly: at most 12, evenly spaced.
func timeline(kib []int64) string {
	if len(kib) == 0 {
		return "–"
	}
	step := max(1, (len(kib)+11)/12)
	s := []string{fmt.Sprintf("every %d ms:", step*100)}
	for i := 0; i < len(kib); i += step {
		s = append(s, fmt.Sprintf("%.0f", float64(kib[i])/1024))
	}
	return strings.Join(s, " ")
}
