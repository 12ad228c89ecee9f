package otelmetrics_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/otelmetrics"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// series is one metric as a reader collected it: its unit, kind and
// value by attributes ("key=value,..."; "" for none).
type series struct {
	Unit   string
	Kind   string // counter, updown, gauge
	Points map[string]float64
}

// meter is a client registered with a real MeterProvider whose manual
// reader also has the client's Producer.
type meter struct {
	t      *testing.T
	reader *sdkmetric.ManualReader
	reg    interface{ Unregister() error }
}

func newMeter(t *testing.T, client *analytics.Client) *meter {
	t.Helper()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(otelmetrics.NewProducer(client)))
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	reg, err := otelmetrics.Register(provider, client)
	require.NoError(t, err, "Register")
	return &meter{t: t, reader: reader, reg: reg}
}

// collect returns the observable instruments as series, and the
// histograms apart.
func (m *meter) collect() (map[string]series, map[string]metricdata.Histogram[float64]) {
	m.t.Helper()
	var rm metricdata.ResourceMetrics
	require.NoError(m.t, m.reader.Collect(context.Background(), &rm), "Collect")
	got := map[string]series{}
	hists := map[string]metricdata.Histogram[float64]{}
	for _, sm := range rm.ScopeMetrics {
		assert.Equal(m.t, otelmetrics.ScopeName, sm.Scope.Name, "scope name")
		assert.Equal(m.t, analytics.Version, sm.Scope.Version, "scope version")
		for _, mt := range sm.Metrics {
			require.NotContains(m.t, got, mt.Name, "metrics collected twice")
			s := series{Unit: mt.Unit, Points: map[string]float64{}}
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				s.Kind = "updown"
				if d.IsMonotonic {
					s.Kind = "counter"
				}
				assert.Equal(m.t, metricdata.CumulativeTemporality, d.Temporality, "temporality of %s", mt.Name)
				for _, p := range d.DataPoints {
					s.Points[attrs(p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				s.Kind = "gauge"
				for _, p := range d.DataPoints {
					s.Points[attrs(p.Attributes)] = p.Value
				}
			case metricdata.Histogram[float64]:
				hists[mt.Name] = d
				continue
			default:
				m.t.Fatalf("%s: unexpected data %T", mt.Name, mt.Data)
			}
			got[mt.Name] = s
		}
	}
	return got, hists
}

func attrs(s attribute.Set) string { return s.Encoded(attribute.DefaultEncoder()) }

// want is what the bridge must report for st: every instrument, each
// reason and state, read from the snapshot.
func want(st analytics.Stats) map[string]series {
	one := func(v int64) map[string]float64 { return map[string]float64{"": float64(v)} }
	byKey := func(key string, kv ...any) map[string]float64 {
		p := map[string]float64{}
		for i := 0; i < len(kv); i += 2 {
			p[key+"="+kv[i].(string)] = float64(kv[i+1].(int64))
		}
		return p
	}
	r, f, sr := st.Rejected, st.Failed, st.SendRate
	state := map[string]float64{"analytics.send_rate.state=unlimited": 0, "analytics.send_rate.state=limited": 0, "analytics.send_rate.state=probing": 0}
	switch {
	case sr.Probing:
		state["analytics.send_rate.state=probing"] = 1
	case sr.Limit > 0:
		state["analytics.send_rate.state=limited"] = 1
	default:
		state["analytics.send_rate.state=unlimited"] = 1
	}
	w := map[string]series{
		"analytics.event.enqueued": {"{event}", "counter", one(st.Enqueued)},
		"analytics.event.rejected": {"{event}", "counter", byKey("error.type",
			"invalid", r.Invalid, "too_large", r.TooLarge, "queue_full", r.QueueFull, "closed", r.Closed, "spool", r.Spool)},
		"analytics.event.delivered": {"{event}", "counter", one(st.Delivered)},
		"analytics.event.failed": {"{event}", "counter", byKey("error.type",
			"retries_exhausted", f.RetriesExhausted, "backoff_budget_exceeded", f.BackoffBudgetExceeded,
			"rate_limit_budget_exceeded", f.RateLimitBudgetExceeded, "fatal_status", f.FatalStatus,
			"redirect", f.Redirect, "shutdown", f.Shutdown, "spool", f.Spool, "_OTHER", f.Other)},
		"analytics.upload.attempts": {"{attempt}", "counter", one(st.Attempts)},
		"analytics.upload.retries": {"{retry}", "counter", byKey("analytics.retry.path",
			"backoff", st.Retries.Backoff, "rate_limit", st.Retries.RateLimit, "token", st.Retries.Token)},
		"analytics.queue.size": {"{event}", "updown", byKey("analytics.queue.state",
			"queued", int64(st.QueueDepth), "in_flight", st.InFlight)},
		"analytics.queue.capacity":        {"{event}", "updown", one(int64(st.QueueMaxSize))},
		"analytics.queue.memory.size":     {"By", "updown", one(int64(st.QueueHeldBytes))},
		"analytics.queue.memory.capacity": {"By", "updown", one(int64(st.QueueMaxBytes))},
		"analytics.send_rate.limit":       {"{attempt}/s", "gauge", map[string]float64{"": sr.Limit}},
		"analytics.send_rate.state":       {"{state}", "updown", state},
		"analytics.send_rate.held":        {"{attempt}", "counter", one(sr.Held)},
		"analytics.send_rate.waiting":     {"{attempt}", "updown", one(int64(sr.Waiting))},
	}
	if sp := st.Spool; sp.MaxBytes > 0 {
		w["analytics.spool.size"] = series{"{event}", "updown", one(sp.Records)}
		w["analytics.spool.backlog"] = series{"{event}", "updown", one(sp.OnDisk)}
		w["analytics.spool.file.size"] = series{"By", "updown", one(sp.Bytes)}
		w["analytics.spool.file.capacity"] = series{"By", "updown", one(sp.MaxBytes)}
		w["analytics.spool.recovered"] = series{"{event}", "counter", one(sp.Recovered)}
		w["analytics.spool.skipped"] = series{"{record}", "counter", one(sp.SkippedCorrupt)}
	}
	return w
}

// wantLatency is analytics.event.duration for st, in seconds.
func wantLatency(t *testing.T, st analytics.Stats, got metricdata.Histogram[float64]) {
	t.Helper()
	assert.Equal(t, metricdata.CumulativeTemporality, got.Temporality, "temporality of the latency")
	require.Len(t, got.DataPoints, 2, "latency points")
	for i, h := range []analytics.Histogram{st.Latency.Delivered, st.Latency.Failed} {
		p := got.DataPoints[i]
		outcome := []string{"delivered", "failed"}[i]
		assert.Equal(t, "analytics.event.outcome="+outcome, attrs(p.Attributes), "latency attributes")
		bounds := make([]float64, len(h.Bounds))
		for j, b := range h.Bounds {
			bounds[j] = b.Seconds()
		}
		counts := make([]uint64, len(h.Counts))
		for j, n := range h.Counts {
			counts[j] = uint64(n)
		}
		assert.Equal(t, bounds, p.Bounds, "%s latency bounds", outcome)
		assert.Equal(t, counts, p.BucketCounts, "%s latency buckets", outcome)
		assert.Equal(t, uint64(h.Count), p.Count, "%s latency count", outcome)
		assert.Equal(t, h.Sum.Seconds(), p.Sum, "%s latency sum", outcome)
		assert.False(t, p.StartTime.After(p.Time), "%s latency start time", outcome)
	}
}

var quiet = analytics.WithLogger(slog.New(slog.DiscardHandler))

// byBatch answers each batch by the prefix of its first messageId, on
// its own schedule whatever the order batches arrive in: ok- gets two
// 503s then 200; rl- a 429 with Retry-After: 1 then 200; bad- a 400;
// down- 503 for ever.
func byBatch() func(analyticstest.Request) analyticstest.Answer {
	attempts := map[string]int{}
	return func(r analyticstest.Request) analyticstest.Answer {
		id, _ := r.Events[0]["messageId"].(string)
		prefix, _, _ := strings.Cut(id, "-")
		n := attempts[prefix]
		attempts[prefix]++
		switch {
		case prefix == "ok" && n < 2, prefix == "down":
			return analyticstest.Status(503)
		case prefix == "rl" && n == 0:
			return analyticstest.RetryAfter(429, "1")
		case prefix == "bad":
			// After a moment of fake time, which passes only once the
			// test waits: answered at once, the batch could fail and give
			// its room back before the ninth Enqueue, which must find the
			// queue full.
			return analyticstest.Answer{Status: 400, Delay: time.Millisecond}
		}
		return analyticstest.Status(200)
	}
}

func pair(prefix string) []analytics.Track {
	return []analytics.Track{
		{MessageId: prefix + "-0", UserId: "u", Event: "E"},
		{MessageId: prefix + "-1", UserId: "u", Event: "E"},
	}
}

// TestEveryFieldToItsInstrument observes a snapshot whose every field the
// bridge reads holds a value of its own: each instrument and attribute
// must show its field's, so that two fields swapped, or one read for
// another, fail (a run leaves many of them 0, alike).
func TestEveryFieldToItsInstrument(t *testing.T) {
	st := analytics.Stats{
		Enqueued:  1,
		Rejected:  analytics.RejectedStats{Invalid: 2, TooLarge: 3, QueueFull: 4, Closed: 5, Spool: 6},
		Delivered: 7,
		Failed: analytics.FailedStats{RetriesExhausted: 8, BackoffBudgetExceeded: 9, RateLimitBudgetExceeded: 10,
			FatalStatus: 11, Redirect: 12, Shutdown: 13, Spool: 14, Other: 15},
		UploadStats: analytics.UploadStats{
			Attempts: 16,
			Retries:  analytics.RetryStats{Backoff: 17, RateLimit: 18, Token: 33},
		},
		QueueDepth:     19,
		InFlight:       20,
		QueueMaxSize:   21,
		QueueHeldBytes: 22,
		QueueMaxBytes:  23,
		Spool:          analytics.SpoolStats{Bytes: 24, MaxBytes: 25, Records: 26, OnDisk: 27, Recovered: 28, SkippedCorrupt: 29},
		SendRate:       analytics.SendRateStats{Limit: 30.5, Held: 31, Waiting: 32},
	}
	reader := sdkmetric.NewManualReader()
	reg, err := otelmetrics.RegisterStats(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)), func() analytics.Stats { return st })
	require.NoError(t, err, "Register")
	defer func() { require.NoError(t, reg.Unregister(), "Unregister") }()
	m := &meter{t: t, reader: reader, reg: reg}
	got, _ := m.collect()
	assert.Equal(t, want(st), got, "the instruments")
}

