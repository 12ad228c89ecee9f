package main

import (
	"strings"
	"testing"
)

// contains fails the test when s does not hold sub.
func contains(t *testing.T, s, sub, what string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%s: %q does not contain %q", what, s, sub)
	}
}

// fakeRow is one clean-scenario row whose every run measured cpu ns and
// bytes allocated per event, with refused enqueue errors.
func fakeRow(sdkName string, producers int, cpu, alloc float64, refused int64) row {
	const events = 1000
	rw := row{sdk: sdkName, scenario: "clean", producers: producers}
	rw.runs = append(rw.runs, run{
		drv: &driverResult{SDK: sdkName, Events: events, Producers: producers, ElapsedNs: 1e9,
			CPUNs: int64(cpu * events), TotalAlloc: uint64(alloc * events), EnqueueErrors: refused},
		sink: sinkStats{Requests: 4, WireBytes: 100, Conns: 4, Distinct: events},
	})
	return rw
}

// line returns the line of the targets table for producers and target.
func line(t *testing.T, out string, producers, target string) string {
	t.Helper()
	prefix := "| " + producers + " | " + target + " |"
	if producers == "" {
		prefix = "| | " + target + " |"
	}
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	t.Fatalf("no targets line for %s producers, %s, in:\n%s", producers, target, out)
	return ""
}

// Each producer count has its own bounds: 0.26× of segmentio's CPU passes
// with 16 producers (≤ 0.28×) and fails with 1 (≤ 0.25×).
func TestTargetsPerProducerCount(t *testing.T) {
	rows := []row{
		fakeRow("ours", 1, 260, 200, 0), fakeRow("segmentio", 1, 1000, 1000, 0),
		fakeRow("ours", 16, 260, 200, 0), fakeRow("segmentio", 16, 1000, 1000, 0),
	}
	var b strings.Builder
	writeTargets(&b, rows)
	out := b.String()
	contains(t, line(t, out, "1", "CPU ns/event"), "| ≤ 0.25× | FAIL |", "1 producer")
	contains(t, line(t, out, "16", "CPU ns/event"), "| ≤ 0.28× | PASS |", "16 producers")
	contains(t, line(t, out, "", "ours: each event delivered exactly once, none refused"), "PASS", "nothing refused")
}

// An event refused by ours fails the delivery line, naming the row.
func TestTargetsCountRefusedEvents(t *testing.T) {
	rows := []row{fakeRow("ours", 16, 300, 300, 1), fakeRow("segmentio", 16, 1000, 1000, 0)}
	var b strings.Builder
	writeTargets(&b, rows)
	l := line(t, b.String(), "", "ours: each event delivered exactly once, none refused")
	contains(t, l, "not in: clean/16", "the row with a refused event")
	contains(t, l, "FAIL", "the verdict")
}

// Ours is held to the floor with 1 producer (≤ 1.5× its CPU per event)
// and ours-spool to ours (≤ 1.6×): 1.6× of the floor fails, 1.5× of ours
// passes.
func TestTargetsFloorAndSpool(t *testing.T) {
	rows := []row{
		fakeRow("ours", 1, 320, 200, 0), fakeRow("segmentio", 1, 1000, 1000, 0),
		fakeRow("floor", 1, 200, 100, 0), fakeRow("ours-spool", 1, 480, 200, 0),
	}
	var b strings.Builder
	writeTargets(&b, rows)
	out := b.String()
	contains(t, line(t, out, "1", "CPU ns/event ÷ floor"), "| 1.60× | ≤ 1.5× | FAIL |", "ours against the floor")
	contains(t, line(t, out, "1", "CPU ns/event, ours-spool ÷ ours"), "| 1.50× | ≤ 1.6× | PASS |", "the spool against memory only")
}
