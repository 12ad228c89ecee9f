package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
)

// decodeNumbers decodes JSON text keeping numbers as json.Number, the way
// the test API decodes what it receives.
func decodeNumbers(t *testing.T, text string) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var m map[string]any
	require.NoError(t, dec.Decode(&m), text)
	return m
}

func TestEventTypes(t *testing.T) {
	api := newTrackingAPI(t)
	// Every type gets every field; each must arrive with exactly the fields
	// its type has. The numbers are beyond float64 to show they arrive
	// unrounded.
	const common = `"userId": "u1", "anonymousId": "a1", "event": "Signed Up",
		"properties": {"plan": "pro", "big": 12345678901234567890, "nested": {"a": [1, 2.5, "x", null, true]}},
		"traits": {"email": "u@example.com", "age": 42},
		"name": "Home", "category": "Docs", "groupId": "g1", "previousId": "p1",
		"integrations": {"All": false, "Mixpanel": true},
		"context": {"ip": "203.0.113.9", "app": {"name": "cli"}, "locale": "en-US",
		            "custom": {"big": 12345678901234567891}, "traits": {"plan": "pro", "n": 98765432109876543210}}`
	events := []string{}
	for i, typ := range eventTypes {
		events = append(events, `{"type": "`+typ+`", "messageId": "m-`+typ+`", "timestamp": "2024-01-02T03:04:05.`+[]string{"6", "67", "678", "600", "000", "999"}[i]+`Z", `+common+`}`)
	}
	input := `{"writeKey": "` + testWriteKey + `", "apiHost": "` + api.URL + `",
		"sequences": [{"delayMs": 0, "events": [` + strings.Join(events, ",") + `]}]}`
	r := runCLI(t, "", "--input", input)
	require.Equal(t, exitSuccess, r.code, "stdout %s; stderr %s", r.stdout, r.stderr)
	assert.Equal(t, result{Success: true, SentBatches: 1, Delivered: 6, Errors: []string{}}, r.output(t))

	src := decodeNumbers(t, "{"+common+"}")
	has := map[string][]string{
		"track":    {"userId", "anonymousId", "event", "properties", "integrations"},
		"identify": {"userId", "anonymousId", "traits", "integrations"},
		"page":     {"userId", "anonymousId", "name", "category", "properties", "integrations"},
		"screen":   {"userId", "anonymousId", "name", "category", "properties", "integrations"},
		"group":    {"userId", "anonymousId", "groupId", "traits", "integrations"},
		"alias":    {"userId", "previousId", "integrations"},
	}
	stamps := []string{"2024-01-02T03:04:05.600Z", "2024-01-02T03:04:05.670Z", "2024-01-02T03:04:05.678Z",
		"2024-01-02T03:04:05.600Z", "2024-01-02T03:04:05.000Z", "2024-01-02T03:04:05.999Z"}
	got := api.events()
	require.Len(t, got, len(eventTypes))
	for i, ev := range got {
		typ := eventTypes[i]
		want := map[string]any{"type": typ, "messageId": "m-" + typ, "timestamp": stamps[i], "context": nil}
		for _, k := range has[typ] {
			want[k] = src[k]
		}
		for k := range ev {
			assert.Contains(t, want, k, "%s: unexpected field %q = %v", typ, k, ev[k])
		}
		for k, v := range want {
			if k == "context" {
				continue
			}
			assert.Equal(t, v, ev[k], "%s.%s", typ, k)
		}
		ctx, _ := ev["context"].(map[string]any)
		wantCtx := src["context"].(map[string]any)
		for _, k := range []string{"ip", "app", "locale", "custom", "traits"} {
			assert.Equal(t, wantCtx[k], ctx[k], "%s.context.%s", typ, k)
		}
		lib, _ := ctx["library"].(map[string]any)
		assert.Equal(t, "analytics-go", lib["name"], "%s.context.library", typ)
	}

	reqs := api.received()
	require.NotEmpty(t, reqs)
	assert.Equal(t, basicAuth(testWriteKey), reqs[0].header.Get("Authorization"), "the write key's Basic auth")
	assert.Equal(t, "gzip", reqs[0].header.Get("Content-Encoding"))
}