// Every instrument against a scripted run through the mock: 503s then a
// delivery, a 429 with Retry-After, a 400, 503s until the retries run
// out, a full queue, an invalid event, one too large, one after Close.
// Values and attributes are exact: the counts the script implies, and
// every instrument equal to Stats, in the middle of the run and at its
// end.
func TestInstrumentsAfterAScriptedRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().Rule(byBatch())
		client, err := analytics.New("wk", analytics.WithEndpoint("http://tracking.test"),
			analytics.WithHTTPClient(api.Client(nil)), quiet,
			analytics.WithFlushAt(2), analytics.WithMaxQueueSize(8), analytics.WithRetryCount(2))
		require.NoError(t, err, "New")
		m := newMeter(t, client)

		assert.ErrorIs(t, client.Enqueue(analytics.Track{Event: "E"}), analytics.ErrInvalidMessage, "no user")
		big := analytics.Track{UserId: "u", Event: "E", Properties: analytics.Properties{"blob": strings.Repeat("x", analytics.MaxMessageBytes)}}
		assert.ErrorIs(t, client.Enqueue(big), analytics.ErrMessageTooLarge, "too large")
		for _, prefix := range []string{"ok", "rl", "bad", "down"} {
			for _, msg := range pair(prefix) {
				require.NoError(t, client.Enqueue(msg), "Enqueue %s", msg.MessageId)
			}
		}
		assert.ErrorIs(t, client.Enqueue(analytics.Track{UserId: "u", Event: "E"}), analytics.ErrQueueFull, "a ninth event")
		synctest.Wait()

		st := client.Stats()
		got, _ := m.collect()
		assert.Equal(t, want(st), got, "the instruments mid-run: %+v", st)
		size := got["analytics.queue.size"].Points
		assert.Equal(t, float64(st.Enqueued-st.Delivered-st.Failed.Total()), size["analytics.queue.state=queued"]+size["analytics.queue.state=in_flight"],
			"events against the queue's capacity: those accepted without an outcome yet")
		assert.Equal(t, 8.0, got["analytics.queue.capacity"].Points[""], "the queue's capacity")
		assert.Positive(t, got["analytics.queue.memory.size"].Points[""], "bytes against the queue's byte bound")
		assert.NotContains(t, got, "analytics.spool.size", "spool instruments without a spool")

		require.NoError(t, client.Close(), "Close")
		assert.ErrorIs(t, client.Enqueue(analytics.Track{UserId: "u", Event: "E"}), analytics.ErrClosed, "after Close")
		st = client.Stats()
		assert.Equal(t, int64(8), st.Enqueued, "Enqueued")
		assert.Equal(t, int64(4), st.Delivered, "Delivered")
		assert.Equal(t, analytics.FailedStats{FatalStatus: 2, RetriesExhausted: 2}, st.Failed, "Failed")
		assert.Equal(t, analytics.RejectedStats{Invalid: 1, TooLarge: 1, QueueFull: 1, Closed: 1}, st.Rejected, "Rejected")
		assert.Equal(t, int64(3+2+1+3), st.Attempts, "Attempts")
		assert.Equal(t, analytics.RetryStats{Backoff: 2 + 2, RateLimit: 1}, st.Retries, "Retries")
		assert.Equal(t, int64(4), st.Latency.Delivered.Count, "latencies of deliveries")
		assert.Equal(t, int64(4), st.Latency.Failed.Count, "latencies of failures")
		assert.GreaterOrEqual(t, st.Latency.Delivered.Sum, 2*time.Second, "the two events behind the Retry-After waited 1 s each")

		got, hists := m.collect()
		assert.Equal(t, want(st), got, "the instruments at the end")
		require.Contains(t, hists, "analytics.event.duration", "the latency histogram")
		wantLatency(t, st, hists["analytics.event.duration"])

		require.NoError(t, m.reg.Unregister(), "Unregister")
		got, _ = m.collect()
		assert.Empty(t, got, "instruments after Unregister")
	})
}

