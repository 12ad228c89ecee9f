package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	analytics "github.com/dualpath/analytics-go"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// scrape GETs /metrics over HTTP and parses the exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := get(context.Background(), url)
	require.NoError(t, err, "GET /metrics")
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	require.NoError(t, err, "parsing /metrics:\n%s", body)
	return families
}

// value is the value of the sample of family name whose labels include
// want (label=value pairs); it fails if there is not exactly one.
func value(t *testing.T, families map[string]*dto.MetricFamily, name string, want ...string) float64 {
	t.Helper()
	f, ok := families[name]
	require.True(t, ok, "metric %s in the scrape", name)
	var found []float64
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for i := 0; i < len(want); i += 2 {
			match = match && labels[want[i]] == want[i+1]
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			found = append(found, m.Counter.GetValue())
		case m.Gauge != nil:
			found = append(found, m.Gauge.GetValue())
		default:
			t.Fatalf("%s: neither a counter nor a gauge", name)
		}
	}
	require.Len(t, found, 1, "samples of %s%v", name, want)
	return found[0]
}

// A run through the mock with failures and retries, then a scrape of
// /metrics over HTTP: every value the exposition carries is the client's
// Stats, under Prometheus names, with the error.type, retry path and
// queue state as labels, and the latency histogram with its buckets.
func TestScrapeMatchesStats(t *testing.T) {
	d, err := start("127.0.0.1:0")
	require.NoError(t, err, "start")
	defer d.close()
	require.NoError(t, d.send(context.Background(), 40), "send")
	families := scrape(t, d.metricsURL)
	st := d.client.Stats()

	// What the mock's script makes of 40 events in batches of 10.
	require.Equal(t, int64(40), st.Enqueued, "Enqueued")
	require.Equal(t, int64(30), st.Delivered, "Delivered")
	require.Equal(t, analytics.FailedStats{FatalStatus: 10}, st.Failed, "Failed")
	require.Equal(t, analytics.RetryStats{Backoff: 2, RateLimit: 1}, st.Retries, "Retries")
	require.Equal(t, int64(3+2+1+1), st.Attempts, "Attempts: 503, 503, 200; 429, 200; 400; 200")

	counters := []struct {
		name   string
		labels []string
		want   int64
	}{
		{"analytics_event_enqueued_total", nil, st.Enqueued},
		{"analytics_event_delivered_total", nil, st.Delivered},
		{"analytics_event_failed_total", []string{"error_type", "fatal_status"}, st.Failed.FatalStatus},
		{"analytics_event_failed_total", []string{"error_type", "retries_exhausted"}, st.Failed.RetriesExhausted},
		{"analytics_event_failed_total", []string{"error_type", "_OTHER"}, st.Failed.Other},
		{"analytics_event_rejected_total", []string{"error_type", "queue_full"}, st.Rejected.QueueFull},
		{"analytics_event_rejected_total", []string{"error_type", "invalid"}, st.Rejected.Invalid},
		{"analytics_upload_attempts_total", nil, st.Attempts},
		{"analytics_upload_retries_total", []string{"analytics_retry_path", "backoff"}, st.Retries.Backoff},
		{"analytics_upload_retries_total", []string{"analytics_retry_path", "rate_limit"}, st.Retries.RateLimit},
		{"analytics_queue_size", []string{"analytics_queue_state", "queued"}, int64(st.QueueDepth)},
		{"analytics_queue_size", []string{"analytics_queue_state", "in_flight"}, st.InFlight},
		{"analytics_queue_capacity", nil, int64(st.QueueMaxSize)},
		{"analytics_queue_memory_size_bytes", nil, int64(st.QueueHeldBytes)},
		{"analytics_queue_memory_capacity_bytes", nil, int64(st.QueueMaxBytes)},
		{"analytics_send_rate_held_total", nil, st.SendRate.Held},
		{"analytics_send_rate_waiting", nil, int64(st.SendRate.Waiting)},
	}
	for _, c := range counters {
		assert.Equal(t, float64(c.want), value(t, families, c.name, c.labels...), "%s%v", c.name, c.labels)
	}
	// The send rate's limit and state change with the clock after a
	// recovery, between the scrape and Stats: their values are checked on
	// a fake clock, in the bridge's own tests (TestSendRateStates).
	value(t, families, "analytics_send_rate_limit_per_second")
	for _, state := range []string{"unlimited", "limited", "probing"} {
		value(t, families, "analytics_send_rate_state", "analytics_send_rate_state", state)
	}
	_, spool := families["analytics_spool_size"]
	assert.False(t, spool, "spool metrics without a spool")

	hist, ok := families["analytics_event_duration_seconds"]
	require.True(t, ok, "the latency histogram in the scrape")
	require.Equal(t, dto.MetricType_HISTOGRAM, hist.GetType(), "its type")
	byOutcome := map[string]*dto.Histogram{}
	for _, m := range hist.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "analytics_event_outcome" {
				byOutcome[l.GetValue()] = m.GetHistogram()
			}
		}
	}
	for outcome, h := range map[string]analytics.Histogram{"delivered": st.Latency.Delivered, "failed": st.Latency.Failed} {
		got := byOutcome[outcome]
		require.NotNil(t, got, "the %s latency", outcome)
		assert.Equal(t, uint64(h.Count), got.GetSampleCount(), "%s latency count", outcome)
		assert.InDelta(t, h.Sum.Seconds(), got.GetSampleSum(), 1e-9, "%s latency sum", outcome)
		buckets := got.GetBucket()
		require.Len(t, buckets, len(h.Bounds)+1, "%s latency buckets: one per bound, and +Inf", outcome)
		var cumulative int64
		for i, bound := range h.Bounds {
			cumulative += h.Counts[i]
			assert.Equal(t, bound.Seconds(), buckets[i].GetUpperBound(), "%s latency bound %d", outcome, i)
			assert.Equal(t, uint64(cumulative), buckets[i].GetCumulativeCount(), "%s latency bucket %d", outcome, i)
		}
		last := buckets[len(h.Bounds)]
		assert.True(t, math.IsInf(last.GetUpperBound(), 1), "%s latency: the last bound is +Inf", outcome)
		assert.Equal(t, uint64(h.Count), last.GetCumulativeCount(), "%s latency: the +Inf bucket", outcome)
	}
	assert.Equal(t, uint64(30), byOutcome["delivered"].GetSampleCount(), "latencies of deliveries")
	assert.Equal(t, uint64(10), byOutcome["failed"].GetSampleCount(), "latencies of failures")
}

// The example as a user runs it: it serves, sends, and prints what
// /metrics says.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-events", "30"}, &out), "run; output:\n%s", &out)
	assert.Contains(t, out.String(), "serving http://127.0.0.1:", "the address of /metrics")
	assert.Contains(t, out.String(), `analytics_event_failed_total{error_type="fatal_status",`, "failures by error.type")
	assert.Regexp(t, `analytics_event_enqueued_total\{[^}]*\} 30\n`, out.String(), "events enqueued")
	assert.NotContains(t, out.String(), "_bucket{", "buckets left out")
}

// With -spool, the client has a spool, and /metrics its series.
func TestRunWithSpool(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-events", "10", "-spool", t.TempDir()}, &out), "run; output:\n%s", &out)
	assert.Regexp(t, `analytics_spool_file_capacity_bytes\{[^}]*\} [1-9]`, out.String(), "the spool's bound")
}
