package main

import (
	"maps"
	"math"
	"net/http"
	"slices"
	"time"
)

// result is the figures of one run; it is also the -json output.
type result struct {
	Config struct {
		Clients        int     `json:"clients"`
		EventsPerSec   float64 `json:"events_per_sec_per_client"`
		FlushAt        int     `json:"flush_at"`       // 0: the SDK's default
		MaxQueueSize   int     `json:"max_queue_size"` // 0: the SDK's default
		HealthySec     float64 `json:"healthy_s"`
		OutageSec      float64 `json:"outage_s"`
		AfterSec       float64 `json:"after_s"`
		Fault          int     `json:"fault"`
		RetryAfterSec  int     `json:"retry_after_s,omitempty"`
		CloseTimeout   float64 `json:"close_timeout_s"`
		RetrySettings  string  `json:"retry_settings"`
		EventsPerBatch float64 `json:"events_per_batch"`
	} `json:"config"`

	// NominalHealthy is the fleet's request rate while healthy by
	// construction (clients × rate ÷ events per batch); every "vs healthy"
	// ratio divides by it.
	NominalHealthy float64 `json:"nominal_healthy_rps"`
	Phases         []phase `json:"phases"`

	// The 10 s after recovery: its first second, its busiest whole second
	// (of the ten seconds counted from recovery), and its busiest 1 s
	// window wherever it starts, which the target is checked on.
	FirstSecond   window `json:"first_second_after_recovery"`
	BusiestSecond window `json:"busiest_whole_second_after_recovery"`
	Busiest       window `json:"busiest_1s_window_after_recovery"`

	// Events enqueued before recovery: when the last of them was first
	// delivered, and the events enqueued during the outage: when half and
	// 99% of them were (seconds after recovery).
	PreRecoveryAccepted    int64    `json:"pre_recovery_accepted"`
	PreRecoveryUndelivered int64    `json:"pre_recovery_undelivered"`
	LastPreRecoverySec     *float64 `json:"last_pre_recovery_delivered_s"` // nil: none delivered
	OutageEventsP50Sec     *float64 `json:"outage_events_p50_delivered_s"`
	OutageEventsP99Sec     *float64 `json:"outage_events_p99_delivered_s"`

	Events events `json:"events"`

	Requests       int     `json:"requests"`
	Conns          int     `json:"tcp_conns"`
	DecodeErrors   int     `json:"decode_errors"`
	Attempts       int64   `json:"sdk_attempts"`
	BackoffRetries int64   `json:"sdk_backoff_retries"`
	RateLimitRetry int64   `json:"sdk_rate_limit_retries"`
	RateLimitWaits int64   `json:"sdk_rate_limited_waits"`
	TransportErrs  int64   `json:"sdk_transport_errors"`
	ProducedPerSec float64 `json:"produced_per_sec"` // accepted + refused, the whole fleet
	TargetPerSec   float64 `json:"target_per_sec"`
	WallSec        float64 `json:"wall_s"`
	CPUSec         float64 `json:"cpu_s"`
	CloseSec       float64 `json:"close_s"` // from the end of producing to the last Close returning
	CloseHung      bool    `json:"close_hung,omitempty"`
	CloseErrors    int     `json:"close_errors"`
	PerSecond      []int   `json:"requests_per_second"` // since the start of the run
}

// phase is the API's view of one stretch of the run.
type phase struct {
	Name      string  `json:"name"`
	FromSec   float64 `json:"from_s"`
	ToSec     float64 `json:"to_s"`
	Requests  int     `json:"requests"`
	OK        int     `json:"ok"`
	PerSec    float64 `json:"per_sec"`
	VsHealthy float64 `json:"vs_healthy"`
}

// window is the requests of a 1 s window after recovery.
type window struct {
	Requests  int     `json:"requests"`
	StartsSec float64 `json:"starts_s"` // after recovery
	VsHealthy float64 `json:"vs_healthy"`
}

