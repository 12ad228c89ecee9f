package analytics

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

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
		{401, "analytics: events not delivered: the tracking API refused the write key; check the write key"},
		{403, "analytics: events not delivered: the tracking API refused the write key; check the write key"},
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
	_, failed := e.out.counts()
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
		_, failed := e.out.counts()
		assert.Equal(t, 21, failed, "Failure callbacks: every event, whatever the log")
		assert.EqualValues(t, 21, e.client.Stats().Failed.FatalStatus, "Stats().Failed.FatalStatus")
	})
}

// Close waits at most its timeout, 30 s by default; what is left is
// reported failed with ErrShutdown, and Close says so. 0 waits for every
// outcome.
func TestCloseIsBoundedByDefault(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      []Option
		waits     time.Duration
		delivered bool
	}{
		{"default", nil, DefaultCloseTimeout, false},
		{"5s", []Option{WithCloseTimeout(5 * time.Second)}, 5 * time.Second, false},
		{"0", []Option{WithCloseTimeout(0)}, time.Hour, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := newAPI().Default(analyticstest.Answer{Delay: time.Hour})
				e := newEnv(t, api, append(tt.opts, WithRequestTimeout(2*time.Hour))...)
				msgs := tracks("m", 3)
				e.enqueue(msgs...)
				start := time.Now()
				err := e.client.Close()
				assert.Equal(t, tt.waits, time.Since(start), "Close returned after")
				if tt.delivered {
					require.NoError(t, err, "Close")
					e.assertDeliveredOnce(msgs)
					return
				}
				assert.ErrorIs(t, err, ErrShutdown, "Close")
				assert.ErrorIs(t, err, context.DeadlineExceeded, "Close")
				failures := e.out.failed()
				require.Len(t, failures, 3, "Failure callbacks")
				for _, f := range failures {
					assert.ErrorIs(t, f.err, ErrShutdown, "a failure")
					assert.ErrorIs(t, f.err, context.DeadlineExceeded, "a failure")
				}
				assert.EqualValues(t, 3, e.client.Stats().Failed.Shutdown, "Stats().Failed.Shutdown")
			})
		})
	}
}

// As in v3, a second Close returns ErrClosed; Shutdown stays idempotent.
func TestCloseTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI())
		e.enqueue(tracks("m", 2)...)
		require.NoError(t, e.client.Close(), "the first Close")
		assert.ErrorIs(t, e.client.Close(), ErrClosed, "the second Close")
		assert.NoError(t, e.client.Shutdown(context.Background()), "Shutdown after Close")
		e.assertDeliveredOnce(tracks("m", 2))
	})
}

// An endpoint that already ends in /v1/batch is taken as the base: the
// batches go to it, not to .../v1/batch/v1/batch.
func TestEndpointEndingInBatchPathIsNormalised(t *testing.T) {
	for _, tt := range []struct{ endpoint, path string }{
		{"http://tracking.test", "/v1/batch"},
		{"http://tracking.test/", "/v1/batch"},
		{"http://tracking.test/v1/batch", "/v1/batch"},
		{"http://tracking.test/v1/batch/", "/v1/batch"},
		{"http://tracking.test/proxy/v1/batch", "/proxy/v1/batch"},
		{"http://tracking.test/proxy/", "/proxy/v1/batch"},
	} {
		api := newAPI()
		e := newEnv(t, api, WithEndpoint(tt.endpoint))
		e.enqueue(tracks("m", 1)...)
		e.close()
		reqs := api.Requests()
		if assert.Len(t, reqs, 1, "requests for endpoint %s", tt.endpoint) {
			assert.Equal(t, tt.path, reqs[0].Path, "the path requested for endpoint %s", tt.endpoint)
		}
	}
}

// typeOf returns the Type field of any message.
func typeOf(m Message) string {
	switch m := m.(type) {
	case Track:
		return m.Type
	case Identify:
		return m.Type
	case Page:
		return m.Type
	case Screen:
		return m.Type
	case Group:
		return m.Type
	case Alias:
		return m.Type
	}
	return fmt.Sprintf("not a message value: %T", m)
}

// A callback's message carries its Type, whatever the caller set, on
// Success and on Failure.
func TestCallbackMessageCarriesType(t *testing.T) {
	msgs := []Message{
		Track{UserId: "u", Event: "E"},
		Identify{UserId: "u"},
		Page{UserId: "u", Name: "Home"},
		Screen{UserId: "u", Name: "Main"},
		Group{UserId: "u", GroupId: "g"},
		Alias{UserId: "u", PreviousId: "p"},
		&Track{Type: "bogus", UserId: "u", Event: "E"},
	}
	want := []string{"track", "identify", "page", "screen", "group", "alias", "track"}
	for _, status := range []int{200, 400} {
		e := newEnv(t, newAPI().Default(analyticstest.Status(status)))
		e.enqueue(msgs...)
		e.close()
		var got []string
		for _, m := range e.out.successes {
			got = append(got, typeOf(m))
		}
		for _, f := range e.out.failed() {
			got = append(got, typeOf(f.msg))
		}
		assert.Equal(t, want, got, "the Type of each message called back, answered %d", status)
	}
}

// A 404 (a wrong endpoint path, or at a real gateway a write key whose
// source is disabled) says what to check, in the log line and in the
// failure's error, with the start of the body, as a 401 or 403 does.
func TestNotFoundSaysWhatToCheck(t *testing.T) {
	logs := &logBuffer{}
	api := newAPI().Default(analyticstest.Answer{Status: 404, Body: "source is disabled"})
	e := newEnv(t, api, WithLogger(jsonLogger(logs)))
	e.enqueue(tracks("m", 2)...)
	e.close()

	const check = "check the endpoint URL and path (batches go to the endpoint + /v1/batch) and that the write key's source is enabled"
	recs := ofLevel(records(t, logs.String()), "ERROR")
	require.Len(t, recs, 1, "error records:\n%s", logs)
	assert.Equal(t, "analytics: events not delivered: the tracking API answered 404 Not Found; "+check, recs[0]["msg"], "the record's message")
	assert.Contains(t, recs[0]["error"], `HTTP 404 Not Found: "source is disabled"`, "the record's error has the body")

	_, failed := e.out.counts()
	require.Equal(t, 2, failed, "Failure callbacks")
	err := e.out.failures[0].err
	require.ErrorIs(t, err, ErrFatalStatus)
	assert.Equal(t, `analytics: non-retryable status after 1 attempt: HTTP 404 Not Found: "source is disabled"; `+check, err.Error(), "the failure's error")
	assert.NotContains(t, logs.String(), testWriteKey, "the log shows the write key")

	// A 401's error says what to check too.
	e = newEnv(t, newAPI().Default(analyticstest.Answer{Status: 401, Body: "bad key"}))
	e.enqueue(tracks("k", 1)...)
	e.close()
	require.Len(t, e.out.failures, 1, "Failure callbacks")
	assert.Equal(t, `analytics: non-retryable status after 1 attempt: HTTP 401 Unauthorized: "bad key"; check the write key`, e.out.failures[0].err.Error(), "a 401's error")
}
