package analytics

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
)

// LatencyStats is the time events took from Enqueue to their final outcome
// (Callback.Success or Callback.Failure), by outcome, since New (SPEC §8).
// It counts the events that went from Enqueue into the memory queue, which
// are all of them without WithSpool; with WithSpool it leaves out those read
// back from disk (recovered from an earlier client, or spooled beyond the
// memory queue's bounds), whose time of Enqueue the client does not keep.
type LatencyStats struct {
	Delivered Histogram `json:"delivered"`
	Failed    Histogram `json:"failed"`
}

// Histogram is a distribution of durations, counted in buckets.
type Histogram struct {
	// Bounds are the buckets' upper bounds, ascending: 5 ms to 1 h, the
	// same for every client and every snapshot.
	Bounds []time.Duration `json:"bounds"`
	// Counts has a count per bucket, len(Bounds)+1 of them: Counts[i]
	// counts the durations d with Bounds[i-1] < d <= Bounds[i] (d <=
	// Bounds[0] for the first), and the last one those over every bound.
	Counts []int64 `json:"counts"`
	// Count is the number of durations counted: the sum of Counts.
	Count int64 `json:"count"`
	// Sum is their total.
	Sum time.Duration `json:"sum"`
}

// latencyBounds are Histogram.Bounds: from an upload that goes out at once
// to one that retried for an hour. It is never written.
var latencyBounds = [...]time.Duration{
	5 * time.Millisecond, 10 * time.Millisecond, 25 * time.Millisecond, 50 * time.Millisecond,
	100 * time.Millisecond, 250 * time.Millisecond, 500 * time.Millisecond,
	time.Second, 2500 * time.Millisecond, 5 * time.Second, 10 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour,
}

// latencies are the counts behind LatencyStats. Enqueue only stamps each
// event with its time since start (consumer.Event.At), from the clock reading it
// takes anyway; the buckets are counted when a run of events ends, on the
// upload's goroutine, a few atomic adds per run (SPEC §8).
type latencies struct {
	start             time.Time // New's clock reading: events are stamped with the time since
	delivered, failed latencyHistogram
}

// since is the stamp of an event enqueued at now.
func (l *latencies) since(now time.Time) time.Duration { return now.Sub(l.start) }

// endedRun counts into l the latencies of a run of events that has just
// had its final outcome, delivered or failed; those read back from the
// spool are not stamped (unstamped) and not counted.
func endedRun(l *latencies, run []queue.Item[consumer.Event], delivered bool) {
	h := &l.failed
	if delivered {
		h = &l.delivered
	}
	now := time.Since(l.start)
	var counts [len(latencyBounds) + 1]int64
	var sum time.Duration
	for i := range run {
		at := run[i].Value.At
		if at == unstamped {
			continue
		}
		d := now - at
		b, _ := slices.BinarySearch(latencyBounds[:], d) // the first bound >= d
		counts[b]++
		sum += d
	}
	for b, n := range counts {
		if n > 0 {
			h.counts[b].Add(n)
		}
	}
	if sum != 0 {
		h.sum.Add(int64(sum))
	}
}

func (l *latencies) snapshot() LatencyStats {
	return LatencyStats{Delivered: l.delivered.snapshot(), Failed: l.failed.snapshot()}
}

type latencyHistogram struct {
	counts [len(latencyBounds) + 1]atomic.Int64
	sum    atomic.Int64 // nanoseconds
}

func (h *latencyHistogram) snapshot() Histogram {
	out := Histogram{Bounds: slices.Clone(latencyBounds[:]), Counts: make([]int64, len(h.counts))}
	for b := range h.counts {
		out.Counts[b] = h.counts[b].Load()
		out.Count += out.Counts[b]
	}
	out.Sum = time.Duration(h.sum.Load())
	return out
}
