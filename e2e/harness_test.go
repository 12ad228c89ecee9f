// Package e2e is the SDK's black-box conformance suite: each test starts the
// mock tracking API (analyticstest) on 127.0.0.1, runs the conformance CLI
// (e2e/cli, built once) against it with a JSON input, and checks what the
// server received and what the CLI reported.
//
// Timing: every bound must hold on a loaded 2-core machine, so no test
// takes the gap between two arrivals at the mock for the client's wait: the
// first arrival may be stamped late, after the client started its clock.
// What the client did is checked instead: the path and the wait of each
// retry as the SDK logs them on the CLI's stderr, the timestamps it gives
// events at Enqueue, X-Retry-Count, the counts. A wait is checked as
// honoured only from a moment certainly before the client started it to
// one certainly after it ended: from the mock beginning to write the answer
// that asked for it to the retry's arrival (one process, one monotonic
// clock), or from before the CLI starts to after it exits. Nor is the
// order in which the mock recorded requests taken for the client's: a
// batch's attempts are read by X-Retry-Count, and a test waits for the mock
// to record a request whose client hung up. There are no upper bounds on
// time but the 60 s limits that end a hang.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
)

// cliPath is the CLI binary built by TestMain.
var cliPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "e2e-cli")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	cliPath = filepath.Join(dir, "e2e-cli")
	args := []string{"build", "-o", cliPath}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, "./cli")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the CLI:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	// goleak: no goroutine of the suite (mock servers, CLI pipes) is left.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		os.RemoveAll(dir)
		os.Exit(code)
	}))
}

const writeKey = "e2e-write-key"

// event is one input event: the Segment fields, as JSON.
type event map[string]any

type sequence struct {
	DelayMs int     `json:"delayMs"`
	Events  []event `json:"events"`
}

// input is the CLI's --input.
type input struct {
	WriteKey  string         `json:"writeKey"`
	APIHost   string         `json:"apiHost"`
	Sequences []sequence     `json:"sequences"`
	Config    map[string]any `json:"config"`
}

// result is the CLI's one line of output.
type result struct {
	Success     bool     `json:"success"`
	SentBatches int      `json:"sentBatches"`
	Delivered   int      `json:"delivered"`
	Failed      int      `json:"failed"`
	Errors      []string `json:"errors"`
	Error       *string  `json:"error"` // null on success
}

// run is one CLI run: its parsed output, exit code, stderr and duration.
type run struct {
	result
	code    int
	stderr  string
	elapsed time.Duration
}

// fast is the config of tests that do not time the backoff path: tiny
// backoff waits so a retry costs milliseconds.
func fast(extra ...any) map[string]any {
	c := map[string]any{"backoffBase": 10, "backoffCap": 100, "flushInterval": 200}
	for i := 0; i+1 < len(extra); i += 2 {
		c[extra[i].(string)] = extra[i+1]
	}
	return c
}

// tracks returns n valid track events with messageIds prefix-0 ...
func tracks(prefix string, n int) []event {
	evs := make([]event, n)
	for i := range evs {
		evs[i] = event{"type": "track", "userId": "u", "event": "E", "messageId": fmt.Sprintf("%s-%d", prefix, i)}
	}
	return evs
}

// startMock starts api on 127.0.0.1 for the test's lifetime.
func startMock(t *testing.T, api *analyticstest.Server) string {
	t.Helper()
	l, err := api.Start()
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l.URL
}

// runCLI runs the CLI with in (events in one sequence unless in has
// sequences) against url, under a timeout.
func runCLI(t *testing.T, url string, cfg map[string]any, events ...event) run {
	t.Helper()
	return runInput(t, input{WriteKey: writeKey, APIHost: url, Sequences: []sequence{{Events: events}}, Config: cfg})
}

func runInput(t *testing.T, in input) run {
	t.Helper()
	raw, err := json.Marshal(in)
	require.NoError(t, err)
	return runRaw(t, string(raw))
}

func runRaw(t *testing.T, in string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, cliPath, "--input", "-")
	cmd.Stdin = strings.NewReader(in)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := run{stderr: stderr.String(), elapsed: time.Since(start)}
	require.NoError(t, ctx.Err(), "the CLI did not end within 60s; stderr:\n%s", r.stderr)
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		r.code = exit.ExitCode()
	} else {
		require.NoError(t, err, "running the CLI")
	}
	out := stdout.String()
	require.Equal(t, 1, strings.Count(out, "\n"), "stdout is not one line:\n%s\nstderr:\n%s", out, r.stderr)
	require.True(t, strings.HasSuffix(out, "\n"), "stdout does not end its line:\n%s", out)
	require.NoError(t, json.Unmarshal([]byte(out), &r.result), "stdout is not the result JSON:\n%s", out)
	require.Equal(t, r.code == 0, r.Success, "exit code %d with success %v", r.code, r.Success)
	require.Equal(t, r.Success, r.Error == nil, "error %s with success %v: want null exactly on success", out, r.Success)
	require.NotContains(t, out, writeKey, "the write key appears on the CLI's stdout")
	require.NotContains(t, r.stderr, writeKey, "the write key appears on the CLI's stderr")
	return r
}

// expect checks the CLI's verdict and counts.
func (r run) expect(t *testing.T, success bool, delivered, failed int) {
	t.Helper()
	require.Equal(t, success, r.Success, "success; errors %q; stderr:\n%s", r.Errors, r.stderr)
	require.Equal(t, delivered, r.Delivered, "events delivered; errors %q; stderr:\n%s", r.Errors, r.stderr)
	require.Equal(t, failed, r.Failed, "events failed; errors %q; stderr:\n%s", r.Errors, r.stderr)
}

