package analytics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"net/http"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// The programs of testdata/v3programs are written for
// segmentio/analytics-go v3, each in a shape v3 code takes:
//
//   - readme: the usage snippet of v3's README (New returns one value, the
//     default endpoint);
//   - trackloop: v3's examples/track.go (NewWithConfig, Config{Interval,
//     BatchSize, Verbose}, Properties as a map[string]interface{});
//   - cli: v3's cmd/cli (a Callback that reports to a channel,
//     BatchSize 1, every message type, err.(analytics.FieldError));
//   - service: an ordinary service wrapper (DefaultInterval,
//     DefaultBatchSize, StdLogger, ConfigError, ErrClosed,
//     ErrMessageTooBig, ErrTooManyRequests, Context{GroupID},
//     DefaultContext, a Transport, and a test double of analytics.Client in
//     its tests).
const (
	v3Import       = `"github.com/segmentio/analytics-go/v3"`
	v3compatImport = `"github.com/dualpath/analytics-go/v3compat"`
)

// TestV3ProgramsRun changes the import path of the v3 programs, and
// nothing else, to this package's, builds them, runs the service's own
// tests (its test double of analytics.Client included), then runs each
// program against the mock tracking API and checks what arrived.
func TestV3ProgramsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs programs")
	}
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	require.NoError(t, err)
	dir := copyPrograms(t, true)
	writeModule(t, dir,
		"require github.com/dualpath/analytics-go v0.0.0\n\nreplace github.com/dualpath/analytics-go => "+root+"\n", sum)
	bin := t.TempDir()
	goCommand(t, dir, nil, "vet", "./...")
	goCommand(t, dir, nil, "test", "-count=1", "./...")
	goCommand(t, dir, nil, "build", "-o", bin+string(filepath.Separator), "./...")

	api := analyticstest.New()
	segment := startFakeSegment(t, api)
	plain, err := api.Start()
	require.NoError(t, err)
	defer plain.Close()
	const key = "wk_v3_programs"
	env := append([]string{"SEGMENT_WRITE_KEY=" + key}, segment.Env...)
	program := func(name string) string { return filepath.Join(bin, name) }

	t.Run("readme", func(t *testing.T) {
		api.Reset()
		res := run(t, program("readme"), env)
		require.Equal(t, 0, res.code, res)
		events := delivered(t, api, key)
		require.Len(t, events, 1)
		assert.Equal(t, "track", events[0]["type"])
		assert.Equal(t, "readme-user", events[0]["userId"])
		assert.Equal(t, "Readme Snippet Ran", events[0]["event"])
		assert.Contains(t, segment.Targets(), segmentHost+":443", "the default endpoint was used")
	})

	t.Run("readme, rejected", func(t *testing.T) {
		api.Reset()
		api.Default(analyticstest.Status(400))
		res := run(t, program("readme"), env)
		require.Equal(t, 0, res.code, res)
		assert.Regexp(t, `(?m)^analytics \S+ \S+ ERROR: analytics: events not delivered events=1 error=.*HTTP 400`, res.stderr,
			"the default Logger writes to standard error")
		assert.NotContains(t, res.stderr, key)
	})

	t.Run("trackloop", func(t *testing.T) {
		api.Reset()
		res := run(t, program("trackloop"), env, "-events", "120")
		require.Equal(t, 0, res.code, res)
		assert.Equal(t, "queued 120 events\n", res.stdout)
		events := delivered(t, api, key)
		require.Len(t, events, 120)
		var users []string
		for _, e := range events {
			users = append(users, e["userId"].(string))
			assert.Equal(t, map[string]any{"application": "Desktop App", "version": "1.1.0", "platform": "linux"}, e["properties"])
		}
		assert.Contains(t, users, "user-0")
		assert.Contains(t, users, "user-119")
		for _, r := range api.Requests() {
			assert.LessOrEqual(t, len(r.Events), 50, "BatchSize")
		}
	})

	t.Run("cli", func(t *testing.T) {
		api.Reset()
		api.Rule(func(r analyticstest.Request) analyticstest.Answer {
			if r.Events[0]["userId"] == "rejected" {
				return analyticstest.Status(400)
			}
			return analyticstest.Answer{Default: true}
		})
		tests := []struct {
			args   []string
			code   int
			stdout string
		}{
			{[]string{"-type", "track", "-userId", "u1", "-event", "Signed Up", "-properties", `{"plan":"pro"}`}, 0, "delivered\n"},
			{[]string{"-type", "identify", "-userId", "u1", "-traits", `{"name":"Ada"}`}, 0, "delivered\n"},
			{[]string{"-type", "group", "-userId", "u1", "-groupId", "g1"}, 0, "delivered\n"},
			{[]string{"-type", "page", "-userId", "u1", "-name", "Home"}, 0, "delivered\n"},
			{[]string{"-type", "screen", "-userId", "u1", "-name", "Main"}, 0, "delivered\n"},
			{[]string{"-type", "alias", "-userId", "u2", "-previousId", "u1"}, 0, "delivered\n"},
			{[]string{"-type", "identify", "-userId", "rejected"}, 1, "not delivered: "},
			{[]string{"-type", "track", "-userId", "u1"}, 2, "invalid analytics.Track: Event is required\n"},
			{[]string{"-type", "group", "-userId", "u1"}, 2, "invalid analytics.Group: GroupId is required\n"},
		}
		for _, tt := range tests {
			res := run(t, program("cli"), env, tt.args...)
			assert.Equal(t, tt.code, res.code, "%v: %v", tt.args, res)
			assert.True(t, strings.HasPrefix(res.stdout, tt.stdout), "%v: stdout %q, want it to start with %q", tt.args, res.stdout, tt.stdout)
			if tt.code == 1 {
				assert.Contains(t, res.stdout, "400 400 Bad Request", "the Failure's error: v3's status error")
			}
		}
		types := map[string]int{}
		for _, e := range delivered(t, api, key) {
			types[e["type"].(string)]++
		}
		assert.Equal(t, map[string]int{"track": 1, "identify": 1, "group": 1, "page": 1, "screen": 1, "alias": 1}, types)
	})

	t.Run("service", func(t *testing.T) {
		api.Reset()
		res := run(t, program("service"), append(env, "TRACKING_ENDPOINT="+plain.URL))
		require.Equal(t, 0, res.code, res)
		assert.NotContains(t, res.stdout, "message too large", "as v3's, Enqueue accepts a message too large")
		assert.Regexp(t, `(?m)^second close: analytics: client is closed$`, res.stdout)
		assert.Regexp(t, `(?m)^delivered=9 failed=0 invalid=2 too_big=1 throttled=0 round_trips=[1-9][0-9]*$`, res.stdout,
			"the message too large reaches Callback.Failure as ErrMessageTooBig, as in v3")
		assert.Contains(t, res.stderr, "service: dropped a analytics.Identify without UserId\n")
		assert.Contains(t, res.stderr, "service: dropped a analytics.Track without UserId\n")

		events := delivered(t, api, key)
		require.Len(t, events, 9)
		app := map[string]any{"name": "billing-service", "version": "2.4.1"}
		for _, e := range events {
			group := "tenant-42" // DefaultContext
			if e["event"] == "Joined Team" {
				group = "team-7" // the message's own context
			}
			assert.Equal(t, map[string]any{"app": app, "groupId": group}, e["context"], "%v", e)
			if e["event"] == "Invoice Paid" {
				assert.Equal(t, map[string]any{"revenue": json.Number("99.5"), "currency": "EUR", "orderId": "inv-grace", "notes": "paid by card"}, e["properties"])
			}
		}
		assert.NotContains(t, segment.Targets(), plain.URL, "the service used its Endpoint")
	})

	t.Run("service with a bad Config", func(t *testing.T) {
		res := run(t, program("service"), append(env, "TRACKING_BATCH_SIZE=-1"))
		assert.Equal(t, 2, res.code, res)
		assert.Equal(t, "could not start: analytics setting BatchSize (-1): must be at least 1, got -1\n", res.stdout)
	})
}

