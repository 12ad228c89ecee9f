package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/e2e/mockapi"
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
	mock := mockapi.New().Script(mockapi.Status(503), mockapi.Status(503))
	api, err := mock.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer api.Close()
	setEnv(t, "ANALYTICS_ENDPOINT", api.URL, "ANALYTICS_WRITE_KEY", "job-key", "ANALYTICS_FLUSH_AT", "20")

	out, err := runJob(t, "-events", "100")
	if err != nil {
		t.Fatalf("run = %v; output:\n%s", err, out)
	}
	if code := exitCode(err, io.Discard); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	delivered := mock.Delivered()
	if len(delivered) != 100 {
		t.Errorf("the mock received %d distinct events, want 100", len(delivered))
	}
	for id, n := range delivered {
		if n != 1 {
			t.Errorf("event %s delivered %d times", id, n)
		}
	}
	// FlushAt 20: 5 batches, and the two 503s cost two retries.
	if got := len(mock.Requests()); got != 7 {
		t.Errorf("%d requests, want 7 (5 batches of 20, 2 retries)", got)
	}
	if strings.Contains(out, "job-key") {
		t.Errorf("the write key appears in the output:\n%s", out)
	}
	for _, want := range []string{
		"environment:    ANALYTICS_ENDPOINT=" + api.URL + " ANALYTICS_FLUSH_AT=20\n",
		"delivered:      100 of 100 events",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestWaitsForRoomInAFullQueue: a queue of 20 events, 200 events recorded
// as fast as the loop goes: the job waits for room (EnqueueContext) instead
// of refusing, and delivers every event once.
func TestWaitsForRoomInAFullQueue(t *testing.T) {
	mock := mockapi.New().Script(mockapi.Status(503))
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
	if err == nil {
		t.Fatalf("run = nil with failed events; output:\n%s", out)
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	for _, want := range []string{
		"delivered:      30 of 50 events",
		"failed:         20 (retries exhausted: 20)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestShutdownDeadline: the API never recovers; the exit waits no longer
// than -shutdown-timeout and reports the events as failed.
func TestShutdownDeadline(t *testing.T) {
	setEnv(t)
	out, err := runJob(t, "-events", "30", "-fail-first", "1000", "-shutdown-timeout", "300ms")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run = %v, want context.DeadlineExceeded; output:\n%s", err, out)
	}
	if code := exitCode(err, io.Discard); code != 1 {
		t.Errorf("exit code %d, want 1", code)
	}
	if !strings.Contains(out, "failed:         30 (shutdown deadline: 30)") {
		t.Errorf("output does not report 30 events failed at the deadline:\n%s", out)
	}
}

func TestMalformedEnvironment(t *testing.T) {
	setEnv(t, "ANALYTICS_FLUSH_AT", "many")
	if _, err := runJob(t); err == nil || !strings.Contains(err.Error(), "ANALYTICS_FLUSH_AT") {
		t.Errorf("run with ANALYTICS_FLUSH_AT=many = %v, want an error naming the variable", err)
	}
}

func TestExitCodeOfFlags(t *testing.T) {
	setEnv(t)
	_, err := runJob(t, "-h")
	if !errors.Is(err, flag.ErrHelp) || exitCode(err, io.Discard) != 0 {
		t.Errorf("-h: %v, exit code %d; want flag.ErrHelp and 0", err, exitCode(err, io.Discard))
	}
	_, err = runJob(t, "-events", "many")
	if code := exitCode(err, io.Discard); code != 2 {
		t.Errorf("-events many: exit code %d, want 2", code)
	}
}
