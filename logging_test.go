package analytics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// brokenHandler panics in every method.
type brokenHandler struct{}

func (brokenHandler) Enabled(context.Context, slog.Level) bool  { panic("Enabled") }
func (brokenHandler) Handle(context.Context, slog.Record) error { panic("Handle") }
func (brokenHandler) WithAttrs([]slog.Attr) slog.Handler        { panic("WithAttrs") }
func (brokenHandler) WithGroup(string) slog.Handler             { panic("WithGroup") }

// handleBroken panics in Handle alone.
type handleBroken struct{ slog.Handler }

func (handleBroken) Handle(context.Context, slog.Record) error { panic("Handle") }

func TestLoggerNeverPanics(t *testing.T) {
	for name, h := range map[string]slog.Handler{
		"every method": brokenHandler{},
		"Handle":       handleBroken{slog.NewTextHandler(&bytes.Buffer{}, nil)},
	} {
		t.Run(name, func(t *testing.T) {
			log := newLogger(slog.New(h))
			log.Error("dropped", slog.Int("events", 1))
			log.With("k", "v").WithGroup("g").Warn("dropped")
			assert.Error(t, log.Handler().Handle(context.Background(), slog.Record{}), "Handle of a handler that panics")
			// A throttled logger over the same handler is as safe.
			throttled := throttled(slog.New(h))
			for range 2 * throttleFirst {
				throttled.Error("dropped", slog.Int("events", 1))
			}
			throttled.With("k", "v").WithGroup("g").Warn("dropped")
		})
	}
}