// TestTimestampInstantKept: a timestamp with an offset arrives as the same
// instant, in the SDK's wire layout (UTC, milliseconds).
func TestTimestampInstantKept(t *testing.T) {
	api := newTrackingAPI(t)
	ev := track("m-ts")
	ev["timestamp"] = "2024-05-06T07:08:09.123+02:00"
	r := runInput(t, api.doc(nil, seq(0, ev)))
	require.Equal(t, exitSuccess, r.code, "stderr %s", r.stderr)
	got := api.events()
	require.Len(t, got, 1)
	assert.Equal(t, "2024-05-06T05:08:09.123Z", got[0]["timestamp"])
	assert.Equal(t, "m-ts", got[0]["messageId"])
}

// messageIDs returns the messageId of every event the API received, in
// arrival order.
func messageIDs(api *trackingAPI) []any {
	var ids []any
	for _, ev := range api.events() {
		ids = append(ids, ev["messageId"])
	}
	return ids
}

func TestRejectedEventsCountAsFailed(t *testing.T) {
	api := newTrackingAPI(t)
	noEvent := map[string]any{"type": "track", "userId": "u1"}
	noUser := map[string]any{"type": "identify", "traits": map[string]any{"a": 1}}
	tooLarge := track("m-large")
	tooLarge["properties"] = map[string]any{"blob": strings.Repeat("x", analytics.MaxMessageBytes)}
	r := runInput(t, api.doc(nil,
		seq(0, track("m-1"), noEvent, track("m-2"), noEvent),
		seq(0, noUser, tooLarge, track("m-3"))))
	require.Equal(t, exitFailure, r.code, "stderr %s", r.stderr)
	got := r.output(t)
	assert.False(t, got.Success)
	assert.Equal(t, int64(3), got.Delivered)
	assert.Equal(t, int64(4), got.Failed)
	assert.Equal(t, int64(1), got.SentBatches)
	wantErrs := []string{
		analytics.Track{UserId: "u1"}.Validate().Error(),
		analytics.Identify{}.Validate().Error(),
		analytics.ErrMessageTooLarge.Error(),
	}
	require.Len(t, got.Errors, len(wantErrs), "each distinct error once")
	for i, want := range wantErrs {
		assert.Contains(t, got.Errors[i], want, "errors[%d]", i)
	}
	assert.Equal(t, []any{"m-1", "m-2", "m-3"}, messageIDs(api))
	for _, path := range []string{"sequences[0].events[1]", "sequences[0].events[3]", "sequences[1].events[0]", "sequences[1].events[1]"} {
		assert.Contains(t, r.stderr, path, "stderr does not name the refused event")
	}
}

func TestServerAnswers400(t *testing.T) {
	api := newTrackingAPI(t)
	api.status.Store(http.StatusBadRequest)
	r := runInput(t, api.doc(map[string]any{"flushAt": 2},
		seq(0, track("m-1"), track("m-2"), track("m-3"), track("m-4"), track("m-5"))))
	require.Equal(t, exitFailure, r.code, "stderr %s", r.stderr)
	got := r.output(t)
	assert.False(t, got.Success)
	assert.Zero(t, got.Delivered)
	assert.Equal(t, int64(5), got.Failed)
	assert.Zero(t, got.SentBatches)
	// Three batches failed alike: their error is listed once.
	require.Len(t, got.Errors, 1)
	assert.Contains(t, got.Errors[0], "400")
	assert.Contains(t, got.Errors[0], "after 1 attempt")
	if assert.NotNil(t, got.Error) {
		assert.Equal(t, "5 of 5 events failed: "+got.Errors[0], *got.Error)
	}
	assert.Len(t, api.received(), 3, "requests: no retry of a 400")
}

func TestMaxRetriesZero(t *testing.T) {
	api := newTrackingAPI(t)
	api.status.Store(http.StatusServiceUnavailable)
	r := runInput(t, api.doc(map[string]any{"maxRetries": 0}, seq(0, track("m-1"))))
	got := r.output(t)
	require.Equal(t, exitFailure, r.code, "stderr %s", r.stderr)
	require.Equal(t, int64(1), got.Failed)
	assert.Len(t, api.received(), 1, "requests: maxRetries 0 means no retry")
	require.Len(t, got.Errors, 1)
	assert.Contains(t, got.Errors[0], "retries exhausted after 1 attempt")
}

