package analytics

import (
	"encoding/json"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// The uploader's counters are members of Stats' JSON itself, under the
// names of their tags, as they were before Stats embedded UploadStats; no
// member holds them as an object.
func TestStatsJSONHasTheUploadersCounters(t *testing.T) {
	b, err := json.Marshal(Stats{})
	require.NoError(t, err, "Marshal")
	var object map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &object), "Unmarshal")
	members := slices.Sorted(maps.Keys(object))
	for _, f := range reflect.VisibleFields(reflect.TypeFor[UploadStats]()) {
		assert.Contains(t, members, f.Tag.Get("json"), "Stats' JSON: UploadStats.%s", f.Name)
	}
	assert.Len(t, members, 23, "Stats' JSON members: %v", members)
}

// Stats reports the queue's bounds and what counts against them: the
// events queued and in flight, and their bytes, those of a batch being
// uploaded included (QueueBytes counts the queued ones only).
func TestStatsQueueBounds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Answer{Delay: time.Minute})
		e := newEnv(t, api, WithCallback(nil), WithFlushAt(2), WithMaxQueueSize(7), WithMaxQueueBytes(1<<20))
		e.enqueue(tracks("q-", 3)...) // a batch of two in flight, one queued
		synctest.Wait()
		st := e.client.Stats()
		assert.Equal(t, 7, st.QueueMaxSize, "QueueMaxSize")
		assert.Equal(t, 1<<20, st.QueueMaxBytes, "QueueMaxBytes")
		require.Equal(t, 1, st.QueueDepth, "QueueDepth")
		require.Equal(t, int64(2), st.InFlight, "InFlight")
		require.NotZero(t, st.QueueBytes, "QueueBytes")
		assert.Equal(t, 3*st.QueueBytes, st.QueueHeldBytes, "QueueHeldBytes: three events of the same size, without a Callback to keep them")
		e.flush()
		assert.Zero(t, e.client.Stats().QueueHeldBytes, "QueueHeldBytes once everything is delivered")
		e.close()
	})
}

// Without WithSpool, the spool's bound is zero with the rest of
// Stats.Spool.
func TestStatsSpoolBoundOff(t *testing.T) {
	e := newEnv(t, newAPI())
	defer e.close()
	assert.Zero(t, e.client.Stats().Spool.MaxBytes, "Spool.MaxBytes without a spool")
}

// Once a shutdown cut short has returned, the queue holds nothing and
// nothing counts against its bounds: without a spool what was queued has
// failed, with one it is left in the spool (Spool.Left) for the next New.
func TestStatsQueueEmptyAfterShutdownCutShort(t *testing.T) {
	for _, spooled := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "spool"}[spooled], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := []Option{WithFlushAt(100)}
				if spooled {
					opts = append(opts, WithSpool(t.TempDir()))
				}
				e := newEnv(t, newAPI(), opts...)
				e.enqueue(tracks("cut-", 5)...) // under FlushAt: all five stay queued
				synctest.Wait()
				require.Equal(t, 5, e.client.Stats().QueueDepth, "QueueDepth before the shutdown")
				cutShort(t, e.client)
				st := e.client.Stats()
				assert.Zero(t, st.QueueDepth, "QueueDepth after the shutdown")
				assert.Zero(t, st.QueueBytes, "QueueBytes after the shutdown")
				assert.Zero(t, st.InFlight, "InFlight after the shutdown")
				assert.Zero(t, st.QueueHeldBytes, "QueueHeldBytes after the shutdown")
				if spooled {
					assert.Equal(t, int64(5), st.Spool.Left, "Spool.Left: the queued events stay in the spool")
				} else {
					assert.Equal(t, int64(5), st.Failed.Shutdown, "Failed.Shutdown: the queued events fail")
				}
			})
		})
	}
}

// Stats.Failed counts each failed event under the reason its error wraps,
// one reason per path a batch can fail by (SPEC §5, §8).
func TestStatsFailedByReason(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer analyticstest.Answer
		opts   []Option
		want   FailedStats
	}{
		{"retries exhausted", analyticstest.Status(503), []Option{WithRetryCount(0)},
			FailedStats{RetriesExhausted: 2}},
		{"backoff budget", analyticstest.Status(503), []Option{WithMaxTotalBackoffDuration(0)},
			FailedStats{BackoffBudgetExceeded: 2}},
		{"rate-limit budget", analyticstest.RetryAfter(429, "60"), []Option{WithMaxRateLimitDuration(time.Second)},
			FailedStats{RateLimitBudgetExceeded: 2}},
		{"fatal status", analyticstest.Status(400), nil,
			FailedStats{FatalStatus: 2}},
		{"redirect", analyticstest.Answer{Status: 301, Header: http.Header{"Location": {"http://elsewhere.test/v1/batch"}}}, nil,
			FailedStats{Redirect: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, newAPI().Default(tc.answer), append([]Option{WithFlushAt(2)}, tc.opts...)...)
				e.enqueue(tracks("f-", 2)...)
				e.flush()
				e.close()
				st := e.client.Stats()
				assert.Equal(t, tc.want, st.Failed, "Stats.Failed")
				assert.Zero(t, st.Delivered, "Delivered")
			})
		})
	}
}

// With WithSpool and WithCloseRetries(false), a batch waiting to retry
// when Close begins has no outcome yet: it stays in the spool for the next
// New (Spool.Left), not failed with ErrRetriesStopped (SPEC §8, §11.4).
func TestStatsSpoolKeepsWhatCloseRetriesStopped(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir), WithCloseRetries(false), WithFlushAt(2))
		e.enqueue(tracks("rs-", 2)...)
		synctest.Wait() // the first attempt failed; the batch waits to retry
		require.Equal(t, int64(1), e.client.Stats().Attempts, "attempts before Close")
		e.close()
		st := e.client.Stats()
		assert.Equal(t, FailedStats{}, st.Failed, "Stats.Failed: nothing failed")
		assert.Equal(t, int64(2), st.Spool.Left, "Spool.Left: the batch stays in the spool")
		assert.Empty(t, e.out.Failures(), "failure callbacks")
	})
}