// events accounts for every event the producers tried to enqueue.
type events struct {
	Accepted  int64            `json:"accepted"`
	Refused   map[string]int64 `json:"refused"`   // by Enqueue's error
	Delivered int64            `json:"delivered"` // accepted, answered 2xx at least once
	Succeeded int64            `json:"succeeded"` // Callback.Success
	Failed    map[string]int64 `json:"failed"`    // Callback.Failure, by reason
	FailedN   int64            `json:"failed_total"`
	// Lost were accepted, never answered 2xx, and never reported failed.
	Lost int64 `json:"lost"`
	// Duplicated counts the 2xx deliveries of an id beyond its first.
	Duplicated int64 `json:"duplicated"`
	// FailedDelivered were reported failed although a 2xx carried them.
	FailedDelivered int64 `json:"failed_but_delivered"`
	// Unknown ids answered 2xx that no producer made.
	Unknown int64 `json:"unknown"`
	// Mismatched were delivered with another enqueue time (the
	// fleet_enqueued_ns property) than their producer recorded.
	Mismatched int64 `json:"enqueue_time_mismatched"`
}

// busiestWindow returns the most arrivals in any span [t, t+width) that
// lies inside [from, to), and the earliest start of such a span (an
// arrival). at need not be sorted.
func busiestWindow(at []time.Duration, from, to, width time.Duration) (n int, start time.Duration) {
	var in []time.Duration
	for _, t := range at {
		if t >= from && t < to {
			in = append(in, t)
		}
	}
	slices.Sort(in)
	start = from
	j := 0
	for i, t := range in {
		for j < len(in) && in[j] < t+width {
			j++
		}
		if j-i > n {
			n, start = j-i, t
		}
	}
	return n, start
}

// percentile returns the p-th percentile (0..1) of xs, nearest rank; xs is
// sorted in place. Nil for none.
func percentile(xs []float64, p float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	slices.Sort(xs)
	i := int(math.Ceil(p*float64(len(xs)))) - 1
	return ptr(xs[max(i, 0)])
}

func ptr(x float64) *float64 { return &x }

func seconds(d time.Duration) float64 { return d.Seconds() }