// TestRetryConfig: maxRetries counts retries, and backoffBase and
// backoffCap are milliseconds.
func TestRetryConfig(t *testing.T) {
	api := newTrackingAPI(t)
	api.status.Store(http.StatusInternalServerError)
	r := runInput(t, api.doc(map[string]any{"maxRetries": 2, "backoffBase": 1, "backoffCap": 2, "gzip": false}, seq(0, track("m-1"))))
	got := r.output(t)
	require.Equal(t, exitFailure, r.code, "stderr %s", r.stderr)
	require.Equal(t, int64(1), got.Failed)
	reqs := api.received()
	require.Len(t, reqs, 3, "requests: maxRetries 2 means 3 attempts")
	for i, req := range reqs {
		assert.Empty(t, req.header.Get("Content-Encoding"), "request %d with gzip false", i)
	}
	// The SDK's retry warnings go to stderr, with the waits it chose:
	// retry n waits [d/2, d) with d = min(backoffCap, backoffBase·2^(n-1)),
	// so 0.5-1 ms then 1-2 ms if backoffBase 1 and backoffCap 2 are
	// milliseconds (as seconds, they would be 0.5-1 s then 1-2 s).
	assert.Contains(t, r.stderr, "level=WARN")
	retries := retryRecords(t, r.stderr)
	require.Len(t, retries, 2)
	for i, rec := range retries {
		assert.Equal(t, "backoff", rec.path, "retry %d", i+1)
	}
	assert.GreaterOrEqual(t, retries[0].wait, 500*time.Microsecond)
	assert.Less(t, retries[0].wait, time.Millisecond)
	assert.GreaterOrEqual(t, retries[1].wait, time.Millisecond)
	assert.Less(t, retries[1].wait, 2*time.Millisecond)
}

func TestOutputFormat(t *testing.T) {
	api := newTrackingAPI(t)
	r := runInput(t, api.doc(map[string]any{"flushAt": 2},
		seq(0, track("m-1"), track("m-2"), track("m-3"), track("m-4"), track("m-5"))))
	assert.Equal(t, exitSuccess, r.code, "stderr %s", r.stderr)
	assert.Equal(t, `{"success":true,"sentBatches":3,"delivered":5,"failed":0,"errors":[],"error":null}`+"\n", r.stdout)
	r.output(t)
	assert.Empty(t, r.stderr, "stderr on a clean run")
}

// TestSequenceDelays: each sequence waits its delayMs after the previous
// one, and events go out in input order.
func TestSequenceDelays(t *testing.T) {
	api := newTrackingAPI(t)
	start := time.Now()
	r := runInput(t, api.doc(map[string]any{"flushAt": 1, "maxConcurrentRequests": 1},
		seq(0, track("m-1")), seq(100, track("m-2"), track("m-3")), seq(150.5, track("m-4"))))
	elapsed := time.Since(start)
	require.Equal(t, exitSuccess, r.code, "stderr %s", r.stderr)
	// A sound lower bound: start and elapsed bracket the whole run, and
	// the run slept both delays on its own clock.
	assert.GreaterOrEqual(t, elapsed, 250*time.Millisecond, "the run, with 250.5ms of delays")
	assert.Equal(t, []any{"m-1", "m-2", "m-3", "m-4"}, messageIDs(api))
	got := r.output(t)
	assert.Equal(t, int64(4), got.SentBatches)
	assert.Equal(t, int64(4), got.Delivered)
}

func TestDebugFlag(t *testing.T) {
	api := newTrackingAPI(t)
	b, err := json.Marshal(api.doc(nil, seq(0, track("m-1"))))
	require.NoError(t, err)
	r := runCLI(t, "", "--debug", "--input", string(b))
	require.Equal(t, exitSuccess, r.code, "stderr %s", r.stderr)
	r.output(t)
}

