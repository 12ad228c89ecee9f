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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
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
		require.FailNow(t, "no output within 10s")
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
			assert.NoError(t, err, "run, after ctx was cancelled")
		case <-time.After(10 * time.Second):
			assert.Fail(t, "run did not stop within 10s of ctx being cancelled")
		}
	})
	first := stdout.next(t)
	url, ok := strings.CutPrefix(first, "listening on ")
	require.True(t, ok, "first line %q, want listening on http://127.0.0.1:port", first)
	require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "first line %q, want listening on http://127.0.0.1:port", first)
	return url, stdout
}

// client is a net/http client whose connections close when the test ends.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// send posts body to url as the SDK would, with a write key, and returns
// the status.
func send(t *testing.T, url, body string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth("wk", "")
	resp, err := client(t).Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

const oneTrack = `{"batch":[{"type":"track","event":"E","userId":"u","messageId":"m1"}]}`

func TestRunServesPrintsAndStops(t *testing.T) {
	url, stdout := started(t)
	require.Equal(t, 200, send(t, url+"/v1/batch", oneTrack))
	assert.Equal(t, "track messageId=m1 userId=u event=E status=200", stdout.next(t), "printed")
	resp, err := client(t).Get(url + "/_requests")
	require.NoError(t, err)
	defer resp.Body.Close()
	var reqs []analyticstest.Request
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&reqs), "GET /_requests")
	require.Len(t, reqs, 1, "GET /_requests")
	assert.Equal(t, 200, reqs[0].Status, "GET /_requests")
}

func TestRunRefusesAndPrintsWhy(t *testing.T) {
	url, stdout := started(t)
	assert.Equal(t, 404, send(t, url+"/v1/batch/v1/batch", oneTrack), "an endpoint given with /v1/batch")
	got := stdout.next(t)
	assert.True(t, strings.HasPrefix(got, "track messageId=m1 userId=u event=E status=404 error="), "printed %q", got)
	assert.Equal(t, 400, send(t, url+"/v1/batch", "not json"), "not JSON")
	got = stdout.next(t)
	assert.True(t, strings.HasPrefix(got, "POST /v1/batch events=0 status=400 error="), "printed %q", got)
}

func TestRunLenient(t *testing.T) {
	url, stdout := started(t, "-lenient")
	assert.Equal(t, 200, send(t, url+"/v1/batch/v1/batch", oneTrack), "an endpoint given with /v1/batch")
	assert.Equal(t, "track messageId=m1 userId=u event=E status=200", stdout.next(t), "printed")
}

func TestUsageDocumentsTheControlAPI(t *testing.T) {
	var stderr strings.Builder
	err := run(context.Background(), []string{"-h"}, io.Discard, &stderr)
	require.ErrorIs(t, err, flag.ErrHelp)
	for _, want := range []string{
		"GET /_requests", `"messageIds"`, `"status"`, `"rejected"`, `"error"`,
		"POST /_script", `"responses"`, `"rules"`, `"default"`, `"ifEventsOver"`, `"delayMs"`,
		"POST /_reset", "204",
		"404", "405", "401", "413", "400", `{"code": "...", "message": "..."}`,
		"SIGTERM", "go build -o mockapi ./analyticstest/cmd/mockapi", "kill $pid",
		"-addr", "-script", "-lenient", "-public",
		"-oauth-public-key", "-oauth-client-id", "-oauth-key-id", "-oauth-ttl", "-oauth-skew", "POST /token", `"tokenResponses"`,
	} {
		assert.Contains(t, stderr.String(), want, "-h")
	}
}

func TestRunAnswersFromAScript(t *testing.T) {
	file := filepath.Join(t.TempDir(), "script.json")
	script := `{"responses": [{"status": 503}], "default": {"status": 202}}`
	require.NoError(t, os.WriteFile(file, []byte(script), 0o600))
	url, stdout := started(t, "-script", file)
	for _, want := range []string{"status=503", "status=202"} {
		send(t, url+"/v1/batch", oneTrack)
		got := stdout.next(t)
		assert.True(t, strings.HasSuffix(got, want), "printed %q, want it to end in %s", got, want)
	}
}

func TestRunRejects(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"responses": [{"action": "explode"}]}`), 0o600))
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
		require.Error(t, err, "run %q", tc.args)
		var usage usageError
		assert.Equal(t, tc.usage, errors.As(err, &usage), "run %q: %v is a usage error", tc.args, err)
		assert.ErrorContains(t, err, tc.want, "run %q", tc.args)
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
		err := checkAddr(tc.addr, tc.public)
		assert.Equal(t, tc.ok, err == nil, "checkAddr(%q, public %v) = %v", tc.addr, tc.public, err)
	}
}

// The control API answers a foreign Host (a DNS-rebinding page's) only
// with -public; a cross-site Origin never.
func TestRunPublicControlHost(t *testing.T) {
	get := func(url string, header http.Header) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url+"/_requests", nil)
		require.NoError(t, err)
		req.Host = "rebind.attacker.example"
		req.Header = header
		resp, err := client(t).Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode
	}
	local, _ := started(t)
	assert.Equal(t, http.StatusForbidden, get(local, nil), "a foreign Host without -public")
	public, _ := started(t, "-public")
	assert.Equal(t, http.StatusOK, get(public, nil), "a foreign Host with -public")
	assert.Equal(t, http.StatusForbidden, get(public, http.Header{"Origin": {"http://attacker.example"}}), "a cross-site Origin with -public")
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
	p.request(analyticstest.Request{Method: "POST", Path: "/v1/batch", Status: 400, Err: errors.New("body is not JSON")})
	p.request(analyticstest.Request{
		Method: "POST", Path: "/v1/batch", Status: 200, Rejected: 1,
		Events: []map[string]any{{"type": "track", "messageId": "m4", "event": "E"}, {"type": "track", "messageId": "m5", "event": "E"}},
	})
	p.request(analyticstest.Request{
		Method: "POST", Path: "/v1/batch/v1/batch", Status: 404, Err: errors.New("no tracking API path"),
		Events: []map[string]any{{"type": "track", "messageId": "m3", "userId": json.Number("12345678901234567890"), "event": "E"}},
	})
	want := `page messageId=m1 anonymousId="a 1" name=Home status=503 retry=2
group messageId=m2 userId=u groupId=g status=503 retry=2
POST /v1/batch events=0 status=400 error="body is not JSON"
track messageId=m4 event=E status=200
track messageId=m5 event=E status=200 rejected="event 2 of 2: the API takes 1 a batch"
track messageId=m3 userId=12345678901234567890 event=E status=404 error="no tracking API path"
`
	assert.Equal(t, want, b.String())
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
		assert.Equal(t, tc.code, exitCode(tc.err, io.Discard), "exitCode(%v)", tc.err)
	}
}
