package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
	"github.com/dualpath/analytics-go/benchmarks/sdk"
)

// maxConcurrentRequests is our SDK's documented default of
// MaxConcurrentRequests: the most connections a run may open.
const maxConcurrentRequests = 8

// row is one SDK in one scenario, with its runs.
type row struct {
	sdk, scenario string
	producers     int
	runs          []run
}

// rowMetrics are a row's figures; ok is false when no run finished.
type rowMetrics struct {
	ok                            bool
	eventsPerSec, nsPerEvent      float64
	cpuPerEvent                   float64 // ns of the driver process's CPU per event
	sinkCPUPerEvent               float64 // ns of the sink process's CPU per event, over the driver's run
	coresBusy                     float64 // driver's and sink's CPU over the driver's wall time
	bytesPerEvent, allocsPerEvent float64
	wireBytes, wirePerEvent       float64
	requests, conns, rssMiB       float64
	lost, dups                    int64 // worst run
	enqueueErrors                 int64 // over every run
	notes                         []string
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (rw row) figures(events int) rowMetrics {
	var m rowMetrics
	var eps, ns, cpu, sinkCPU, busy, bpe, ape, wire, req, conns, rss []float64
	timeouts, errs, enqErrs, decodeErrs := 0, 0, int64(0), int64(0)
	n := float64(events)
	for _, r := range rw.runs {
		lost := int64(events) - r.sink.Distinct
		m.lost = max(m.lost, lost)
		m.dups = max(m.dups, r.sink.Duplicates)
		decodeErrs += r.sink.DecodeErrors
		wire = append(wire, float64(r.sink.WireBytes))
		req = append(req, float64(r.sink.Requests))
		conns = append(conns, float64(r.sink.Conns))
		switch {
		case r.timeout:
			timeouts++
			continue
		case r.drv == nil:
			errs++
			if len(m.notes) == 0 {
				m.notes = append(m.notes, r.err)
			}
			continue
		}
		d := r.drv
		eps = append(eps, n/(float64(d.ElapsedNs)/1e9))
		ns = append(ns, float64(d.ElapsedNs)/n)
		cpu = append(cpu, float64(d.CPUNs)/n)
		sinkCPU = append(sinkCPU, r.sinkCPU*1e9/n)
		busy = append(busy, (float64(d.CPUNs)+r.sinkCPU*1e9)/float64(d.ElapsedNs))
		bpe = append(bpe, float64(d.TotalAlloc)/n)
		ape = append(ape, float64(d.Mallocs)/n)
		rss = append(rss, float64(d.PeakRSSKiB)/1024)
		enqErrs += d.EnqueueErrors
	}
	m.ok = len(eps) > 0
	m.enqueueErrors = enqErrs
	m.eventsPerSec, m.nsPerEvent, m.cpuPerEvent = median(eps), median(ns), median(cpu)
	m.sinkCPUPerEvent, m.coresBusy = median(sinkCPU), median(busy)
	m.bytesPerEvent, m.allocsPerEvent = median(bpe), median(ape)
	m.wireBytes = median(wire)
	m.wirePerEvent = m.wireBytes / n
	m.requests, m.conns, m.rssMiB = median(req), median(conns), median(rss)
	if timeouts > 0 {
		m.notes = append(m.notes, fmt.Sprintf("%d/%d runs timed out", timeouts, len(rw.runs)))
	}
	if errs > 0 {
		m.notes = append(m.notes, fmt.Sprintf("%d/%d runs failed", errs, len(rw.runs)))
	}
	in := ""
	if len(eps) > 1 {
		in = fmt.Sprintf(" in %d runs", len(eps))
	}
	if enqErrs > 0 {
		m.notes = append(m.notes, fmt.Sprintf("%d enqueue errors%s", enqErrs, in))
	}
	if decodeErrs > 0 {
		m.notes = append(m.notes, fmt.Sprintf("%d undecodable bodies", decodeErrs))
	}
	return m
}

func writeTable(w io.Writer, rows []row, events int) {
	fmt.Fprintln(w, "| SDK | scenario | producers | events/s | ns/event | CPU ns/event | sink CPU ns/event | cores busy | B/event | allocs/event | wire bytes | wire B/event | requests | TCP conns | peak RSS MiB | lost | dups | notes |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|---|")
	for _, rw := range rows {
		m := rw.figures(events)
		if !m.ok {
			fmt.Fprintf(w, "| %s | %s | %d | – | – | – | – | – | – | – | %s | %.0f | %.0f | %.0f | – | %d | %d | %s |\n",
				rw.sdk, rw.scenario, rw.producers, thousands(m.wireBytes), m.wirePerEvent, m.requests, m.conns, m.lost, m.dups,
				strings.Join(m.notes, "; "))
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s | %.2f | %s | %.1f | %s | %.0f | %.0f | %.0f | %.1f | %d | %d | %s |\n",
			rw.sdk, rw.scenario, rw.producers, thousands(m.eventsPerSec), thousands(m.nsPerEvent), thousands(m.cpuPerEvent),
			thousands(m.sinkCPUPerEvent), m.coresBusy, thousands(m.bytesPerEvent),
			m.allocsPerEvent, thousands(m.wireBytes), m.wirePerEvent, m.requests, m.conns, m.rssMiB,
			m.lost, m.dups, strings.Join(m.notes, "; "))
	}
}

// bounds are issue 27's targets for one producer count, as ratios of ours
// to segmentio v3: events/s at least eps, CPU per event and bytes
// allocated per event at most cpu and alloc.
type bounds struct{ eps, cpu, alloc float64 }

func boundsFor(producers int) bounds {
	if producers == 1 {
		return bounds{eps: 2.5, cpu: 0.25, alloc: 0.25}
	}
	return bounds{eps: 2, cpu: 0.28, alloc: 0.25}
}

// Issue 27's other bounds on CPU per event: ours at most floorBound× the
// floor's with 1 producer, ours-spool at most spoolBound× ours's.
const (
	floorBound = 1.5
	spoolBound = 1.6
)

// writeTargets prints the targets for the clean scenario, for each
// producer count, as ratios of ours to segmentio v3 in the same run, and
// whether ours delivered every event exactly once, refusing none, in every
// row.
func writeTargets(w io.Writer, rows []row) {
	find := func(s, sc string, p int) *row {
		for i := range rows {
			if rows[i].sdk == s && rows[i].scenario == sc && rows[i].producers == p {
				return &rows[i]
			}
		}
		return nil
	}
	events := 0
	var producers []int
	for _, rw := range rows {
		if !slices.Contains(producers, rw.producers) {
			producers = append(producers, rw.producers)
		}
		for _, r := range rw.runs {
			if r.drv != nil {
				events = r.drv.Events
			}
		}
	}
	fmt.Fprintln(w, "Targets (issue 27; clean scenario; ours ÷ segmentio v3 in this run unless the row says):")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| producers | target | ours | segmentio | ratio | bound | verdict |")
	fmt.Fprintln(w, "|--:|---|--:|--:|--:|--:|---|")
	for _, p := range producers {
		b := boundsFor(p)
		ours, seg := find("ours", "clean", p), find("segmentio", "clean", p)
		if ours != nil && seg != nil {
			o, s := ours.figures(events), seg.figures(events)
			if o.ok && s.ok {
				r := o.eventsPerSec / s.eventsPerSec
				fmt.Fprintf(w, "| %d | events/s | %s | %s | %.2f× | ≥ %g× | %s |\n", p, thousands(o.eventsPerSec), thousands(s.eventsPerSec), r, b.eps, verdict(r >= b.eps))
				r = o.cpuPerEvent / s.cpuPerEvent
				fmt.Fprintf(w, "| %d | CPU ns/event | %s | %s | %.2f× | ≤ %.2f× | %s |\n", p, thousands(o.cpuPerEvent), thousands(s.cpuPerEvent), r, b.cpu, verdict(r <= b.cpu))
				r = o.bytesPerEvent / s.bytesPerEvent
				fmt.Fprintf(w, "| %d | B/event | %s | %s | %.2f× | ≤ %.2f× | %s |\n", p, thousands(o.bytesPerEvent), thousands(s.bytesPerEvent), r, b.alloc, verdict(r <= b.alloc))
			}
			r := o.wireBytes / s.wireBytes
			fmt.Fprintf(w, "| %d | wire bytes | %s | %s | %.2f× | ≤ 0.25× | %s |\n", p, thousands(o.wireBytes), thousands(s.wireBytes), r, verdict(r <= 0.25))
		} else {
			fmt.Fprintf(w, "| %d | ratios | | | | | not measured: run ours and segmentio in the clean scenario |\n", p)
		}
		if fl := find(sdk.Floor, "clean", p); ours != nil && fl != nil && p == 1 {
			if o, f := ours.figures(events), fl.figures(events); o.ok && f.ok {
				r := o.cpuPerEvent / f.cpuPerEvent
				fmt.Fprintf(w, "| %d | CPU ns/event ÷ floor | %s | %s (floor) | %.2f× | ≤ %g× | %s |\n", p, thousands(o.cpuPerEvent), thousands(f.cpuPerEvent), r, floorBound, verdict(r <= floorBound))
			}
		}
		if sp := find("ours-spool", "clean", p); ours != nil && sp != nil {
			if o, s := ours.figures(events), sp.figures(events); o.ok && s.ok {
				r := s.cpuPerEvent / o.cpuPerEvent
				fmt.Fprintf(w, "| %d | CPU ns/event, ours-spool ÷ ours | %s (ours-spool) | %s (ours) | %.2f× | ≤ %g× | %s |\n", p, thousands(s.cpuPerEvent), thousands(o.cpuPerEvent), r, spoolBound, verdict(r <= spoolBound))
			}
		}
		if ours != nil {
			o := ours.figures(events)
			fmt.Fprintf(w, "| %d | TCP connections | %.0f | | | ≤ %d (MaxConcurrentRequests) | %s |\n", p, o.conns, maxConcurrentRequests, verdict(o.conns <= maxConcurrentRequests))
		}
	}
	var bad []string
	seen := false
	for _, rw := range rows {
		if rw.sdk != "ours" && rw.sdk != "ours-spool" {
			continue
		}
		seen = true
		if m := rw.figures(events); m.lost != 0 || m.dups != 0 || m.enqueueErrors != 0 || !m.ok {
			name := fmt.Sprintf("%s/%d", rw.scenario, rw.producers)
			if rw.sdk != "ours" {
				name = rw.sdk + " " + name
			}
			bad = append(bad, name)
		}
	}
	if seen {
		note := "every row"
		if len(bad) > 0 {
			note = "not in: " + strings.Join(bad, ", ")
		}
		fmt.Fprintf(w, "| | ours: each event delivered exactly once, none refused | %s | | | lost 0, dups 0, enqueue errors 0 | %s |\n", note, verdict(len(bad) == 0))
	}
}

// thousands formats x rounded, with comma separators: 1,234,567.
func thousands(x float64) string { return figures.Thousands(int64(math.Round(x))) }
