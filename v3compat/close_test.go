package analytics

// Close as v3's: each queued batch gets one last attempt, retries stop,
// what fails goes to Callback.Failure at once, and Close returns.

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

// details is a FailureDetail that records v3's error and the root's.
type details struct {
	outcomes
	mu      sync.Mutex
	batches []*root.BatchError
}

func (d *details) FailureDetail(m Message, err error, batch *root.BatchError) {
	d.outcomes.Failure(m, err)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.batches = append(d.batches, batch)
}

func (d *details) all() []*root.BatchError {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]*root.BatchError(nil), d.batches...)
}

// refusedPort returns the address of a port on 127.0.0.1 that nothing
// listens on any more.
func refusedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	return addr
}

// TestCloseAgainstARefusedPortMakesOneAttempt: against a refused port,
// each batch gets one attempt and no retry is waited for: every event is
// reported after one attempt, with the *url.Error of the refused
// connection.
func TestCloseAgainstARefusedPortMakesOneAttempt(t *testing.T) {
	out := &details{}
	c, err := NewWithConfig(testWriteKey, Config{Endpoint: "http://" + refusedPort(t), BatchSize: 2,
		Callback: out, Logger: &lines{}})
	require.NoError(t, err)
	for range 5 {
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	}
	require.NoError(t, c.Close())
	ok, failed := out.counts()
	assert.Zero(t, ok)
	require.Equal(t, 5, failed)
	for i, e := range out.failures {
		var ue *url.Error
		require.True(t, errors.As(e, &ue), "failure %d: want a *url.Error, got %T %v", i, e, e)
		assert.Same(t, ue, e, "failure %d: the *url.Error itself", i)
		assert.ErrorIs(t, e, syscall.ECONNREFUSED, "failure %d", i)
	}
	for i, b := range out.all() {
		require.NotNil(t, b, "failure %d", i)
		// A batch cut before Close may have failed once and waited to
		// retry; either way it made one attempt and waited for no retry.
		assert.Equal(t, 1, b.Attempts, "failure %d: attempts", i)
	}
}

// hangingTransport never answers: each request ends when its context does.
type hangingTransport struct{}

func (hangingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	<-r.Context().Done()
	return nil, r.Context().Err()
}

// TestCloseAgainstASilentAPIReturnsWithinTheRequestTimeout: against an API
// that never answers, Close returns once the last attempt's request
// timeout (10 s) ends, and the event fails with the *url.Error of the
// timeout.
func TestCloseAgainstASilentAPIReturnsWithinTheRequestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &outcomes{}
		c, err := NewWithConfig(testWriteKey, Config{Transport: hangingTransport{}, Callback: out, Logger: &lines{}})
		require.NoError(t, err)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		start := time.Now()
		require.NoError(t, c.Close())
		assert.Equal(t, 10*time.Second, time.Since(start), "Close: the last attempt's request timeout")
		_, failed := out.counts()
		require.Equal(t, 1, failed)
		var ue *url.Error
		require.ErrorAs(t, out.failures[0], &ue)
		assert.True(t, ue.Timeout(), "%v", ue)
		assert.ErrorIs(t, ue, context.DeadlineExceeded)
	})
}

// TestCloseTimeoutWaitsForRetries: Config.CloseTimeout makes Close let a
// failing batch retry, up to that long.
func TestCloseTimeoutWaitsForRetries(t *testing.T) {
	for _, tt := range []struct {
		name     string
		timeout  time.Duration
		attempts int // at least
	}{
		{"v3's close: one attempt", 0, 1},
		{"CloseTimeout 1m: retries", time.Minute, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := analyticstest.New().Rule(func(analyticstest.Request) analyticstest.Answer {
					return analyticstest.Status(503)
				})
				c, _, _ := newTestClient(t, api, Config{CloseTimeout: tt.timeout})
				require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
				start := time.Now()
				_ = c.Close() // CloseTimeout ending is Close's error
				if tt.timeout == 0 {
					assert.Len(t, api.Requests(), 1, "requests")
					assert.Zero(t, time.Since(start), "Close waited")
					return
				}
				assert.GreaterOrEqual(t, len(api.Requests()), tt.attempts, "requests")
				assert.LessOrEqual(t, time.Since(start), tt.timeout, "Close waited past CloseTimeout")
			})
		})
	}
}