// TestV3ProgramsAreV3Programs builds the same programs, unchanged, against
// segmentio/analytics-go v3.3.0 and runs the service's tests: they are v3
// code, not code written for this package. It needs v3 in the module cache
// (the benchmarks module depends on it), fetches what the cache lacks, and
// skips only when the module proxy cannot be reached.
func TestV3ProgramsAreV3Programs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds programs")
	}
	sum, err := os.ReadFile(filepath.Join("..", "benchmarks", "go.sum"))
	require.NoError(t, err)
	dir := copyPrograms(t, false)
	writeModule(t, dir, "require (\n"+
		"\tgithub.com/segmentio/analytics-go/v3 v3.3.0\n"+
		"\tgithub.com/segmentio/backo-go v1.0.1\n"+
		"\tgithub.com/google/uuid v1.6.0\n)\n", sum)
	// The go.sum above pins these modules' hashes, so no checksum database
	// is asked. What the module cache lacks (v3 can be there without its
	// dependencies, after a bare `go mod download` of v3) is fetched
	// through the machine's own GOPROXY, as CI reaches the module proxy;
	// the test skips only where it cannot be had.
	offline := []string{"GOSUMDB=off"}
	proxy, err := exec.Command("go", "env", "GOPROXY").Output()
	require.NoError(t, err)
	fetch := append(slices.Clone(offline), "GOPROXY="+strings.TrimSpace(string(proxy)))
	if out, err := goOutput(dir, fetch, "mod", "download",
		"github.com/segmentio/analytics-go/v3", "github.com/segmentio/backo-go", "github.com/google/uuid"); err != nil {
		t.Skipf("segmentio/analytics-go v3.3.0 and its dependencies cannot be had: %v\n%s", err, out)
	}
	goCommand(t, dir, offline, "vet", "./...")
	goCommand(t, dir, offline, "test", "-count=1", "./...")
}

