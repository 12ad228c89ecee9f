package main

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testWriteKey is distinctive so that a test can assert it never appears in
// any output.
const testWriteKey = "wk-s3cret-7f3a"

// cliRun is one in-process run of the command.
type cliRun struct {
	code           int
	stdout, stderr string
}

func runCLI(t *testing.T, stdin string, args ...string) cliRun {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(stdin), &stdout, &stderr)
	r := cliRun{code: code, stdout: stdout.String(), stderr: stderr.String()}
	assert.NotContains(t, r.stdout, testWriteKey, "the write key appears on stdout")
	assert.NotContains(t, r.stderr, testWriteKey, "the write key appears on stderr")
	return r
}

// runInput runs the command on the JSON encoding of doc.
func runInput(t *testing.T, doc any) cliRun {
	t.Helper()
	b, err := json.Marshal(doc)
	require.NoError(t, err)
	return runCLI(t, "", "--input", string(b))
}

// keys decodes the one line of a run's stdout into its members, failing
// the test unless stdout is exactly one line of JSON.
func (r cliRun) keys(t *testing.T) map[string]json.RawMessage {
	t.Helper()
	require.Equal(t, 1, strings.Count(r.stdout, "\n"), "stdout is not one line: %q (stderr: %s)", r.stdout, r.stderr)
	require.True(t, strings.HasSuffix(r.stdout, "\n"), "stdout does not end its line: %q", r.stdout)
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &keys), "stdout is not a JSON object: %q", r.stdout)
	return keys
}

// output decodes the one line of a run's stdout, failing the test unless
// it is exactly one line of JSON with the six keys of docs/SPEC.md §9 and
// the CLI's doc comment.
func (r cliRun) output(t *testing.T) result {
	t.Helper()
	keys := r.keys(t)
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	assert.ElementsMatch(t, []string{"success", "sentBatches", "delivered", "failed", "errors", "error"}, got, "the keys of stdout")
	assert.NotEqual(t, "null", string(keys["errors"]), "errors is null, want an array")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	var res result
	require.NoError(t, dec.Decode(&res), "stdout: %s", r.stdout)
	return res
}

// trackingAPI is a minimal tracking API on 127.0.0.1: it decodes each batch
// (gzip or plain), records its events, and answers status (200 by
// default).
type trackingAPI struct {
	*httptest.Server
	status atomic.Int32

	mu       sync.Mutex
	requests []apiRequest
}

type apiRequest struct {
	header http.Header
	events []map[string]any
}

func newTrackingAPI(t *testing.T) *trackingAPI {
	t.Helper()
	api := &trackingAPI{}
	api.status.Store(http.StatusOK)
	api.Server = httptest.NewServer(http.HandlerFunc(api.serve))
	t.Cleanup(api.Close)
	return api
}

func (api *trackingAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/batch" {
		http.Error(w, "want POST /v1/batch", http.StatusNotFound)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		defer zr.Close()
		body = zr
	}
	var batch struct {
		Batch []map[string]any `json:"batch"`
	}
	dec := json.NewDecoder(body)
	dec.UseNumber() // so a test sees numbers exactly as sent
	if err := dec.Decode(&batch); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	api.mu.Lock()
	api.requests = append(api.requests, apiRequest{header: r.Header.Clone(), events: batch.Batch})
	api.mu.Unlock()
	w.WriteHeader(int(api.status.Load()))
	io.WriteString(w, `{}`)
}

func (api *trackingAPI) received() []apiRequest {
	api.mu.Lock()
	defer api.mu.Unlock()
	return append([]apiRequest(nil), api.requests...)
}

// events returns every event received, in arrival order.
func (api *trackingAPI) events() []map[string]any {
	var all []map[string]any
	for _, r := range api.received() {
		all = append(all, r.events...)
	}
	return all
}

// doc is an input document for the API: the write key, apiHost, and the
// given sequences and config.
func (api *trackingAPI) doc(config map[string]any, sequences ...map[string]any) map[string]any {
	if sequences == nil {
		sequences = []map[string]any{} // [] rather than null
	}
	d := map[string]any{"writeKey": testWriteKey, "apiHost": api.URL, "sequences": sequences}
	if config != nil {
		d["config"] = config
	}
	return d
}

func seq(delayMs float64, events ...map[string]any) map[string]any {
	if events == nil {
		events = []map[string]any{}
	}
	return map[string]any{"delayMs": delayMs, "events": events}
}

func track(id string) map[string]any {
	return map[string]any{"type": "track", "userId": "u1", "event": "Signed Up", "messageId": id}
}

func basicAuth(key string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(key+":"))
}

// retryRecord is one "will retry" record of the SDK's log: the path and
// the wait it chose after a failed attempt.
type retryRecord struct {
	path string
	wait time.Duration
}

var retryLine = regexp.MustCompile(`msg="analytics: upload attempt failed, will retry" attempt=\d+ events=\d+ path=(\S+) wait=(\S+) `)

// retryRecords returns the "will retry" records in stderr, in order.
func retryRecords(t *testing.T, stderr string) []retryRecord {
	t.Helper()
	var out []retryRecord
	for _, m := range retryLine.FindAllStringSubmatch(stderr, -1) {
		wait, err := time.ParseDuration(m[2])
		require.NoError(t, err, "wait in %q", m[0])
		out = append(out, retryRecord{path: m[1], wait: wait})
	}
	return out
}