// The send rate's three states, each in turn: probing while the API is
// down, limited right after it recovers, unlimited a second later. The
// client first sends while the API is healthy, so that it knows its rate:
// the limit after a recovery is a multiple of it.
func TestSendRateStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New()
		client, err := analytics.New("wk", analytics.WithEndpoint("http://tracking.test"),
			analytics.WithHTTPClient(api.Client(nil)), quiet, analytics.WithFlushAt(1))
		require.NoError(t, err, "New")
		defer func() { _ = client.Close() }() // a failed require still ends the bubble's goroutines
		m := newMeter(t, client)
		states := func() map[string]float64 {
			got, _ := m.collect()
			assert.Equal(t, want(client.Stats()), got, "the instruments")
			return got["analytics.send_rate.state"].Points
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		for i := range 4 { // over 1.5 s: a healthy rate of 2 a second
			require.NoError(t, client.Enqueue(analytics.Track{MessageId: fmt.Sprint("ok-", i), UserId: "u", Event: "E"}), "Enqueue")
			require.NoError(t, client.Flush(ctx), "Flush")
			time.Sleep(500 * time.Millisecond)
		}
		assert.Equal(t, 1.0, states()["analytics.send_rate.state=unlimited"], "unlimited while healthy")

		api.Default(analyticstest.Status(503))
		for i := range 5 {
			require.NoError(t, client.Enqueue(analytics.Track{MessageId: fmt.Sprint("m-", i), UserId: "u", Event: "E"}), "Enqueue")
		}
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := client.Stats()
		require.True(t, st.SendRate.Probing, "probing")
		require.Positive(t, st.SendRate.Waiting, "attempts waiting")
		assert.Equal(t, 1.0, states()["analytics.send_rate.state=probing"], "probing")

		api.Default(analyticstest.Status(200))
		require.NoError(t, client.Flush(ctx), "Flush")
		require.Positive(t, client.Stats().SendRate.Limit, "the limit right after the recovery")
		assert.Equal(t, 1.0, states()["analytics.send_rate.state=limited"], "limited")
		time.Sleep(time.Second)
		assert.Equal(t, 1.0, states()["analytics.send_rate.state=unlimited"], "unlimited")
		require.NoError(t, client.Close(), "Close")
	})
}

