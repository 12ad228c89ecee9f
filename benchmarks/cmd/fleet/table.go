package main

import (
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
)

// The targets for the SDK after the fleet-safe retry change.
const (
	targetOutageRatio  = 0.25 // requests/s during the outage ÷ healthy
	targetBurstRatio   = 3    // busiest second in the 10 s after recovery ÷ healthy
	targetBacklogSec   = 15   // every pre-recovery event delivered within this of recovery
	burstWindowSeconds = 10
)

func ratio(x float64) string { return fmt.Sprintf("%.2f×", x) }

func secs(p *float64) string {
	if p == nil {
		return "—"
	}
	return fmt.Sprintf("%+.1f s", *p)
}

func orDefault(n int) string {
	if n == 0 {
		return "SDK default"
	}
	return figures.Thousands(int64(n))
}

// faultName names a run's fault the way the issue does.
func faultName(r *result) string {
	if r.Config.Fault == 429 {
		if r.Config.RetryAfterSec > 0 {
			return fmt.Sprintf("429 + Retry-After: %d", r.Config.RetryAfterSec)
		}
		return "429, no Retry-After"
	}
	return strconv.Itoa(r.Config.Fault) + " outage"
}

// header describes a run in one line.
func header(r *result) string {
	c := r.Config
	return fmt.Sprintf("fleet: %d clients × %g events/s (FlushAt %s, MaxQueueSize %s), one mock API: healthy %gs, then %s for %gs, then %gs after recovery; retry settings: %s; close timeout %gs; %s %s/%s, %d CPUs; %s",
		c.Clients, c.EventsPerSec, orDefault(c.FlushAt), orDefault(c.MaxQueueSize),
		c.HealthySec, faultName(r), c.OutageSec, c.AfterSec, c.RetrySettings, c.CloseTimeout,
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format("2006-01-02"))
}

// writeRun prints one run's tables.
func writeRun(w io.Writer, r *result) {
	c := r.Config
	fmt.Fprintln(w, header(r))
	fmt.Fprintln(w)
	fmt.Fprintf(w, "healthy request rate by construction: %.1f/s (%d clients × %g events/s ÷ %g events a batch); every \"vs healthy\" divides by it\n\n",
		r.NominalHealthy, c.Clients, c.EventsPerSec, c.EventsPerBatch)

	fmt.Fprintln(w, "| phase | seconds | requests | answered 2xx | requests/s | vs healthy |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|")
	for _, p := range r.Phases {
		fmt.Fprintf(w, "| %s | %.1f–%.1f | %s | %s | %.1f | %s |\n", p.Name, p.FromSec, p.ToSec,
			figures.Thousands(int64(p.Requests)), figures.Thousands(int64(p.OK)), p.PerSec, ratio(p.VsHealthy))
	}
	fmt.Fprintln(w)

	fmt.Fprintln(w, "| after recovery | value | vs healthy |")
	fmt.Fprintln(w, "|---|--:|--:|")
	fmt.Fprintf(w, "| requests in the first second | %s | %s |\n", figures.Thousands(int64(r.FirstSecond.Requests)), ratio(r.FirstSecond.VsHealthy))
	fmt.Fprintf(w, "| requests in the busiest whole second of the first %d (second %d) | %s | %s |\n", burstWindowSeconds,
		int(r.BusiestSecond.StartsSec)+1, figures.Thousands(int64(r.BusiestSecond.Requests)), ratio(r.BusiestSecond.VsHealthy))
	fmt.Fprintf(w, "| requests in the busiest 1 s window of the first %d s (from %+.1f s) | %s | %s |\n", burstWindowSeconds,
		r.Busiest.StartsSec, figures.Thousands(int64(r.Busiest.Requests)), ratio(r.Busiest.VsHealthy))
	last := secs(r.LastPreRecoverySec)
	if r.PreRecoveryUndelivered > 0 {
		last += fmt.Sprintf(" (%s of %s never delivered)", figures.Thousands(r.PreRecoveryUndelivered), figures.Thousands(r.PreRecoveryAccepted))
	}
	fmt.Fprintf(w, "| last event enqueued before recovery delivered | %s | |\n", last)
	fmt.Fprintf(w, "| events enqueued during the outage: half, 99%% delivered by | %s, %s | |\n",
		secs(r.OutageEventsP50Sec), secs(r.OutageEventsP99Sec))
	fmt.Fprintln(w)

	e := r.Events
	fmt.Fprintln(w, "| events | count |")
	fmt.Fprintln(w, "|---|--:|")
	fmt.Fprintf(w, "| accepted by Enqueue | %s |\n", figures.Thousands(e.Accepted))
	fmt.Fprintf(w, "| refused by Enqueue | %s |\n", withReasons(e.Refused))
	fmt.Fprintf(w, "| delivered (answered 2xx) | %s |\n", figures.Thousands(e.Delivered))
	fmt.Fprintf(w, "| failed (Callback) | %s |\n", withReasons(e.Failed))
	fmt.Fprintf(w, "| lost (accepted, neither delivered nor failed) | %s |\n", figures.Thousands(e.Lost))
	fmt.Fprintf(w, "| duplicated (2xx deliveries beyond the first) | %s |\n", figures.Thousands(e.Duplicated))
	if e.FailedDelivered > 0 || e.Unknown > 0 || e.Mismatched > 0 {
		fmt.Fprintf(w, "| reported failed but delivered / unknown ids delivered / delivered with another enqueue time | %s / %s / %s |\n",
			figures.Thousands(e.FailedDelivered), figures.Thousands(e.Unknown), figures.Thousands(e.Mismatched))
	}
	fmt.Fprintln(w)

	fmt.Fprintf(w, "requests %s (SDK attempts %s: %s backoff retries, %s rate-limit retries, %s attempts held by a Retry-After pause, %s transport errors); TCP connections %s",
		figures.Thousands(int64(r.Requests)), figures.Thousands(r.Attempts), figures.Thousands(r.BackoffRetries), figures.Thousands(r.RateLimitRetry),
		figures.Thousands(r.RateLimitWaits), figures.Thousands(r.TransportErrs), figures.Thousands(int64(r.Conns)))
	if r.DecodeErrors > 0 {
		fmt.Fprintf(w, "; %d undecodable bodies", r.DecodeErrors)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "producers: %.0f events/s of %.0f; Close took %.1f s", r.ProducedPerSec, r.TargetPerSec, r.CloseSec)
	if r.CloseHung {
		fmt.Fprintf(w, " (NOT FINISHED: gave up waiting)")
	}
	if r.CloseErrors > 0 {
		fmt.Fprintf(w, " (%d returned an error)", r.CloseErrors)
	}
	fmt.Fprintf(w, "; wall %.1f s, CPU %.1f s (%.0f%% of %d cores)\n\n", r.WallSec, r.CPUSec,
		100*r.CPUSec/r.WallSec/float64(runtime.NumCPU()), runtime.NumCPU())

	fmt.Fprintln(w, "| target (Fleet-safe retry) | measured | bound | verdict |")
	fmt.Fprintln(w, "|---|--:|--:|---|")
	for _, t := range targets(r) {
		fmt.Fprintf(w, "| %s | %s | %s | %s |\n", t.name, t.measured, t.bound, verdict(t.pass))
	}
	fmt.Fprintln(w)
}

