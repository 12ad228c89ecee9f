// Package e2e is the SDK's black-box conformance suite: each test starts the
// mock tracking API (e2e/mockapi) on 127.0.0.1, runs the conformance CLI
// (e2e/cli, built once) against it with a JSON input, and checks what the
// server received and what the CLI reported.
//
// Timing checks are strict at the bottom (a wait the SDK must honour) and
// generous at the top (a shared 2-core machine may be slow), so they never
// flake.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
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
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
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
func startMock(t *testing.T, api *mockapi.Server) string {
	t.Helper()
	l, err := api.Start()
	if err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatal(err)
	}
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
	if ctx.Err() != nil {
		t.Fatalf("the CLI did not end within 60s; stderr:\n%s", r.stderr)
	}
	if exit, ok := err.(*exec.ExitError); ok {
		r.code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("running the CLI: %v", err)
	}
	out := stdout.String()
	if strings.Count(out, "\n") != 1 || !strings.HasSuffix(out, "\n") {
		t.Fatalf("stdout is not exactly one line:\n%s\nstderr:\n%s", out, r.stderr)
	}
	if err := json.Unmarshal([]byte(out), &r.result); err != nil {
		t.Fatalf("stdout is not the result JSON: %v\n%s", err, out)
	}
	if (r.code == 0) != r.Success {
		t.Fatalf("exit code %d with success %v", r.code, r.Success)
	}
	if (r.Error == nil) != r.Success {
		t.Fatalf("error %s with success %v: want null exactly on success", out, r.Success)
	}
	if strings.Contains(out+r.stderr, writeKey) {
		t.Fatalf("the write key appears in the CLI's output")
	}
	return r
}

// expect checks the CLI's verdict and counts.
func (r run) expect(t *testing.T, success bool, delivered, failed int) {
	t.Helper()
	if r.Success != success || r.Delivered != delivered || r.Failed != failed {
		t.Fatalf("result %+v (exit %d), want success %v, %d delivered, %d failed; stderr:\n%s",
			r.result, r.code, success, delivered, failed, r.stderr)
	}
}

// expectError checks that one of the reported errors contains want.
func (r run) expectError(t *testing.T, want string) {
	t.Helper()
	for _, e := range r.Errors {
		if strings.Contains(e, want) {
			return
		}
	}
	t.Fatalf("errors %q do not mention %q", r.Errors, want)
}

// requests returns what the mock received, failing the test unless there
// were exactly n.
func requests(t *testing.T, api *mockapi.Server, n int) []mockapi.Request {
	t.Helper()
	reqs := api.Requests()
	if len(reqs) != n {
		var statuses []int
		for _, r := range reqs {
			statuses = append(statuses, r.Status)
		}
		t.Fatalf("%d requests (statuses %v), want %d", len(reqs), statuses, n)
	}
	return reqs
}

// gap is the time between two requests' arrivals.
func gap(a, b mockapi.Request) time.Duration { return b.At.Sub(a.At) }

// within checks strict-at-the-bottom, generous-at-the-top timing.
func within(t *testing.T, what string, got, atLeast, atMost time.Duration) {
	t.Helper()
	if got < atLeast || got > atMost {
		t.Fatalf("%s took %v, want at least %v (and at most %v)", what, got, atLeast, atMost)
	}
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
