package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
)

// wrap puts events into a minimal valid document, so that each bad-input
// case below differs from a good input in one place.
func wrap(events string) string {
	return `{"writeKey": "` + testWriteKey + `", "apiHost": "http://127.0.0.1:9", "sequences": [{"events": [` + events + `]}]}`
}

func withConfig(config string) string {
	return `{"writeKey": "` + testWriteKey + `", "apiHost": "http://127.0.0.1:9", "sequences": [], "config": ` + config + `}`
}

const ok = `{"type": "track", "userId": "u1", "event": "E"}`

func TestBadInput(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  string // on stderr, after "bad input: "
	}{
		{"empty", "", "the input is empty"},
		{"spaces only", " \n\t", "the input is empty"},
		{"not JSON", "hello", "not JSON: invalid character 'h'"},
		{"truncated", `{"writeKey": "x", "sequences": [`, "not JSON: unexpected end of input"},
		{"trailing garbage", wrap(ok) + " x", "trailing data after the JSON value"},
		{"trailing second value", wrap(ok) + " {}", "trailing data after the JSON value"},
		{"top-level array", "[]", "want a JSON object at the top level, got array"},
		{"top-level null", "null", "want a JSON object at the top level, got null"},
		{"writeKey missing", `{"sequences": []}`, "writeKey: required"},
		{"writeKey empty", `{"writeKey": "", "sequences": []}`, "writeKey: required, got an empty string"},
		{"writeKey number", `{"writeKey": 5, "sequences": []}`, "writeKey: want a string, got number"},
		{"writeKey null", `{"writeKey": null, "sequences": []}`, "writeKey: want a string, got null"},
		{"apiHost number", `{"writeKey": "k", "apiHost": 8080, "sequences": []}`, "apiHost: want a string, got number"},
		{"sequences missing", `{"writeKey": "k"}`, "sequences: required"},
		{"sequences object", `{"writeKey": "k", "sequences": {}}`, "sequences: want an array, got object"},
		{"sequence not object", `{"writeKey": "k", "sequences": [[]]}`, "sequences[0]: want an object, got array"},
		{"events missing", `{"writeKey": "k", "sequences": [{"delayMs": 0}]}`, "sequences[0].events: required"},
		{"events string", `{"writeKey": "k", "sequences": [{"events": "x"}]}`, "sequences[0].events: want an array, got string"},
		{"delayMs string", `{"writeKey": "k", "sequences": [{"delayMs": "soon", "events": []}]}`, "sequences[0].delayMs: want a non-negative number, got string"},
		{"delayMs negative", `{"writeKey": "k", "sequences": [{"delayMs": -1, "events": []}]}`, "sequences[0].delayMs: want a non-negative number, got -1"},
		{"delayMs negative huge", `{"writeKey": "k", "sequences": [{"delayMs": -1e400, "events": []}]}`, "sequences[0].delayMs: want a non-negative number"},
		{"delayMs too fine", `{"writeKey": "k", "sequences": [{"delayMs": 1e-7, "events": []}]}`, "sequences[0].delayMs: 1e-7 milliseconds is finer than a nanosecond"},
		{"delayMs too long", `{"writeKey": "k", "sequences": [{"delayMs": 1e300, "events": []}]}`, "sequences[0].delayMs: 1e300 milliseconds is out of range"},
		{"event not object", wrap(`"track"`), "sequences[0].events[0]: want an object, got string"},
		{"type missing", wrap(`{"userId": "u"}`), "sequences[0].events[0].type: required"},
		{"type number", wrap(`{"type": 1}`), "sequences[0].events[0].type: want a string, got number"},
		{"type capitalized", wrap(`{"type": "Track"}`), `sequences[0].events[0].type: unknown event type "Track"`},
		{"type unknown", wrap(ok + `, ` + ok + `, {"type": "click"}`), `sequences[0].events[2].type: unknown event type "click"`},
		{"userId number", wrap(ok + `, ` + ok + `, {"type": "track", "userId": 5}`), "sequences[0].events[2].userId: want a string, got number"},
		{"messageId bool", wrap(`{"type": "track", "messageId": true}`), "sequences[0].events[0].messageId: want a string, got boolean"},
		{"event on identify, wrong type", wrap(`{"type": "identify", "userId": "u", "event": 5}`), "sequences[0].events[0].event: want a string, got number"},
		{"properties string", wrap(`{"type": "track", "properties": "x"}`), "sequences[0].events[0].properties: want an object, got string"},
		{"traits array", wrap(`{"type": "identify", "traits": []}`), "sequences[0].events[0].traits: want an object, got array"},
		{"integrations number", wrap(`{"type": "track", "integrations": 1}`), "sequences[0].events[0].integrations: want an object, got number"},
		{"context string", wrap(`{"type": "track", "context": "x"}`), "sequences[0].events[0].context: want an object, got string"},
		{"context member type", wrap(`{"type": "track", "context": {"app": {"name": 5}}}`), "sequences[0].events[0].context.app.name: want a string, got number"},
		{"context ip", wrap(`{"type": "track", "context": {"ip": "not-an-ip"}}`), `sequences[0].events[0].context.ip: want an IP address, got "not-an-ip"`},
		{"context ip number", wrap(`{"type": "track", "context": {"ip": 1}}`), "sequences[0].events[0].context.ip: want a string, got number"},
		{"context traits", wrap(`{"type": "track", "context": {"traits": "x"}}`), "sequences[0].events[0].context.traits: want an object, got string"},
		{"timestamp not RFC 3339", wrap(`{"type": "track", "timestamp": "yesterday"}`), `sequences[0].events[0].timestamp: want an RFC 3339 time, got "yesterday"`},
		{"timestamp number", wrap(`{"type": "track", "timestamp": 1700000000}`), "sequences[0].events[0].timestamp: want a string, got number"},
		{"second sequence", `{"writeKey": "k", "sequences": [{"events": []}, {"events": [{"type": "track", "userId": []}]}]}`, "sequences[1].events[0].userId: want a string, got array"},
		{"config array", withConfig(`[]`), "config: want an object, got array"},
		{"flushAt string", withConfig(`{"flushAt": "ten"}`), "config.flushAt: want an integer, got string"},
		{"flushAt fraction", withConfig(`{"flushAt": 10.5}`), "config.flushAt: want an integer, got 10.5"},
		{"maxRetries fraction", withConfig(`{"maxRetries": 1e-1}`), "config.maxRetries: want an integer, got 1e-1"},
		{"maxRetries out of range", withConfig(`{"maxRetries": 1e30}`), "config.maxRetries: 1e30 is out of range"},
		{"gzip string", withConfig(`{"gzip": "yes"}`), "config.gzip: want a boolean, got string"},
		{"gzip number", withConfig(`{"gzip": 1}`), "config.gzip: want a boolean, got number"},
		{"timeout string", withConfig(`{"timeout": "10"}`), "config.timeout: want a number of seconds, got string"},
		{"flushInterval bool", withConfig(`{"flushInterval": true}`), "config.flushInterval: want a number of milliseconds, got boolean"},
		{"timeout too long", withConfig(`{"timeout": 1e12}`), "config.timeout: 1e12 seconds is out of range"},
		{"backoffBase too fine", withConfig(`{"backoffBase": 0.0000001}`), "config.backoffBase: 0.0000001 milliseconds is finer than a nanosecond"},
		// Values of the right type that New refuses: its error names the option.
		{"flushAt 0", withConfig(`{"flushAt": 0}`), "analytics: invalid option FlushAt: must be at least 1, got 0"},
		{"flushAt over Segment's batch limit", withConfig(`{"flushAt": 10000}`), "analytics: invalid option FlushAt: must be at most 2500 (Segment's documented limit"},
		{"maxRetries negative", withConfig(`{"maxRetries": -1}`), "analytics: invalid option RetryCount"},
		{"timeout 0", withConfig(`{"timeout": 0}`), "analytics: invalid option RequestTimeout"},
		{"backoffCap negative", withConfig(`{"backoffCap": -5}`), "analytics: invalid option BackoffCap"},
		{"maxConcurrentRequests 0", withConfig(`{"maxConcurrentRequests": 0}`), "analytics: invalid option MaxConcurrentRequests"},
		{"rateLimitRetryAfterCap 0", withConfig(`{"rateLimitRetryAfterCap": 0}`), "analytics: invalid option RateLimitRetryAfterCap"},
		{"apiHost not http", `{"writeKey": "k", "apiHost": "ftp://x", "sequences": []}`, "analytics: invalid option Endpoint"},
		{"apiHost empty", `{"writeKey": "k", "apiHost": "", "sequences": []}`, "analytics: invalid option Endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", "--input", tt.input)
			assertBadInput(t, r, tt.want)
		})
	}
}