func TestHelp(t *testing.T) {
	r := runCLI(t, "", "-h")
	assert.Equal(t, exitSuccess, r.code)
	assert.Empty(t, r.stdout, "help is not a run: nothing on stdout")
	assert.Contains(t, r.stderr, "usage: e2e-cli")
}

// TestSuccessOutputHasNoError: a run that delivered every event prints
// error as null, and errors as an empty array.
func TestSuccessOutputHasNoError(t *testing.T) {
	api := newTrackingAPI(t)
	r := runInput(t, api.doc(nil, seq(0, track("m-1"), track("m-2"))))
	require.Equal(t, exitSuccess, r.code, "stderr: %s", r.stderr)
	keys := r.keys(t)
	assert.Equal(t, "null", string(keys["error"]))
	assert.Equal(t, "[]", string(keys["errors"]))
	got := r.output(t)
	assert.True(t, got.Success)
	assert.Nil(t, got.Error)
}

// TestFailureOutputHasErrorAndErrors: a run that did not deliver every
// event prints errors as an array of each distinct error, and error as one
// string: the count and the first of errors, then how many others there
// are.
func TestFailureOutputHasErrorAndErrors(t *testing.T) {
	api := newTrackingAPI(t)
	api.status.Store(http.StatusBadRequest)
	noEvent := map[string]any{"type": "track", "userId": "u1"}
	r := runInput(t, api.doc(nil, seq(0, track("m-1"), noEvent, track("m-2"))))
	require.Equal(t, exitFailure, r.code, "stderr: %s", r.stderr)

	keys := r.keys(t)
	require.Contains(t, keys, "error")
	require.Contains(t, keys, "errors")
	assert.True(t, strings.HasPrefix(string(keys["error"]), `"`), "error is not a JSON string: %s", keys["error"])
	assert.True(t, strings.HasPrefix(string(keys["errors"]), `[`), "errors is not a JSON array: %s", keys["errors"])

	got := r.output(t)
	assert.False(t, got.Success)
	assert.Equal(t, int64(3), got.Failed)
	// The refused event's error is seen first, at Enqueue; the batch's 400
	// comes at Close.
	require.Len(t, got.Errors, 2)
	assert.Contains(t, got.Errors[0], analytics.Track{UserId: "u1"}.Validate().Error())
	assert.Contains(t, got.Errors[1], "HTTP 400")
	require.NotNil(t, got.Error)
	assert.Equal(t, "3 of 3 events failed: "+got.Errors[0]+" (and 1 other distinct error, listed in errors)", *got.Error)
}

// TestOneErrorSummary: when every event failed alike, error is the count
// and that one error.
func TestOneErrorSummary(t *testing.T) {
	api := newTrackingAPI(t)
	api.status.Store(http.StatusBadRequest)
	r := runInput(t, api.doc(nil, seq(0, track("m-1"))))
	require.Equal(t, exitFailure, r.code, "stderr: %s", r.stderr)
	got := r.output(t)
	require.Len(t, got.Errors, 1)
	require.NotNil(t, got.Error)
	assert.Equal(t, "1 of 1 event failed: "+got.Errors[0], *got.Error)
}

func TestSummary(t *testing.T) {
	tests := []struct {
		name                     string
		total, delivered, failed int64
		errs                     []string
		want                     string
	}{
		{"one event", 1, 0, 1, []string{"E1"}, "1 of 1 event failed: E1"},
		{"one error", 5, 2, 3, []string{"E1"}, "3 of 5 events failed: E1"},
		{"two errors", 5, 0, 5, []string{"E1", "E2"}, "5 of 5 events failed: E1 (and 1 other distinct error, listed in errors)"},
		{"three errors", 4, 1, 3, []string{"E1", "E2", "E3"}, "3 of 4 events failed: E1 (and 2 other distinct errors, listed in errors)"},
		{"none reported", 4, 1, 0, nil, "3 of 4 events were not delivered"},
		{"none reported of one", 1, 0, 0, nil, "1 of 1 event was not delivered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, summary(tt.total, tt.delivered, tt.failed, tt.errs))
		})
	}
}