// report turns what a run left into its figures.
func report(run *fleetRun, retrySettings string) *result {
	cfg := run.cfg
	r := &result{NominalHealthy: cfg.nominalHealthy()}
	c := &r.Config
	c.Clients, c.EventsPerSec, c.FlushAt, c.MaxQueueSize = cfg.clients, cfg.rate, cfg.flushAt, cfg.queue
	c.HealthySec, c.OutageSec, c.AfterSec = seconds(cfg.healthy), seconds(cfg.outage), seconds(cfg.after)
	c.Fault, c.CloseTimeout, c.RetrySettings = cfg.fault, seconds(cfg.closeTimeout), retrySettings
	if cfg.fault == http.StatusTooManyRequests {
		c.RetryAfterSec = cfg.retryAfter
	}
	c.EventsPerBatch = cfg.eventsPerBatch()
	healthy := r.NominalHealthy

	// Requests, by phase and by second.
	recovery := cfg.recovery()
	arrivals := make([]time.Duration, len(run.api.requests))
	var last time.Duration
	for i, q := range run.api.requests {
		arrivals[i] = q.at
		last = max(last, q.at)
	}
	r.Requests = len(arrivals)
	r.PerSecond = make([]int, int(last/time.Second)+1)
	for _, t := range arrivals {
		r.PerSecond[int(t/time.Second)]++
	}
	half := cfg.healthy + cfg.outage/2
	spans := []struct {
		name     string
		from, to time.Duration
	}{
		{"healthy", 0, cfg.healthy},
		{"outage, first half", cfg.healthy, half},
		{"outage, second half", half, recovery},
		{"outage, whole", cfg.healthy, recovery},
		{"after recovery", recovery, cfg.producing()},
		{"Close (producers stopped)", run.closeAt, max(run.closeAt, last+time.Millisecond)},
	}
	for _, s := range spans {
		p := phase{Name: s.name, FromSec: seconds(s.from), ToSec: seconds(s.to)}
		for _, q := range run.api.requests {
			if q.at >= s.from && q.at < s.to {
				p.Requests++
				if q.status/100 == 2 {
					p.OK++
				}
			}
		}
		// A span under a second (a Close that found little to send)
		// counts as one second: a rate over a few milliseconds means
		// nothing.
		p.PerSec = float64(p.Requests) / max(s.to-s.from, time.Second).Seconds()
		p.VsHealthy = p.PerSec / healthy
		r.Phases = append(r.Phases, p)
	}
	n, _ := busiestWindow(arrivals, recovery, recovery+time.Second, time.Second)
	r.FirstSecond = window{Requests: n, VsHealthy: float64(n) / healthy}
	for k := range burstWindowSeconds {
		from := recovery + time.Duration(k)*time.Second
		if n, _ := busiestWindow(arrivals, from, from+time.Second, time.Second); n > r.BusiestSecond.Requests {
			r.BusiestSecond = window{Requests: n, StartsSec: float64(k), VsHealthy: float64(n) / healthy}
		}
	}
	n, at := busiestWindow(arrivals, recovery, recovery+burstWindowSeconds*time.Second, time.Second)
	r.Busiest = window{Requests: n, StartsSec: seconds(at - recovery), VsHealthy: float64(n) / healthy}

	// Events.
	ev := &r.Events
	ev.Refused = make(map[string]int64)
	ev.Failed = make(map[string]int64)
	deliveries := run.api.deliveries
	failed := run.outcomes.failed
	var outageLat []float64
	lastPre := time.Duration(math.MinInt64)
	known := 0
	for _, fc := range run.clients {
		for k, v := range fc.refusals {
			ev.Refused[k] += int64(v)
		}
		for seq, at := range fc.enqueued {
			if at < 0 {
				continue
			}
			ev.Accepted++
			id := messageID(fc.index, seq)
			d, delivered := deliveries[id]
			reason, isFailed := failed[id]
			if delivered {
				known++
				if d.enqueued != at {
					ev.Mismatched++
				}
				ev.Delivered++
				ev.Duplicated += int64(d.count - 1)
			}
			if isFailed {
				ev.Failed[reason]++
				ev.FailedN++
				if delivered {
					ev.FailedDelivered++
				}
			}
			if !delivered && !isFailed {
				ev.Lost++
			}
			if at < recovery {
				r.PreRecoveryAccepted++
				if !delivered {
					r.PreRecoveryUndelivered++
					continue
				}
				lastPre = max(lastPre, d.first)
				if at >= cfg.healthy {
					outageLat = append(outageLat, seconds(d.first-recovery))
				}
			}
		}
		if !run.closeHung && fc.closeErr != nil {
			r.CloseErrors++
		}
	}
	ev.Unknown = int64(len(deliveries) - known)
	ev.Succeeded = run.outcomes.succeeded.Load()
	if lastPre != time.Duration(math.MinInt64) {
		r.LastPreRecoverySec = ptr(seconds(lastPre - recovery))
	}
	r.OutageEventsP50Sec = percentile(outageLat, 0.5)
	r.OutageEventsP99Sec = percentile(outageLat, 0.99)

	r.Conns, r.DecodeErrors = run.api.conns, run.api.decodeErrors
	s := run.stats
	r.Attempts, r.BackoffRetries, r.RateLimitRetry = s.Attempts, s.Retries.Backoff, s.Retries.RateLimit
	r.RateLimitWaits = s.RateLimitedWaits
	r.TransportErrs = s.TransportErrors.NotWritten + s.TransportErrors.Written
	tried := ev.Accepted
	for _, v := range ev.Refused {
		tried += v
	}
	r.ProducedPerSec = float64(tried) / cfg.producing().Seconds()
	r.TargetPerSec = float64(cfg.clients) * cfg.rate
	r.WallSec, r.CPUSec = seconds(run.wall), seconds(run.cpu)
	r.CloseSec, r.CloseHung = seconds(run.closeTook), run.closeHung
	return r
}

// sortedKeys returns m's keys in order, for stable output.
func sortedKeys(m map[string]int64) []string { return slices.Sorted(maps.Keys(m)) }