func TestLoggerPassesRecordsThrough(t *testing.T) {
	var buf bytes.Buffer
	log := newLogger(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	log.Info("below the level")
	log.With("client", "c1").WithGroup("upload").Warn("attempt failed", slog.Int("attempt", 2))
	assert.Contains(t, buf.String(), `level=WARN msg="attempt failed" client=c1 upload.attempt=2`, "the record above the level")
	assert.NotContains(t, buf.String(), "below", "the record below the level")
}

// With no logger, records go to slog.Default() as it is when the client's
// logger is made.
func TestLoggerDefaultsToSlogDefault(t *testing.T) {
	var buf bytes.Buffer
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(slog.New(slog.NewTextHandler(&buf, nil)))
	newLogger(nil).Error("to the default", slog.Int("events", 3))
	assert.Contains(t, buf.String(), `level=ERROR msg="to the default" events=3`, "the record in slog.Default()")
}

// panickyHandler is a slog.Handler that panics on the records it matches,
// as one writing to a testing.T whose test has ended does: the first
// limit of them, or all of them when limit is 0.
type panickyHandler struct {
	match  func(slog.Record) bool
	limit  int
	mu     sync.Mutex
	panics int
}

// panicsOn panics on the records whose message contains msg.
func panicsOn(msg string, limit int) *panickyHandler {
	return &panickyHandler{match: func(r slog.Record) bool { return strings.Contains(r.Message, msg) }, limit: limit}
}

func (h *panickyHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *panickyHandler) Handle(_ context.Context, r slog.Record) error {
	if !h.match(r) {
		return nil
	}
	h.mu.Lock()
	arm := h.limit == 0 || h.panics < h.limit
	if arm {
		h.panics++
	}
	h.mu.Unlock()
	if arm {
		panic("Log in goroutine after TestSomething has completed: " + r.Message)
	}
	return nil
}

func (h *panickyHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *panickyHandler) WithGroup(string) slog.Handler      { return h }

func (h *panickyHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.panics
}

// panickyCallback records each outcome in out, then panics.
type panickyCallback struct{ out *outcomes }

func (c panickyCallback) Success(m Message) {
	c.out.Success(m)
	panic("user bug in Success")
}

func (c panickyCallback) Failure(m Message, err error) {
	c.out.Failure(m, err)
	panic("user bug in Failure")
}

// assertOutcomes checks that each message got exactly one callback: a
// Success for those in ok, a Failure for those in failed.
func (e *env) assertOutcomes(ok, failed []Message) {
	e.t.Helper()
	successes, failures := e.out.ByID()
	for _, m := range ok {
		id := MessageID(m)
		assert.Equal(e.t, 1, successes[id], "Success callbacks for messageId %s", id)
		assert.Zero(e.t, failures[id], "Failure callbacks for messageId %s", id)
	}
	for _, m := range failed {
		id := MessageID(m)
		assert.Zero(e.t, successes[id], "Success callbacks for messageId %s", id)
		assert.Equal(e.t, 1, failures[id], "Failure callbacks for messageId %s", id)
	}
}

// A handler that panics once, on the record of a failed batch, must not
// make the client count the batch twice, give its queue budget back twice
// (InFlight −10, and MaxQueueSize no longer enforced), or call back twice.
func TestLogPanicOnFailureKeepsStatsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := panicsOn("events not delivered", 1)
		// The first batch is refused; the next uploads stall for an hour.
		api := newAPI().Script(analyticstest.Status(400)).Default(analyticstest.Answer{Delay: time.Hour})
		e := newEnv(t, api, WithMaxQueueSize(10), WithFlushAt(10), WithRequestTimeout(2*time.Hour),
			WithLogger(slog.New(h)), WithCloseTimeout(0))
		refused := tracks("a", 10)
		e.enqueue(refused...)
		e.flush()
		assert.Equal(t, 1, h.count(), "panics of the handler")
		st := e.client.Stats()
		assert.Equal(t, int64(10), st.Enqueued, "events enqueued")
		assert.Equal(t, int64(10), st.Failed.Total(), "events failed")
		assert.Equal(t, int64(10), st.Failed.FatalStatus, "events failed with a fatal status")
		assert.Zero(t, st.InFlight, "events in flight")
		assert.Zero(t, st.QueueDepth, "events queued")
		// The bound holds: 10 of 30 events fit while the uploads stall.
		accepted := 0
		for _, m := range tracks("b", 30) {
			err := e.client.Enqueue(m)
			if err == nil {
				accepted++
			} else {
				assert.ErrorIs(t, err, ErrQueueFull, "Enqueue")
			}
		}
		assert.Equal(t, 10, accepted, "events of 30 accepted with MaxQueueSize 10")
		e.close()
		e.assertOutcomes(tracks("b", 10), refused)
		st = e.client.Stats()
		assert.Equal(t, int64(20), st.Enqueued, "events enqueued after Close")
		assert.Equal(t, int64(10), st.Delivered, "events delivered after Close")
		assert.Equal(t, int64(10), st.Failed.Total(), "events failed after Close")
		assert.Zero(t, st.InFlight, "events in flight after Close")
	})
}

// A callback that panics, and a handler that panics on the record of that
// panic: every event still gets exactly one callback, and the events the
// API accepted get Success, never Failure.
func TestLogPanicAfterCallbackPanicCallsBackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := panicsOn("callback panicked", 1)
		out := newOutcomes()
		e := newEnv(t, newAPI(), WithLogger(slog.New(h)), WithCallback(panickyCallback{out}))
		e.out = out
		msgs := tracks("m", 10)
		e.enqueue(msgs...)
		e.close()
		assert.Equal(t, 1, h.count(), "panics of the handler")
		e.assertDeliveredOnce(msgs)
		st := e.client.Stats()
		assert.Equal(t, int64(10), st.Delivered, "events delivered")
		assert.Zero(t, st.Failed.Total(), "events failed")
		assert.Zero(t, st.InFlight, "events in flight")
	})
}