// assertBadInput checks a bad-input run: exit 2, the reason (containing
// want) on one line of stderr after "bad input: ", and the same line as
// the error of the JSON line on stdout, which sent nothing.
func assertBadInput(t *testing.T, r cliRun, want string) {
	t.Helper()
	assert.Equal(t, exitBadInput, r.code, "stderr: %s", r.stderr)
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "stderr has not one line: %q", r.stderr)
	assert.True(t, strings.HasPrefix(r.stderr, "bad input: "), "stderr = %q", r.stderr)
	assert.Contains(t, r.stderr, want)
	assertBadInputOutput(t, r, strings.TrimSuffix(r.stderr, "\n"))
}

// assertBadInputOutput checks the stdout of a bad-input run: one JSON line
// of a run that sent nothing, whose error and only errors entry is reason.
func assertBadInputOutput(t *testing.T, r cliRun, reason string) {
	t.Helper()
	got := r.output(t)
	assert.False(t, got.Success)
	assert.Zero(t, got.SentBatches)
	assert.Zero(t, got.Delivered)
	assert.Zero(t, got.Failed)
	assert.Equal(t, []string{reason}, got.Errors)
	if assert.NotNil(t, got.Error) {
		assert.Equal(t, reason, *got.Error)
	}
}

func TestBadArguments(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want string // on stderr, and in the error on stdout
	}{
		{"no --input", nil, "bad input: --input is required"},
		{"missing file", []string{"--input", "@" + filepath.Join(dir, "nope.json")}, "bad input: --input @" + filepath.Join(dir, "nope.json") + ": open "},
		{"directory", []string{"--input", "@" + dir}, "bad input: --input @" + dir},
		{"extra argument", []string{"--input", "{}", "more"}, "bad input: 1 unexpected argument(s) after the flags"},
		{"input as an argument", []string{`{"writeKey": "` + testWriteKey + `"}`}, "bad input: 1 unexpected argument(s) after the flags"},
		{"unknown flag", []string{"--inptu", "{}"}, "flag provided but not defined: -inptu"},
		{"--input without value", []string{"--input"}, "flag needs an argument: -input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runCLI(t, "", tt.args...)
			assert.Equal(t, exitBadInput, r.code, "stderr: %s", r.stderr)
			assert.Contains(t, r.stderr, tt.want)
			got := r.output(t)
			assert.False(t, got.Success)
			assert.Zero(t, got.SentBatches)
			require.NotNil(t, got.Error)
			assert.True(t, strings.HasPrefix(*got.Error, "bad input: "), "error = %q", *got.Error)
			assert.Contains(t, *got.Error, strings.TrimPrefix(tt.want, "bad input: "))
			assert.Equal(t, []string{*got.Error}, got.Errors)
		})
	}
}