// The spool's instruments: what a first client left in the directory,
// one record of it damaged on disk, recovered by the next one, with
// events waiting on disk beyond its memory queue. Events recovered have
// no latency: the client does not know when they were enqueued.
func TestSpoolInstruments(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		stalled := analyticstest.New().Default(analyticstest.Answer{Delay: time.Hour})
		first, err := analytics.New("wk", analytics.WithEndpoint("http://tracking.test"),
			analytics.WithHTTPClient(stalled.Client(nil)), quiet, analytics.WithSpool(dir),
			analytics.WithFlushAt(100), analytics.WithCloseTimeout(time.Second))
		require.NoError(t, err, "New")
		for i := range 6 {
			event := "E"
			if i == 3 {
				event = "Damaged"
			}
			require.NoError(t, first.Enqueue(analytics.Track{MessageId: fmt.Sprint("sp-", i), UserId: "u", Event: event}), "Enqueue")
		}
		require.NoError(t, first.Close(), "Close with the API stalled: the events stay in the spool")
		require.Equal(t, int64(6), first.Stats().Spool.Left, "events left in the spool")
		damage(t, dir, `"event":"Damaged"`, `"event":"DamageD"`)

		api := analyticstest.New().Script(analyticstest.Answer{Delay: time.Minute})
		client, err := analytics.New("wk", analytics.WithEndpoint("http://tracking.test"),
			analytics.WithHTTPClient(api.Client(nil)), quiet, analytics.WithSpool(dir),
			analytics.WithFlushAt(2), analytics.WithMaxQueueSize(2), analytics.WithSpoolMaxBytes(4<<20))
		require.NoError(t, err, "New")
		m := newMeter(t, client)
		synctest.Wait()
		st := client.Stats()
		got, _ := m.collect()
		assert.Equal(t, want(st), got, "the instruments with a batch stalled")
		assert.Equal(t, map[string]float64{"": 5}, got["analytics.spool.recovered"].Points, "recovered: the six but the damaged one")
		assert.Equal(t, map[string]float64{"": 1}, got["analytics.spool.skipped"].Points, "damaged records skipped")
		assert.Equal(t, map[string]float64{"": 5}, got["analytics.spool.size"].Points, "events in the spool")
		assert.Equal(t, map[string]float64{"": 3}, got["analytics.spool.backlog"].Points, "events beyond the memory queue, on disk")
		assert.Equal(t, map[string]float64{"": 4 << 20}, got["analytics.spool.file.capacity"].Points, "the spool's bound")
		assert.Positive(t, got["analytics.spool.file.size"].Points[""], "the spool's files")

		require.NoError(t, client.Close(), "Close")
		st = client.Stats()
		assert.Equal(t, int64(5), st.Delivered, "delivered")
		got, hists := m.collect()
		assert.Equal(t, want(st), got, "the instruments at the end")
		assert.Equal(t, map[string]float64{"": 0}, got["analytics.spool.size"].Points, "events in the spool at the end")
		wantLatency(t, st, hists["analytics.event.duration"])
		assert.Zero(t, st.Latency.Delivered.Count, "latencies of recovered events")
	})
}

// damage replaces old with new in the spool's files: a record whose
// checksum no longer matches.
func damage(t *testing.T, dir, old, new string) {
	t.Helper()
	found := 0
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || !strings.Contains(string(data), old) {
			return err
		}
		found++
		return os.WriteFile(path, []byte(strings.ReplaceAll(string(data), old, new)), 0o600)
	}), "damaging the spool")
	require.Equal(t, 1, found, "files with %s", old)
}