// A handler that panics on every record (a retry's warning, a failed
// batch, a callback's panic, and whatever the SDK logs about those) must
// crash nothing; every event gets exactly one callback.
func TestLogPanicOnEveryRecordCrashesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &panickyHandler{match: func(slog.Record) bool { return true }}
		tries := 0
		api := newAPI().Rule(func(r analyticstest.Request) analyticstest.Answer {
			if strings.HasPrefix(r.MessageIDs()[0], "bad") {
				return analyticstest.Status(400)
			}
			if tries++; tries == 1 {
				return analyticstest.Status(503) // retried
			}
			return analyticstest.Answer{Default: true}
		})
		out := newOutcomes()
		e := newEnv(t, api, WithLogger(slog.New(h)), WithCallback(panickyCallback{out}), withExactBackoff())
		e.out = out
		good, bad := tracks("good", 5), tracks("bad", 5)
		e.enqueue(good...)
		e.flush()
		e.enqueue(bad...)
		e.close()
		e.assertOutcomes(good, bad)
		assert.GreaterOrEqual(t, h.count(), 3, "panics of the handler: a retry, a failure, a callback")
		st := e.client.Stats()
		assert.Equal(t, int64(10), st.Enqueued, "events enqueued")
		assert.Equal(t, int64(5), st.Delivered, "events delivered")
		assert.Equal(t, int64(5), st.Failed.FatalStatus, "events failed with a fatal status")
		assert.Equal(t, int64(1), st.Retries.Backoff, "backoff retries")
		assert.Zero(t, st.InFlight, "events in flight")
	})
}

// The reporting of a batch is safe on its own, whatever the logger: with a
// handler that panics, not shielded by the client's wrapper, the queue
// budget is still given back once, and each event called back once, with
// its own outcome.
func TestBatchReportSurvivesAPanickingLogCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(func(r analyticstest.Request) analyticstest.Answer {
			if strings.HasPrefix(r.MessageIDs()[0], "bad") {
				return analyticstest.Status(400)
			}
			return analyticstest.Answer{Default: true}
		})
		out := newOutcomes()
		e := newEnv(t, api, WithCallback(panickyCallback{out}), WithMaxQueueSize(10), WithFlushAt(5))
		e.out = out
		// Once on a failed batch, and on every callback panic.
		var failedOnce atomic.Bool
		h := &panickyHandler{match: func(r slog.Record) bool {
			switch {
			case strings.Contains(r.Message, "callback panicked"):
				return true
			case strings.Contains(r.Message, "events not delivered"):
				return failedOnce.CompareAndSwap(false, true)
			}
			return false
		}}
		e.client.log, e.client.failLog = slog.New(h), slog.New(h)
		good, bad := tracks("good", 5), tracks("bad", 5)
		e.enqueue(good...)
		e.flush()
		e.enqueue(bad...)
		e.flush()
		// Both batches' budget is back: 10 more fit in MaxQueueSize 10.
		more := tracks("more", 10)
		e.enqueue(more...)
		e.close()
		e.assertOutcomes(append(good, more...), bad)
		assert.Equal(t, 21, h.count(), "panics of the handler: a failed batch, 20 callbacks")
		st := e.client.Stats()
		assert.Equal(t, int64(20), st.Enqueued, "events enqueued")
		assert.Equal(t, int64(15), st.Delivered, "events delivered")
		assert.Equal(t, int64(5), st.Failed.Total(), "events failed")
		assert.Zero(t, st.InFlight, "events in flight")
	})
}

// records decodes a log written by a slog.JSONHandler, one record a line.
func records(t *testing.T, log string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(log) {
		var r map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &r), "log line %q", line)
		out = append(out, r)
	}
	return out
}

// ofLevel returns the records of one level ("WARN", "ERROR").
func ofLevel(recs []map[string]any, level string) []map[string]any {
	var out []map[string]any
	for _, r := range recs {
		if r["level"] == level {
			out = append(out, r)
		}
	}
	return out
}

