package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startMock serves a mock tracking API on 127.0.0.1 until the test ends.
func startMock(t *testing.T) (*analyticstest.Server, *analyticstest.Listener) {
	t.Helper()
	mock := analyticstest.New()
	ln, err := mock.Start()
	require.NoError(t, err)
	t.Cleanup(func() { ln.Close() })
	return mock, ln
}

// delivered returns the events the mock accepted, and fails the test if
// any was accepted twice.
func delivered(t *testing.T, mock *analyticstest.Server) []map[string]any {
	t.Helper()
	var events []map[string]any
	seen := map[string]bool{}
	for _, r := range mock.Requests() {
		if r.Status != http.StatusOK {
			continue
		}
		for _, e := range r.Events {
			id, _ := e["messageId"].(string)
			assert.False(t, seen[id], "messageId %s delivered twice", id)
			seen[id] = true
			events = append(events, e)
		}
	}
	return events
}

func TestRequestsMode(t *testing.T) {
	mock, ln := startMock(t)
	var out testsupport.Buffer
	args := []string{"-requests", "25", "-endpoint", ln.URL, "-write-key", "test-key"}
	require.NoError(t, run(context.Background(), args, &out), "run(%q); output:\n%s", args, &out)

	events := delivered(t, mock)
	require.Len(t, events, 25, "events the mock received, one per request; output:\n%s", &out)
	anonymous := 0
	for _, e := range events {
		props, _ := e["properties"].(map[string]any)
		assert.Equal(t, "Page Requested", e["event"], "event %v", e)
		assert.Equal(t, "GET", props["method"], "method of event %v", e)
		assert.Contains(t, []any{"/", "/pricing", "/docs", "/signup"}, props["path"], "path of event %v", e)
		if e["anonymousId"] == "anonymous" {
			anonymous++
		} else {
			uid, _ := e["userId"].(string)
			assert.Regexp(t, `^user-[123]$`, uid, "the request's user id in event %v", e)
		}
		ctx, _ := e["context"].(map[string]any)
		assert.Equal(t, "127.0.0.1", ctx["ip"], "the request's IP in the event context")
		ua, _ := ctx["userAgent"].(string)
		assert.NotEmpty(t, ua, "the request's user agent in the event context")
	}
	assert.Equal(t, 5, anonymous, "anonymous events: every fifth request")
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("test-key:"))
	for _, r := range mock.Requests() {
		assert.Equal(t, auth, r.Header.Get("Authorization"), "Authorization: the -write-key's")
	}
	assert.Regexp(t, `msg=stopped events_tracked=25 delivered=25 `, out.String(), "output")
}

// TestSignalDrainsInFlightRequests sends the process a real SIGINT while a
// request is in flight: the server must finish it, and its event must
// still be delivered, since the client shuts down only after the server.
func TestSignalDrainsInFlightRequests(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sending os.Interrupt to a process is not implemented on Windows")
	}
	mock, ln := startMock(t)
	var out testsupport.Buffer
	done := make(chan error, 1)
	// Should the test stop before its SIGINT, cancelling ctx ends run all
	// the same, and the cleanup waits for it, so that nothing is left.
	ctx, cancel := context.WithCancel(context.Background())
	go func() { done <- run(ctx, []string{"-endpoint", ln.URL}, &out) }()
	ended := false
	t.Cleanup(func() {
		cancel()
		if !ended {
			select {
			case <-done:
			case <-time.After(hang):
			}
		}
	})

	// run logs its URL once signal.NotifyContext is in place, so the
	// SIGINT below is its, not the test binary's.
	url := "http://" + waitFor(t, &out, `serving until SIGINT.*(127\.0\.0\.1:\d+)/pricing`)[1]
	hc := &http.Client{Transport: &http.Transport{}, Timeout: hang}
	defer hc.CloseIdleConnections()
	for _, path := range []string{"/a", "/b"} {
		resp, err := hc.Get(url + path)
		require.NoError(t, err, "GET %s", path)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	// An in-flight request: its handler is reading the body when the
	// signal comes, and gets the rest of it after. The server answers
	// "100 Continue" when the handler starts reading.
	addr := url[len("http://"):]
	conn, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	defer conn.Close()
	// Not a bound on the test's time: it ends a hang, should the server
	// never answer.
	require.NoError(t, conn.SetDeadline(time.Now().Add(hang)))
	_, err = io.WriteString(conn, "POST /in-flight HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n")
	require.NoError(t, err)
	continued := make([]byte, len("HTTP/1.1 100 Continue\r\n\r\n"))
	_, err = io.ReadFull(conn, continued)
	require.NoError(t, err, "reading the 100 Continue")
	require.True(t, bytes.HasPrefix(continued, []byte("HTTP/1.1 100 ")), "read %q, want 100 Continue", continued)

	self, err := os.FindProcess(os.Getpid())
	require.NoError(t, err)
	require.NoError(t, self.Signal(os.Interrupt))
	// srv.Shutdown closes the listener first: once new connections are
	// refused, the shutdown is under way with our request in flight.
	for deadline := time.Now().Add(hang); ; time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		require.False(t, time.Now().After(deadline), "the server still accepts connections %v after SIGINT; output:\n%s", hang, &out)
	}
	_, err = io.WriteString(conn, "helloworld")
	require.NoError(t, err)
	resp, err := io.ReadAll(conn) // the server closes the connection: it is shutting down
	assert.NoError(t, err, "reading the answer to the in-flight request")
	assert.Contains(t, string(resp), "hello from POST /in-flight (10 bytes received)", "the answer to the in-flight request")

	select {
	case err := <-done:
		ended = true
		require.NoError(t, err, "run; output:\n%s", &out)
	case <-time.After(hang):
		require.Fail(t, "run did not return after SIGINT", "output:\n%s", &out)
	}
	var paths []string
	for _, e := range delivered(t, mock) {
		paths = append(paths, e["properties"].(map[string]any)["path"].(string))
	}
	slices.Sort(paths)
	assert.Equal(t, []string{"/a", "/b", "/in-flight"}, paths, "paths of the events delivered; output:\n%s", &out)
}

func TestBadFlag(t *testing.T) {
	assert.Error(t, run(context.Background(), []string{"-requests", "many"}, io.Discard), "run with -requests many")
}

// hang ends a wait that would otherwise never end: it bounds no step's
// time, so it is long enough for a loaded machine.
const hang = time.Minute

// waitFor waits until the output matches expr and returns the submatches.
func waitFor(t *testing.T, out *testsupport.Buffer, expr string) []string {
	t.Helper()
	re := regexp.MustCompile(expr)
	for deadline := time.Now().Add(hang); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
	}
	require.Fail(t, "no output matching "+expr+" within "+hang.String(), "output:\n%s", out)
	return nil
}