// copyPrograms copies testdata/v3programs into a new directory; with
// toV3compat, it changes the import of v3 to this package's in each file,
// and nothing else.
func copyPrograms(t *testing.T, toV3compat bool) string {
	t.Helper()
	src := filepath.Join("testdata", "v3programs")
	dst := t.TempDir()
	imports := 0
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".go") {
			if bytes.Contains(b, []byte("dualpath")) {
				t.Fatalf("%s names this module: the programs must be v3 code", path)
			}
			imports += bytes.Count(b, []byte(v3Import))
			if toV3compat {
				b = bytes.ReplaceAll(b, []byte(v3Import), []byte(v3compatImport))
			}
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dst, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o644)
	})
	require.NoError(t, err)
	require.GreaterOrEqual(t, imports, 5, "every program imports v3")
	return dst
}

func writeModule(t *testing.T, dir, requires string, sum []byte) {
	t.Helper()
	mod := "module v3programs\n\ngo 1.25\n\n" + requires
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
}

// goEnv is the environment of the go command: offline, from the module
// cache.
func goEnv(extra []string) []string {
	return append(os.Environ(), append([]string{"GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off"}, extra...)...)
}

func goOutput(dir string, extra []string, args ...string) ([]byte, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = goEnv(extra)
	return cmd.CombinedOutput()
}

func goCommand(t *testing.T, dir string, extra []string, args ...string) {
	t.Helper()
	if out, err := goOutput(dir, extra, args...); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// result is how a program ended.
type result struct {
	code           int
	stdout, stderr string
}

// run runs a program with env added to a clean environment (no proxy, no
// trust store, no analytics settings of the machine's), and returns how it
// ended. A program that hangs is killed after a minute, so the test fails
// instead of hanging; nothing waits on that clock otherwise.
func run(t *testing.T, program string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, program, args...)
	cmd.Env = append(cleanEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		res.code = exit.ExitCode()
	default:
		t.Fatalf("%s %v: %v\n%s%s", filepath.Base(program), args, err, res.stdout, res.stderr)
	}
	return res
}

var machineSettings = regexp.MustCompile(`(?i)^(https?_proxy|no_proxy|all_proxy|ssl_cert_(file|dir)|segment_\w*|analytics_\w*|tracking_\w*)=`)

func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), machineSettings.MatchString)
}

// delivered returns the events the API answered 2xx, after checking that
// each request carried the write key.
func delivered(t *testing.T, api *analyticstest.Server, key string) []map[string]any {
	t.Helper()
	var events []map[string]any
	for _, r := range api.Requests() {
		user, _, ok := (&http.Request{Header: r.Header}).BasicAuth()
		assert.True(t, ok && user == key, "a request without the write key")
		if r.Status >= 200 && r.Status <= 299 {
			events = append(events, r.Events...)
		}
	}
	return events
}