func withReasons(m map[string]int64) string {
	var total int64
	var parts []string
	for _, k := range sortedKeys(m) {
		total += m[k]
		parts = append(parts, fmt.Sprintf("%s %s", k, figures.Thousands(m[k])))
	}
	if total == 0 {
		return "0"
	}
	return fmt.Sprintf("%s (%s)", figures.Thousands(total), strings.Join(parts, ", "))
}

func verdict(pass bool) string {
	if pass {
		return "PASS"
	}
	return "FAIL"
}

type target struct {
	name, measured, bound string
	pass                  bool
}

// targets checks a run against the targets.
func targets(r *result) []target {
	outage := max(r.Phases[1].VsHealthy, r.Phases[2].VsHealthy)
	backlogOK := r.PreRecoveryUndelivered == 0 && r.LastPreRecoverySec != nil && *r.LastPreRecoverySec <= targetBacklogSec
	e := r.Events
	return []target{
		{"requests/s during the outage (busier half) vs healthy", ratio(outage), fmt.Sprintf("≤ %.2f×", targetOutageRatio), outage <= targetOutageRatio},
		{fmt.Sprintf("busiest 1 s window in the %d s after recovery vs healthy", burstWindowSeconds), ratio(r.Busiest.VsHealthy), fmt.Sprintf("≤ %d×", targetBurstRatio), r.Busiest.VsHealthy <= targetBurstRatio},
		{"every event enqueued before recovery delivered, the last after recovery", secs(r.LastPreRecoverySec), fmt.Sprintf("≤ %d s", targetBacklogSec), backlogOK},
		{"lost", figures.Thousands(e.Lost), "0", e.Lost == 0},
		{"duplicated", figures.Thousands(e.Duplicated), "0", e.Duplicated == 0},
		{"failed", figures.Thousands(e.FailedN), "0", e.FailedN == 0},
	}
}

// writeSummary prints several runs side by side, in the form.
func writeSummary(w io.Writer, rs []*result) {
	fmt.Fprint(w, "| |")
	for _, r := range rs {
		fmt.Fprintf(w, " %s |", faultName(r))
	}
	fmt.Fprint(w, "\n|---|")
	for range rs {
		fmt.Fprint(w, "---|")
	}
	fmt.Fprintln(w)
	row := func(name string, cell func(r *result) string) {
		fmt.Fprintf(w, "| %s |", name)
		for _, r := range rs {
			fmt.Fprintf(w, " %s |", cell(r))
		}
		fmt.Fprintln(w)
	}
	row("requests/s the API saw during the outage, vs healthy", func(r *result) string {
		return fmt.Sprintf("%s (first half), %s (second half), %s (whole)", ratio(r.Phases[1].VsHealthy),
			ratio(r.Phases[2].VsHealthy), ratio(r.Phases[3].VsHealthy))
	})
	row(fmt.Sprintf("busiest second in the %d s after recovery, vs healthy (whole seconds from recovery)", burstWindowSeconds), func(r *result) string {
		return fmt.Sprintf("%s (%s requests); any 1 s window: %s", ratio(r.BusiestSecond.VsHealthy),
			figures.Thousands(int64(r.BusiestSecond.Requests)), ratio(r.Busiest.VsHealthy))
	})
	row("last event enqueued before recovery delivered", func(r *result) string {
		s := secs(r.LastPreRecoverySec) + " after recovery"
		if r.PreRecoveryUndelivered > 0 {
			s += fmt.Sprintf(" (%s never delivered)", figures.Thousands(r.PreRecoveryUndelivered))
		}
		return s
	})
	row("accepted / delivered", func(r *result) string {
		return figures.Thousands(r.Events.Accepted) + " / " + figures.Thousands(r.Events.Delivered)
	})
	row("failed", func(r *result) string { return withReasons(r.Events.Failed) })
	row("lost", func(r *result) string { return figures.Thousands(r.Events.Lost) })
	row("duplicated", func(r *result) string { return figures.Thousands(r.Events.Duplicated) })
	fmt.Fprintln(w)
}
