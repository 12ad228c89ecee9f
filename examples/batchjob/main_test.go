package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// setEnv clears every ANALYTICS_ variable for the test, then sets kv.
func setEnv(t *testing.T, kv ...string) {
	t.Helper()
	for _, e := range os.Environ() {
		if name, _, _ := strings.Cut(e, "="); strings.HasPrefix(name, "ANALYTICS_") {
			t.Setenv(name, "")
		}
	}
	for i := 0; i < len(kv); i += 2 {
		t.Setenv(kv[i], kv[i+1])
	}
}

func runJob(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	return stdout.String() + stderr.String(), err
}

// TestDeliversEverything points the job at the test's own mock through
// ANALYTICS_ENDPOINT and tunes it with ANALYTICS_FLUSH_AT: no rebuild.
func TestDeliversEverything(t *testing.T) {
	mock := analyticstest.New().Script(analyticstest.Status(503), analyticstest.Status(503))
	api, err := mock.Start()
	require.NoError(t, err)
	defer api.Close()
	setEnv(t, "ANALYTICS_ENDPOINT", api.URL, "ANALYTICS_WRITE_KEY", "job-key", "ANALYTICS_FLUSH_AT", "20")

	out, err := runJob(t, "-events", "100")
	require.NoError(t, err, "run; output:\n%s", out)
	assert.Zero(t, exitCode(err, io.Discard), "exit code")
	delivered := mock.Delivered()
	assert.Len(t, delivered, 100, "distinct events the mock received")
	for id, n := range delivered {
		assert.Equal(t, 1, n, "times event %s was delivered", id)
	}
	// FlushAt 20: 5 batches, and the two 503s cost two retries.
	assert.Len(t, mock.Requests(), 7, "requests: 5 batches of 20, 2 retries")
	assert.NotContains(t, out, "job-key", "the output shows the write key")
	for _, want := range []string{
		"environment:    ANALYTICS_ENDPOINT=" + api.URL + " ANALYTICS_FLUSH_AT=20\n",
		"delivered:      100 of 100 events",
	} {
		assert.Contains(t, out, want, "output")
	}
}

// TestWaitsForRoomInAFullQueue: a queue of 20 events, 200 events recorded
// as fast as the loop goes: the job waits for room (EnqueueContext) instead
// of refusing, and delivers every event once.
func TestWaitsForRoomInAFullQueue(t *testing.T) {
	mock := analyticstest.New().Script(analyticstest.Status(503))
	api, err := mock.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	setEnv(t, "ANALYTICS_ENDPOINT", api.URL, "ANALYTICS_WRITE_KEY", "job-key",
		"ANALYTICS_FLUSH_AT", "10", "ANALYTICS_MAX_QUEUE_SIZE", "20")
	out, err := runJob(t, "-events", "200")
	if err != nil {
		t.Fatalf("run = %v; output:\n%s", err, out)
	}
	delivered := mock.Delivered()
	if len(delivered) != 200 {
		t.Errorf("the mock received %d distinct events, want 200; output:\n%s", len(delivered), out)
	}
	for id, n := range delivered {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	if !strings.Contains(out, "delivered:      200 of 200 events") {
		t.Errorf("output lacks the delivery line:\n%s", out)
	}
}

// TestFailedEventsExitNonZero: without retries, the two 503s fail two
// batches; the job must say so and exit 1.
func TestFailedEventsExitNonZero(t *testing.T) {
	setEnv(t, "ANALYTICS_RETRY_COUNT", "0", "ANALYTICS_FLUSH_AT", "10")
	out, err := runJob(t, "-events", "50", "-fail-first", "2")
	require.Error(t, err, "run with failed events; output:\n%s", out)
	assert.Equal(t, 1, exitCode(err, io.Discard), "exit code")
	for _, want := range []string{
		"delivered:      30 of 50 events",
		"failed:         20 (retries exhausted: 20)",
	} {
		assert.Contains(t, out, want, "output")
	}
}

// TestShutdownDeadline: the API never recovers; the exit waits no longer
// than -shutdown-timeout and reports the events as failed.
func TestShutdownDeadline(t *testing.T) {
	setEnv(t)
	out, err := runJob(t, "-events", "30", "-fail-first", "1000", "-shutdown-timeout", "300ms")
	require.ErrorIs(t, err, context.DeadlineExceeded, "run; output:\n%s", out)
	assert.Equal(t, 1, exitCode(err, io.Discard), "exit code")
	assert.Contains(t, out, "failed:         30 (shutdown deadline: 30)", "output: 30 events failed at the deadline")
}

func TestMalformedEnvironment(t *testing.T) {
	setEnv(t, "ANALYTICS_FLUSH_AT", "many")
	_, err := runJob(t)
	assert.ErrorContains(t, err, "ANALYTICS_FLUSH_AT", "run with ANALYTICS_FLUSH_AT=many")
}

func TestExitCodeOfFlags(t *testing.T) {
	setEnv(t)
	_, err := runJob(t, "-h")
	assert.ErrorIs(t, err, flag.ErrHelp, "-h")
	assert.Zero(t, exitCode(err, io.Discard), "-h: exit code")
	_, err = runJob(t, "-events", "many")
	assert.Equal(t, 2, exitCode(err, io.Discard), "-events many: exit code")
}
