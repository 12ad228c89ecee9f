package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// lines is an io.Writer that passes each write (run writes whole lines)
// to a channel, so a test waits for output without sleeping.
type lines chan string

func (l lines) Write(p []byte) (int, error) {
	l <- string(p)
	return len(p), nil
}

func (l lines) next(t *testing.T) string {
	t.Helper()
	select {
	case s := <-l:
		return strings.TrimSuffix(s, "\n")
	case <-time.After(10 * time.Second):
		t.Fatal("no output within 10s")
		return ""
	}
}

// started runs the command with args until the test ends, and returns its
// URL and stdout.
func started(t *testing.T, args ...string) (string, lines) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout := make(lines, 100)
	done := make(chan error, 1)
	go func() { done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), stdout, io.Discard) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run returned %v after ctx was cancelled, want nil", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("run did not stop within 10s of ctx being cancelled")
		}
	})
	first := stdout.next(t)
	url, ok := strings.CutPrefix(first, "listening on ")
	if !ok || !strings.HasPrefix(url, "http://127.0.0.1:") {
		t.Fatalf("first line %q, want listening on http://127.0.0.1:port", first)
	}
	return url, stdout
}

// client is a net/http client whose connections close when the test ends.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

func send(t *testing.T, url, body string) int {
	t.Helper()
	resp, err := client(t).Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

const oneTrack = `{"batch":[{"type":"track","event":"E","userId":"u","messageId":"m1"}]}`

func TestRunServesPrintsAndStops(t *testing.T) {
	url, stdout := started(t)
	if code := send(t, url+"/v1/batch", oneTrack); code != 200 {
		t.Fatalf("got %d, want 200", code)
	}
	if got, want := stdout.next(t), "track messageId=m1 userId=u event=E status=200"; got != want {
		t.Fatalf("printed %q, want %q", got, want)
	}
	resp, err := client(t).Get(url + "/_requests")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var reqs []analyticstest.Request
	if err := json.NewDecoder(resp.Body).Decode(&reqs); err != nil || len(reqs) != 1 || reqs[0].Status != 200 {
		t.Fatalf("GET /_requests: %+v %v", reqs, err)
	}
}

func TestRunAnswersFromAScript(t *testing.T) {
	file := filepath.Join(t.TempDir(), "script.json")
	script := `{"responses": [{"status": 503}], "default": {"status": 202}}`
	if err := os.WriteFile(file, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	url, stdout := started(t, "-script", file)
	for _, want := range []string{"status=503", "status=202"} {
		send(t, url+"/v1/batch", oneTrack)
		if got := stdout.next(t); !strings.HasSuffix(got, want) {
			t.Fatalf("printed %q, want it to end in %s", got, want)
		}
	}
}

func TestRunRejects(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`{"responses": [{"action": "explode"}]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args  []string
		usage bool   // an error in the command line: exit code 2
		want  string // in the error
	}{
		{[]string{"-addr", "0.0.0.0:0"}, true, "-public"},
		{[]string{"-addr", ":0"}, true, "-public"},
		{[]string{"-addr", "192.0.2.1:8787"}, true, "not a loopback address"},
		{[]string{"-addr", "example.com:80"}, true, "not a loopback address"},
		{[]string{"-addr", "127.0.0.1"}, true, "missing port"},
		{[]string{"-nope"}, true, "-nope"},
		{[]string{"extra"}, true, "extra"},
		{[]string{"-addr", "127.0.0.1:0", "-script", filepath.Join(t.TempDir(), "missing.json")}, false, "missing.json"},
		{[]string{"-addr", "127.0.0.1:0", "-script", bad}, false, "explode"},
	} {
		err := run(context.Background(), tc.args, io.Discard, io.Discard)
		var usage usageError
		if err == nil || errors.As(err, &usage) != tc.usage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("run %q: %v, want an error (usage %v) that says %s", tc.args, err, tc.usage, tc.want)
		}
	}
}

func TestCheckAddr(t *testing.T) {
	for _, tc := range []struct {
		addr   string
		public bool
		ok     bool
	}{
		{"127.0.0.1:8787", false, true},
		{"127.1.2.3:0", false, true},
		{"[::1]:8787", false, true},
		{"localhost:8787", false, true},
		{"0.0.0.0:8787", false, false},
		{":8787", false, false},
		{"[::]:8787", false, false},
		{"10.0.0.1:8787", false, false},
		{"0.0.0.0:8787", true, true},
		{":8787", true, true},
		{"nonsense", true, false},
	} {
		if err := checkAddr(tc.addr, tc.public); (err == nil) != tc.ok {
			t.Errorf("checkAddr(%q, public %v) = %v, want ok %v", tc.addr, tc.public, err, tc.ok)
		}
	}
}

func TestPrinter(t *testing.T) {
	var b strings.Builder
	p := &printer{w: &b}
	p.request(analyticstest.Request{
		Method: "POST", Path: "/v1/batch", Status: 503, Header: http.Header{"X-Retry-Count": {"2"}},
		Events: []map[string]any{
			{"type": "page", "messageId": "m1", "anonymousId": "a 1", "name": "Home"},
			{"type": "group", "messageId": "m2", "userId": "u", "groupId": "g"},
		},
	})
	p.request(analyticstest.Request{Method: "POST", Path: "/v1/batch", Err: errors.New("body is not JSON")})
	want := `page messageId=m1 anonymousId="a 1" name=Home status=503 retry=2
group messageId=m2 userId=u groupId=g status=503 retry=2
POST /v1/batch events=0 status=none error="body is not JSON"
`
	if b.String() != want {
		t.Fatalf("printed\n%s\nwant\n%s", b.String(), want)
	}
}

func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{flag.ErrHelp, 0},
		{usageError{errors.New("bad flag")}, 2},
		{errors.New("address in use"), 1},
	} {
		if got := exitCode(tc.err, io.Discard); got != tc.code {
			t.Errorf("exitCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
	}
}