// TestBadInputSendsNothing: an error late in the input stops the run before
// the first, valid, sequence is sent.
func TestBadInputSendsNothing(t *testing.T) {
	api := newTrackingAPI(t)
	d := api.doc(map[string]any{"flushAt": 1},
		seq(0, track("m-1"), track("m-2")),
		seq(0, track("m-3"), map[string]any{"type": "track", "userId": 5}))
	r := runInput(t, d)
	assertBadInput(t, r, "sequences[1].events[1].userId: want a string, got number")
	assert.Empty(t, api.received(), "requests for bad input")
}

func TestConfigConversions(t *testing.T) {
	tests := []struct {
		config string
		want   settings
	}{
		{`{}`, settings{}},
		{`{"flushAt": 250, "maxRetries": 10, "maxConcurrentRequests": 8, "gzip": true}`,
			settings{"flushAt": 250, "maxRetries": 10, "maxConcurrentRequests": 8, "gzip": true}},
		{`{"maxRetries": 0, "gzip": false}`, settings{"maxRetries": 0, "gzip": false}},
		// Integers written as decimals or with exponents.
		{`{"flushAt": 10.0, "maxRetries": 1e1, "maxConcurrentRequests": 0.8e1}`,
			settings{"flushAt": 10, "maxRetries": 10, "maxConcurrentRequests": 8}},
		{`{"flushAt": 250E0, "maxRetries": -0}`, settings{"flushAt": 250, "maxRetries": 0}},
		// Milliseconds.
		{`{"flushInterval": 5000, "backoffBase": 500, "backoffCap": 60000}`,
			settings{"flushInterval": 5 * time.Second, "backoffBase": 500 * time.Millisecond, "backoffCap": time.Minute}},
		{`{"flushInterval": 0.5, "backoffBase": 1.5, "backoffCap": 0.000001}`,
			settings{"flushInterval": 500 * time.Microsecond, "backoffBase": 1500 * time.Microsecond, "backoffCap": time.Nanosecond}},
		// Seconds.
		{`{"timeout": 10, "maxTotalBackoffDuration": 43200, "maxRateLimitDuration": 43200, "rateLimitRetryAfterCap": 300}`,
			settings{"timeout": 10 * time.Second, "maxTotalBackoffDuration": 12 * time.Hour, "maxRateLimitDuration": 12 * time.Hour, "rateLimitRetryAfterCap": 5 * time.Minute}},
		{`{"timeout": 0.25, "maxTotalBackoffDuration": 0.1, "maxRateLimitDuration": 1.000000001, "rateLimitRetryAfterCap": 2.5e-3}`,
			settings{"timeout": 250 * time.Millisecond, "maxTotalBackoffDuration": 100 * time.Millisecond, "maxRateLimitDuration": time.Second + time.Nanosecond, "rateLimitRetryAfterCap": 2500 * time.Microsecond}},
		// Exact where float64 is not: 9223372036.854775807 s is the largest
		// time.Duration, to the nanosecond.
		{`{"maxTotalBackoffDuration": 9223372036.854775807}`, settings{"maxTotalBackoffDuration": time.Duration(1<<63 - 1)}},
		// Negative values pass through for New to refuse (it names the option).
		{`{"timeout": -1}`, settings{"timeout": -time.Second}},
		// null keeps the default.
		{`{"flushAt": null, "timeout": null, "gzip": null}`, settings{}},
	}
	for _, tt := range tests {
		t.Run(tt.config, func(t *testing.T) {
			in, _, err := decodeInput([]byte(withConfig(tt.config)))
			require.NoError(t, err)
			assert.Equal(t, tt.want, in.config)
			assert.Len(t, in.config.options(), len(tt.want), "options")
		})
	}
}

