package main

import "math"

// panel is one of the dashboard's panels as the picture draws it: its
// queries, evaluated over the scrapes.
type panel struct {
	title   string   // the dashboard panel's, as ../analytics-go.json has it
	unit    string   // of the y axis: events/s, events, bytes, s, attempts/s, ...
	log     bool     // a log scale
	metrics []string // the series its queries read
	// values is what its queries give at sample i, by the line's name.
	values func(r *recording, i int) map[string]float64
	dashed []string // lines drawn dashed: the bounds
	// nonZero leaves out lines that stay at 0 (reasons that never came).
	nonZero bool
	// states: the values are a state, 0 unlimited, 1 limited, 2
	// probing, drawn as a timeline.
	states bool
	colors map[string]string // of its lines, beside those of every panel
}

// Names of the bridge's series, under the example's Prometheus names.
const (
	enqueued      = "analytics_event_enqueued_total"
	delivered     = "analytics_event_delivered_total"
	failed        = "analytics_event_failed_total"
	attempts      = "analytics_upload_attempts_total"
	retries       = "analytics_upload_retries_total"
	queueSize     = "analytics_queue_size"
	queueCapacity = "analytics_queue_capacity"
	queueBytes    = "analytics_queue_memory_size_bytes"
	queueMaxBytes = "analytics_queue_memory_capacity_bytes"
	rateState     = "analytics_send_rate_state"
	rateLimit     = "analytics_send_rate_limit_per_second"
	rateHeld      = "analytics_send_rate_held_total"
	rateWaiting   = "analytics_send_rate_waiting"
	spoolSize     = "analytics_spool_size"
	spoolBacklog  = "analytics_spool_backlog"
	spoolBytes    = "analytics_spool_file_size_bytes"
	spoolMaxBytes = "analytics_spool_file_capacity_bytes"
	latency       = "analytics_event_duration_seconds"
)

// one is the single value of a sum without by, NaN for none.
func one(m map[string]float64) float64 {
	v, ok := m[""]
	if !ok {
		return math.NaN()
	}
	return v
}

// mainPanels are the panels the picture draws, in the dashboard's order.
var mainPanels = []panel{
	{
		title: "Events: enqueued, delivered, failed", unit: "events/s",
		metrics: []string{enqueued, delivered, failed},
		values: func(r *recording, i int) map[string]float64 {
			return map[string]float64{
				"enqueued":  one(r.rateBy(i, enqueued, nil, "")),
				"delivered": one(r.rateBy(i, delivered, nil, "")),
				"failed":    one(r.rateBy(i, failed, nil, "")),
			}
		},
	},
	{
		title: "Failed by reason", unit: "events/s", nonZero: true,
		metrics: []string{failed},
		values: func(r *recording, i int) map[string]float64 {
			return r.rateBy(i, failed, nil, "error_type")
		},
	},
	{
		title: "Event latency, Enqueue to outcome", unit: "s", log: true,
		colors:  map[string]string{"delivered p50": green, "delivered p99": blue, "failed p99": red},
		metrics: []string{latency + "_bucket"},
		values: func(r *recording, i int) map[string]float64 {
			return map[string]float64{
				"delivered p50": r.quantile(i, 0.5, latency, map[string]string{"analytics_event_outcome": "delivered"}),
				"delivered p99": r.quantile(i, 0.99, latency, map[string]string{"analytics_event_outcome": "delivered"}),
				"failed p99":    r.quantile(i, 0.99, latency, map[string]string{"analytics_event_outcome": "failed"}),
			}
		},
	},
	{
		title: "Queue: events held against capacity", unit: "events", dashed: []string{"capacity"},
		colors:  map[string]string{"queued": blue, "in_flight": orange},
		metrics: []string{queueSize, queueCapacity},
		values: func(r *recording, i int) map[string]float64 {
			s := r.samples[i]
			v := s.sumBy(queueSize, nil, "analytics_queue_state")
			v["capacity"] = one(s.sumBy(queueCapacity, nil, ""))
			return v
		},
	},
	{
		title: "Queue: bytes held against capacity", unit: "bytes", dashed: []string{"capacity"},
		colors:  map[string]string{"held": blue},
		metrics: []string{queueBytes, queueMaxBytes},
		values: func(r *recording, i int) map[string]float64 {
			s := r.samples[i]
			return map[string]float64{
				"held":     one(s.sumBy(queueBytes, nil, "")),
				"capacity": one(s.sumBy(queueMaxBytes, nil, "")),
			}
		},
	},
	{
		title: "Attempts and retries by path", unit: "attempts/s",
		colors:  map[string]string{"attempts": blue, "retries backoff": orange, "retries rate_limit": purple},
		metrics: []string{attempts, retries},
		values: func(r *recording, i int) map[string]float64 {
			v := map[string]float64{"attempts": one(r.rateBy(i, attempts, nil, ""))}
			for path, rate := range r.rateBy(i, retries, nil, "analytics_retry_path") {
				v["retries "+path] = rate
			}
			return v
		},
	},
	{
		title: "Send rate state", states: true,
		metrics: []string{rateState},
		values: func(r *recording, i int) map[string]float64 {
			s := r.samples[i].sumBy(rateState, nil, rateState)
			return map[string]float64{"client": s["limited"] + 2*s["probing"]}
		},
	},
	{
		title: "Send rate: limit, held, waiting", unit: "attempts/s; waiting: attempts",
		colors:  map[string]string{"limit": blue, "held": orange, "waiting": purple},
		metrics: []string{rateLimit, rateHeld, rateWaiting},
		values: func(r *recording, i int) map[string]float64 {
			s := r.samples[i]
			return map[string]float64{
				"limit":   one(s.sumBy(rateLimit, nil, "")),
				"held":    one(r.rateBy(i, rateHeld, nil, "")),
				"waiting": one(s.sumBy(rateWaiting, nil, "")),
			}
		},
	},
	{
		title: "Spool: events and backlog", unit: "events",
		colors:  map[string]string{"in the spool": blue, "backlog on disk": orange},
		metrics: []string{spoolSize, spoolBacklog},
		values: func(r *recording, i int) map[string]float64 {
			s := r.samples[i]
			return map[string]float64{
				"in the spool":    one(s.sumBy(spoolSize, nil, "")),
				"backlog on disk": one(s.sumBy(spoolBacklog, nil, "")),
			}
		},
	},
	{
		title: "Spool: files against capacity", unit: "bytes", dashed: []string{"capacity"},
		colors:  map[string]string{"files": blue},
		metrics: []string{spoolBytes, spoolMaxBytes},
		values: func(r *recording, i int) map[string]float64 {
			s := r.samples[i]
			return map[string]float64{
				"files":    one(s.sumBy(spoolBytes, nil, "")),
				"capacity": one(s.sumBy(spoolMaxBytes, nil, "")),
			}
		},
	},
}

const (
	blue   = "#5794f2"
	green  = "#37872d"
	red    = "#e02f44"
	orange = "#ff9830"
	purple = "#8f3bb8"
)

// colors are those of lines of the same name on every panel; others
// take the panel's, then the palette's.
var colors = map[string]string{
	"enqueued": blue, "delivered": green, "failed": red, "capacity": red, "fatal_status": red,
}

var palette = []string{orange, purple, blue, "#e0b400", green, "#c4162a"}

// stateNames and stateColors are the send rate's states, by value.
var (
	stateNames  = []string{"unlimited", "limited", "probing"}
	stateColors = []string{"#73bf69", "#ff9830", "#f2495c"}
)