// jsonLogger logs to logs as JSON, every level.
func jsonLogger(logs *logBuffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// With no WithLogger, a batch the API refuses goes to slog.Default() as an
// error, and a 401 or 403 says to check the write key, without showing it.
func TestNoLoggerReportsFailuresToSlogDefault(t *testing.T) {
	for _, tt := range []struct {
		status  int
		message string
	}{
		{401, "analytics: events not delivered: the tracking API refused the write key (the error says what to check)"},
		{403, "analytics: events not delivered: the tracking API refused the write key (the error says what to check)"},
		{400, "analytics: events not delivered"},
	} {
		t.Run(fmt.Sprint(tt.status), func(t *testing.T) {
			logs := &logBuffer{}
			defer slog.SetDefault(slog.Default())
			slog.SetDefault(jsonLogger(logs))
			// newEnv gives the client a logger of its own; WithLogger(nil)
			// restores the default.
			e := newEnv(t, newAPI().Default(analyticstest.Status(tt.status)), WithLogger(nil))
			e.enqueue(tracks("m", 3)...)
			e.close()
			recs := records(t, logs.String())
			require.Len(t, recs, 1, "records logged through slog.Default():\n%s", logs)
			assert.Equal(t, "ERROR", recs[0]["level"], "the record's level")
			assert.Equal(t, tt.message, recs[0]["msg"], "the record's message")
			assert.EqualValues(t, 3, recs[0]["events"], "the record's events")
			assert.Contains(t, recs[0]["error"], fmt.Sprintf("HTTP %d", tt.status), "the record's error")
			if tt.status != 400 {
				assert.Contains(t, recs[0]["error"], "; check the write key", "the record's error says what to check")
			}
			assert.NotContains(t, logs.String(), testWriteKey, "the log shows the write key")
			assert.Empty(t, e.logs.String(), "the env's own logger, replaced by the default")
		})
	}
}

// WithLogger(slog.New(slog.DiscardHandler)) silences the SDK.
func TestDiscardLoggerSilences(t *testing.T) {
	logs := &logBuffer{}
	defer slog.SetDefault(slog.Default())
	slog.SetDefault(jsonLogger(logs))
	e := newEnv(t, newAPI().Default(analyticstest.Status(401)), WithLogger(slog.New(slog.DiscardHandler)))
	e.enqueue(tracks("m", 3)...)
	e.close()
	assert.Empty(t, logs.String(), "records logged through slog.Default()")
	assert.Empty(t, e.logs.String(), "records logged through the env's logger")
	_, failed := e.out.Calls()
	assert.Equal(t, 3, failed, "Failure callbacks")
}

// Under a long outage a batch retries every half second for five minutes:
// its warnings are throttled (the first few, then one per interval), and
// the ones logged count the ones left out.
func TestAttemptWarningsAreThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const outage = 5 * time.Minute
		logs := &logBuffer{}
		e := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithLogger(jsonLogger(logs)), withExactBackoff(),
			WithRetryCount(1000), WithBackoffBase(time.Second), WithBackoffCap(time.Second))
		e.enqueue(tracks("m", 1)...)
		ctx, cancel := context.WithTimeout(context.Background(), outage)
		defer cancel()
		require.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown")

		retries := int(e.client.Stats().Retries.Backoff)
		require.Greater(t, retries, 500, "retries in the outage, at one per 500 ms")
		recs := records(t, logs.String())
		warnings := ofLevel(recs, "WARN")
		suppressed := 0
		for i, r := range warnings {
			assert.Equal(t, "analytics: upload attempt failed, will retry", r["msg"], "warning %d", i)
			n, _ := r["suppressed"].(float64)
			if i < throttleFirst {
				assert.Zero(t, n, "warning %d, one of the first, suppressed", i)
			}
			suppressed += int(n)
		}
		t.Logf("%d retries: %d warnings logged, %d suppressed", retries, len(warnings), suppressed)
		assert.Greater(t, len(warnings), throttleFirst, "warnings go on during the outage")
		assert.LessOrEqual(t, len(warnings), throttleFirst+int(outage/throttleInterval)+1, "warnings logged")
		// Every retry is accounted for, but for those after the last
		// warning logged, which no later warning counted.
		assert.LessOrEqual(t, len(warnings)+suppressed, retries, "warnings logged and suppressed")
		assert.GreaterOrEqual(t, len(warnings)+suppressed, retries-int(throttleInterval/(500*time.Millisecond)),
			"warnings logged and suppressed")
		failures := ofLevel(recs, "ERROR")
		require.Len(t, failures, 1, "error records: the batch, failed at the deadline")
		assert.Contains(t, failures[0]["error"], ErrShutdown.Error(), "the failure's error")
	})
}

