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
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/e2e/mockapi"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startMock serves a mock tracking API on 127.0.0.1 until the test ends.
func startMock(t *testing.T) (*mockapi.Server, *mockapi.Listener) {
	t.Helper()
	mock := mockapi.New()
	ln, err := mock.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return mock, ln
}

// delivered returns the events the mock accepted, and fails the test if
// any was accepted twice.
func delivered(t *testing.T, mock *mockapi.Server) []map[string]any {
	t.Helper()
	var events []map[string]any
	seen := map[string]bool{}
	for _, r := range mock.Requests() {
		if r.Status != http.StatusOK {
			continue
		}
		for _, e := range r.Events {
			id, _ := e["messageId"].(string)
			if seen[id] {
				t.Errorf("messageId %s delivered twice", id)
			}
			seen[id] = true
			events = append(events, e)
		}
	}
	return events
}

func TestRequestsMode(t *testing.T) {
	mock, ln := startMock(t)
	var out syncBuffer
	args := []string{"-requests", "25", "-endpoint", ln.URL, "-write-key", "test-key"}
	if err := run(context.Background(), args, &out); err != nil {
		t.Fatalf("run(%q) = %v; output:\n%s", args, err, &out)
	}

	events := delivered(t, mock)
	if len(events) != 25 {
		t.Fatalf("the mock received %d events, want 25 (one per request); output:\n%s", len(events), &out)
	}
	anonymous := 0
	for _, e := range events {
		props, _ := e["properties"].(map[string]any)
		if e["event"] != "Page Requested" || props["method"] != "GET" ||
			!slices.Contains([]any{"/", "/pricing", "/docs", "/signup"}, props["path"]) {
			t.Errorf("unexpected event %v", e)
		}
		if e["anonymousId"] == "anonymous" {
			anonymous++
		} else if uid, _ := e["userId"].(string); !regexp.MustCompile(`^user-[123]$`).MatchString(uid) {
			t.Errorf("event without the request's user id: %v", e)
		}
		ctx, _ := e["context"].(map[string]any)
		if ua, _ := ctx["userAgent"].(string); ctx["ip"] != "127.0.0.1" || ua == "" {
			t.Errorf("event context %v, want the request's IP and user agent", ctx)
		}
	}
	if anonymous != 5 {
		t.Errorf("%d anonymous events, want 5 (every fifth request)", anonymous)
	}
	auth := "Basic " + base64.StdEncoding.EncodeToString([]byte("test-key:"))
	for _, r := range mock.Requests() {
		if got := r.Header.Get("Authorization"); got != auth {
			t.Errorf("Authorization %q, want the -write-key's %q", got, auth)
		}
	}
	if want := regexp.MustCompile(`msg=stopped events_tracked=25 delivered=25 `); !want.MatchString(out.String()) {
		t.Errorf("output does not match %s:\n%s", want, &out)
	}
}

// TestSignalDrainsInFlightRequests sends the process a real SIGINT while a
// request is in flight: the server must finish it, and its event must
// still be delivered, since the client shuts down only after the server.
func TestSignalDrainsInFlightRequests(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("sending os.Interrupt to a process is not implemented on Windows")
	}
	mock, ln := startMock(t)
	var out syncBuffer
	done := make(chan error, 1)
	go func() { done <- run(context.Background(), []string{"-endpoint", ln.URL}, &out) }()

	// run logs its URL once signal.NotifyContext is in place, so the
	// SIGINT below is its, not the test binary's.
	url := "http://" + waitFor(t, &out, `serving until SIGINT.*(127\.0\.0\.1:\d+)/pricing`)[1]
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	for _, path := range []string{"/a", "/b"} {
		resp, err := hc.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	// An in-flight request: its handler is reading the body when the
	// signal comes, and gets the rest of it after. The server answers
	// "100 Continue" when the handler starts reading.
	addr := url[len("http://"):]
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST /in-flight HTTP/1.1\r\nHost: test\r\nContent-Length: 10\r\nExpect: 100-continue\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	continued := make([]byte, len("HTTP/1.1 100 Continue\r\n\r\n"))
	if _, err := io.ReadFull(conn, continued); err != nil || !bytes.HasPrefix(continued, []byte("HTTP/1.1 100 ")) {
		t.Fatalf("read %q, %v; want 100 Continue", continued, err)
	}

	self, err := os.FindProcess(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if err := self.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	// srv.Shutdown closes the listener first: once new connections are
	// refused, the shutdown is under way with our request in flight.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("the server still accepts connections 5s after SIGINT; output:\n%s", &out)
		}
	}
	if _, err := io.WriteString(conn, "helloworld"); err != nil {
		t.Fatal(err)
	}
	resp, err := io.ReadAll(conn) // the server closes the connection: it is shutting down
	if err != nil || !bytes.Contains(resp, []byte("hello from POST /in-flight (10 bytes received)")) {
		t.Errorf("in-flight request: %q, %v; want it answered", resp, err)
	}

	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("run = %v; output:\n%s", err, &out)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("run did not return after SIGINT; output:\n%s", &out)
	}
	var paths []string
	for _, e := range delivered(t, mock) {
		paths = append(paths, e["properties"].(map[string]any)["path"].(string))
	}
	slices.Sort(paths)
	if want := []string{"/a", "/b", "/in-flight"}; !slices.Equal(paths, want) {
		t.Errorf("events delivered for %q, want %q; output:\n%s", paths, want, &out)
	}
}

func TestBadFlag(t *testing.T) {
	if err := run(context.Background(), []string{"-requests", "many"}, io.Discard); err == nil {
		t.Error("run with -requests many = nil, want an error")
	}
}

// waitFor waits until the output matches expr and returns the submatches.
func waitFor(t *testing.T, out *syncBuffer, expr string) []string {
	t.Helper()
	re := regexp.MustCompile(expr)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			return m
		}
	}
	t.Fatalf("no output matching %s within 5s:\n%s", expr, out)
	return nil
}

// syncBuffer is a bytes.Buffer that run's goroutines may write while the
// test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