// expectError checks that one of the reported errors contains want.
func (r run) expectError(t *testing.T, want string) {
	t.Helper()
	mentions := func(e string) bool { return strings.Contains(e, want) }
	require.True(t, slices.ContainsFunc(r.Errors, mentions), "errors %q do not mention %q", r.Errors, want)
}

// requests returns what the mock received, failing the test unless there
// were exactly n, in the client's order: by X-Retry-Count (a stable sort,
// so batches keep the mock's order otherwise). The mock's own order is not
// the client's: it records a request whose client gave up (a timeout) only
// once it notices, which on a loaded machine may be after the retry.
func requests(t *testing.T, api *analyticstest.Server, n int) []analyticstest.Request {
	t.Helper()
	reqs := api.Requests()
	slices.SortStableFunc(reqs, func(a, b analyticstest.Request) int {
		return retryCount(t, a) - retryCount(t, b)
	})
	var statuses []int
	for _, r := range reqs {
		statuses = append(statuses, r.Status)
	}
	// The number, not Len: a failure would print every body.
	require.Equal(t, n, len(reqs), "requests (statuses %v)", statuses)
	return reqs
}

// retryCount is the X-Retry-Count of r: 0 on a first attempt, which has
// none.
func retryCount(t *testing.T, r analyticstest.Request) int {
	t.Helper()
	h := r.Header.Get("X-Retry-Count")
	if h == "" {
		return 0
	}
	n, err := strconv.Atoi(h)
	require.NoError(t, err, "X-Retry-Count %q", h)
	return n
}

// retryRecord is one "will retry" record that the SDK logged on the CLI's
// stderr: its own account of a failed attempt and of the wait it chose.
type retryRecord struct {
	Attempt int
	Path    string // "backoff" or "rate-limit"
	Wait    time.Duration
}

var retryLine = regexp.MustCompile(`msg="analytics: upload attempt failed, will retry" attempt=(\d+) events=\d+ path=(\S+) wait=(\S+) `)

// retries returns the SDK's "will retry" records, in the order logged.
func (r run) retries(t *testing.T) []retryRecord {
	t.Helper()
	var out []retryRecord
	for _, m := range retryLine.FindAllStringSubmatch(r.stderr, -1) {
		attempt, err := strconv.Atoi(m[1])
		require.NoError(t, err, "attempt in %q", m[0])
		wait, err := time.ParseDuration(m[3])
		require.NoError(t, err, "wait in %q", m[0])
		out = append(out, retryRecord{Attempt: attempt, Path: m[2], Wait: wait})
	}
	return out
}

// watcher follows the mock as it records requests. It keeps, for each,
// the moment on the mock's own clock when it was about to write the answer
// (OnRequest runs just before): the client cannot have had the answer, and
// so cannot have started the wait it asks for, before that moment. And it
// lets a test wait for a request that the mock records only once it notices
// that the client hung up (an Answer with a Delay), which may be after the
// CLI has exited.
type watcher struct {
	mu      sync.Mutex
	stamps  []answerStamp
	changed chan struct{} // closed and replaced on each record
}

type answerStamp struct {
	arrived   time.Time // the request's At
	answering time.Time
}

// watchMock starts a watcher on api; call it before the CLI runs.
func watchMock(api *analyticstest.Server) *watcher {
	w := &watcher{changed: make(chan struct{})}
	api.OnRequest(func(r analyticstest.Request) {
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		w.stamps = append(w.stamps, answerStamp{arrived: r.At, answering: now})
		close(w.changed)
		w.changed = make(chan struct{})
	})
	return w
}

// answering returns when the mock was about to answer req.
func (w *watcher) answering(t *testing.T, req analyticstest.Request) time.Time {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, s := range w.stamps {
		if s.arrived.Equal(req.At) {
			return s.answering
		}
	}
	require.Failf(t, "no answer stamped", "request at %v", req.At)
	return time.Time{}
}

// waitRecorded returns once the mock has recorded n requests. It waits for
// the mock, not for time; the 60 s limit only ends a hang.
func (w *watcher) waitRecorded(t *testing.T, n int) {
	t.Helper()
	guard := time.NewTimer(60 * time.Second)
	defer guard.Stop()
	for {
		w.mu.Lock()
		got, changed := len(w.stamps), w.changed
		w.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-guard.C:
			require.Failf(t, "the mock did not record the requests", "%d recorded within 60s, want %d", got, n)
		}
	}
}

// honoured checks that retry did not arrive before the mock's own clock
// allowed it: wait after the mock began to answer prev. Both moments are
// the mock's (one process, one monotonic clock), the first certainly before
// the client started waiting and the second certainly after it finished,
// so load can only make the gap longer.
func honoured(t *testing.T, what string, w *watcher, prev, retry analyticstest.Request, wait time.Duration) {
	t.Helper()
	got := retry.At.Sub(w.answering(t, prev))
	assert.GreaterOrEqual(t, got, wait, "%s: the retry arrived %v after the answer that asked for a wait of %v", what, got, wait)
}

// clientStamp returns the timestamp that the SDK gave an event at Enqueue
// (the tests leave it empty), as received: UTC, millisecond precision.
func clientStamp(t *testing.T, e map[string]any) time.Time {
	t.Helper()
	s, ok := e["timestamp"].(string)
	require.True(t, ok, "event %v has no timestamp", e["messageId"])
	ts, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return ts
}

// batchOf returns the one request that carried exactly ids.
func batchOf(t *testing.T, reqs []analyticstest.Request, ids ...string) analyticstest.Request {
	t.Helper()
	var found []analyticstest.Request
	for _, r := range reqs {
		if slices.Equal(r.MessageIDs(), ids) {
			found = append(found, r)
		}
	}
	require.Len(t, found, 1, "requests carrying exactly %v", ids)
	return found[0]
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