// A wrong write key fails every batch at once: the errors are throttled
// too, and the next one logged counts those left out.
func TestFailureErrorsAreThrottled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		logs := &logBuffer{}
		e := newEnv(t, newAPI().Default(analyticstest.Status(401)), WithLogger(jsonLogger(logs)), WithFlushAt(1))
		e.enqueue(tracks("a", 20)...) // 20 batches of one event
		e.flush()
		errs := ofLevel(records(t, logs.String()), "ERROR")
		require.Len(t, errs, throttleFirst, "error records for 20 failed batches at once")
		time.Sleep(throttleInterval)
		e.enqueue(tracks("b", 1)...)
		e.flush()
		errs = ofLevel(records(t, logs.String()), "ERROR")
		require.Len(t, errs, throttleFirst+1, "error records after the interval")
		assert.EqualValues(t, 20-throttleFirst, errs[throttleFirst]["suppressed"], "suppressed, in the record after them")
		e.close()
		_, failed := e.out.Calls()
		assert.Equal(t, 21, failed, "Failure callbacks: every event, whatever the log")
		assert.EqualValues(t, 21, e.client.Stats().Failed.FatalStatus, "Stats().Failed.FatalStatus")
	})
}

// A 404 (a wrong endpoint path, or at a real gateway a write key whose
// source is disabled) says what to check in the failure's error, which
// the log record carries, with the start of the body, as a 401 or 403
// does; the record's message names the status.
func TestNotFoundSaysWhatToCheck(t *testing.T) {
	logs := &logBuffer{}
	api := newAPI().Default(analyticstest.Answer{Status: 404, Body: "source is disabled"})
	e := newEnv(t, api, WithLogger(jsonLogger(logs)))
	e.enqueue(tracks("m", 2)...)
	e.close()

	const check = "check the endpoint URL and path (batches go to the endpoint + /v1/batch) and that the write key's source is enabled"
	recs := ofLevel(records(t, logs.String()), "ERROR")
	require.Len(t, recs, 1, "error records:\n%s", logs)
	assert.Equal(t, "analytics: events not delivered: the tracking API answered 404 Not Found (the error says what to check)", recs[0]["msg"], "the record's message")
	assert.Contains(t, recs[0]["error"], `HTTP 404 Not Found: "source is disabled"; `+check, "the record's error has the body, and says what to check")

	_, failed := e.out.Calls()
	require.Equal(t, 2, failed, "Failure callbacks")
	err := e.out.Failures()[0].Err
	require.ErrorIs(t, err, ErrFatalStatus)
	assert.Equal(t, `analytics: non-retryable status after 1 attempt: HTTP 404 Not Found: "source is disabled"; `+check, err.Error(), "the failure's error")
	assert.NotContains(t, logs.String(), testWriteKey, "the log shows the write key")

	// A 401's error says what to check too.
	e = newEnv(t, newAPI().Default(analyticstest.Answer{Status: 401, Body: "bad key"}))
	e.enqueue(tracks("k", 1)...)
	e.close()
	require.Len(t, e.out.Failures(), 1, "Failure callbacks")
	assert.Equal(t, `analytics: non-retryable status after 1 attempt: HTTP 401 Unauthorized: "bad key"; check the write key`, e.out.Failures()[0].Err.Error(), "a 401's error")
}
