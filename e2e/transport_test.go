package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

func TestConnectionFaultsAreRetried(t *testing.T) {
	t.Parallel()
	faults := map[string]analyticstest.Answer{
		"dropped after reading":   {Drop: true},
		"closed before reading":   {CloseBeforeRead: true},
		"partial response":        {Partial: true},
		"slower than the timeout": {Delay: 5 * time.Second},
	}
	for name, fault := range faults {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			api := analyticstest.New().Script(fault, fault)
			watch := watchMock(api)
			url := startMock(t, api)
			runCLI(t, url, fast("timeout", 0.5), tracks("m", 4)...).expect(t, true, 4, 0)
			// A delayed fault is recorded once the mock notices that the
			// client hung up.
			watch.waitRecorded(t, 3)
			reqs := requests(t, api, 3)
			for i, r := range reqs[:2] {
				assert.Zero(t, r.Status, "fault %d was answered", i+1)
			}
			assert.Equal(t, "2", reqs[2].Header.Get("X-Retry-Count"), "the delivering attempt")
			assert.Equal(t, 1, api.Delivered()["m-3"], "m-3 delivered")
		})
	}
}

func TestRefusedPortIsRetried(t *testing.T) {
	t.Parallel()
	r := runCLI(t, closedPort(t), fast("maxRetries", 2), tracks("m", 2)...)
	r.expect(t, false, 0, 2)
	r.expectError(t, "retries exhausted after 3 attempts")
	r.expectError(t, "not written")
}

func TestPerRequestTimeoutIsHonoured(t *testing.T) {
	t.Parallel()
	// The mock would answer 200 after 10 s: the failure itself shows that
	// each attempt gave up sooner.
	api := analyticstest.New().Default(analyticstest.Answer{Delay: 10 * time.Second})
	watch := watchMock(api)
	url := startMock(t, api)
	r := runCLI(t, url, fast("timeout", 0.3, "maxRetries", 1), tracks("m", 1)...)
	r.expect(t, false, 0, 1)
	r.expectError(t, "retries exhausted after 2 attempts")
	r.expectError(t, "request written, no response")
	r.expectError(t, context.DeadlineExceeded.Error())
	// The mock records each request once it notices that the client hung
	// up, which may be after the CLI has exited.
	watch.waitRecorded(t, 2)
	reqs := requests(t, api, 2)
	for i, req := range reqs {
		assert.Zero(t, req.Status, "request %d was answered: the client did not hang up first", i+1)
	}
	assert.Equal(t, "", reqs[0].Header.Get("X-Retry-Count"))
	assert.Equal(t, "1", reqs[1].Header.Get("X-Retry-Count"))
	// The SDK retried the timed-out attempt on the backoff path.
	retries := r.retries(t)
	require.Len(t, retries, 1)
	assert.Equal(t, 1, retries[0].Attempt)
	assert.Equal(t, "backoff", retries[0].Path)
	// Measured from before the CLI started to after it exited, the run
	// holds both attempts, one after the other, each of which ran 300 ms on
	// the client's clock before it gave up. (The gap between the two
	// arrivals is not that: the first is stamped after the client started
	// its attempt's clock.)
	assert.GreaterOrEqual(t, r.elapsed, 600*time.Millisecond, "the whole run")
}