func TestDelayMs(t *testing.T) {
	doc := `{"writeKey": "k", "sequences": [{"events": []}, {"delayMs": 0, "events": []}, {"delayMs": 1.5, "events": []}, {"delayMs": 250, "events": []}, {"delayMs": null, "events": []}]}`
	in, _, err := decodeInput([]byte(doc))
	require.NoError(t, err)
	want := []time.Duration{0, 0, 1500 * time.Microsecond, 250 * time.Millisecond, 0}
	var got []time.Duration
	for _, s := range in.sequences {
		got = append(got, s.delay)
	}
	assert.Equal(t, want, got, "the sequences' delays")
}

func TestWarnings(t *testing.T) {
	doc := `{"writeKey": "k", "extra": 1, "sequences": [
		{"events": [{"type": "track", "userId": "u", "event": "E", "sentAt": "x", "foo": 1},
		            {"type": "track", "userId": "u", "event": "E", "foo": 2}], "repeat": 2}],
		"config": {"flushAt": 1, "compressionLevel": 9}}`
	in, warns, err := decodeInput([]byte(doc))
	require.NoError(t, err)
	want := []string{
		`ignoring unknown top-level key "extra"`,
		`ignoring unknown sequence key "repeat" (first in sequences[0])`,
		`ignoring unknown event field "foo" (first in sequences[0].events[0])`,
		`ignoring unknown event field "sentAt" (first in sequences[0].events[0])`,
		`ignoring unknown config key "compressionLevel" (first in config)`,
	}
	assert.Equal(t, want, warns)
	assert.Equal(t, 2, in.total(), "events decoded")
	assert.Equal(t, 1, in.config["flushAt"])
}

func TestEmptySequences(t *testing.T) {
	api := newTrackingAPI(t)
	r := runInput(t, api.doc(nil))
	require.Equal(t, exitSuccess, r.code, "stderr %s", r.stderr)
	assert.Equal(t, result{Success: true, Errors: []string{}}, r.output(t))
}

// TestMessageIDAndTimestampKept checks the decoded message itself; the
// TestEventTypes run checks what arrives.
func TestMessageIDAndTimestampKept(t *testing.T) {
	in, _, err := decodeInput([]byte(wrap(`{"type": "track", "userId": "u", "event": "E", "messageId": "m-42", "timestamp": "2024-05-06T07:08:09.123456789+02:00"}`)))
	require.NoError(t, err)
	require.IsType(t, analytics.Track{}, in.sequences[0].events[0].msg)
	m := in.sequences[0].events[0].msg.(analytics.Track)
	assert.Equal(t, "m-42", m.MessageId)
	want := time.Date(2024, 5, 6, 5, 8, 9, 123456789, time.UTC)
	assert.True(t, m.Timestamp.Equal(want), "timestamp %v, want %v", m.Timestamp, want)
}

func TestInputFromFileAndStdin(t *testing.T) {
	api := newTrackingAPI(t)
	b, err := json.Marshal(api.doc(nil, seq(0, track("m-file"))))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "input.json")
	require.NoError(t, os.WriteFile(path, b, 0o600))
	fromFile := runCLI(t, "", "--input", "@"+path)
	fromStdin := runCLI(t, string(b), "--input", "-")
	for name, r := range map[string]cliRun{"@file": fromFile, "-": fromStdin} {
		if !assert.Equal(t, exitSuccess, r.code, "%s: stderr %s", name, r.stderr) {
			continue
		}
		got := r.output(t)
		assert.Equal(t, int64(1), got.Delivered, name)
		assert.True(t, got.Success, name)
	}
	assert.Len(t, api.events(), 2, "events the API received")
}
