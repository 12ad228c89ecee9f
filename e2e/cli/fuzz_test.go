package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pathPattern is the grammar of the JSON paths InputError names: member
// names the CLI knows (never arbitrary input) and array indexes.
var pathPattern = regexp.MustCompile(`^[A-Za-z]+(\[\d+\])*(\.[A-Za-z]+(\[\d+\])*)*$`)

const exampleInput = `{
  "writeKey": "wk",
  "apiHost": "http://127.0.0.1:8080",
  "sequences": [
    {"delayMs": 0, "events": [
      {"type": "track", "userId": "u1", "event": "Signed Up",
       "properties": {"plan": "pro"}, "messageId": "m-1"}
    ]}
  ],
  "config": {
    "flushAt": 250, "flushInterval": 5000, "maxRetries": 10, "timeout": 10,
    "maxTotalBackoffDuration": 43200, "maxRateLimitDuration": 43200,
    "rateLimitRetryAfterCap": 300, "backoffBase": 500, "backoffCap": 60000,
    "gzip": true, "maxConcurrentRequests": 8
  }
}`

// FuzzInput: decodeInput never panics, and returns either a complete input
// or an *InputError whose path is well-formed.
func FuzzInput(f *testing.F) {
	for _, seed := range []string{
		exampleInput,
		exampleInput + "x",
		exampleInput[:len(exampleInput)/2],
		`{"writeKey": "wk", "sequences": [{"events": [{"type": "Track"}]}]}`,
		`{"writeKey": "wk", "sequences": [{"events": [{"type": "track", "userId": 5}]}]}`,
		`{"writeKey": "wk", "sequences": [{"events": [{"type": "page", "properties": "x"}]}]}`,
		`{"writeKey": "wk", "sequences": [{"delayMs": "soon", "events": []}]}`,
		`{"writeKey": "wk", "sequences": [{"delayMs": -1e400, "events": []}]}`,
		`{"writeKey": "wk", "sequences": [], "config": {"flushAt": "ten", "gzip": "yes"}}`,
		`{"writeKey": "wk", "sequences": [], "config": {"flushAt": 10.5, "timeout": 1e-10}}`,
		`{"writeKey": "wk", "sequences": [], "config": {"maxRetries": 1e999999999999}}`,
		`{"writeKey": "wk", "sequences": [{"events": [{"type": "group", "context": {"ip": "x", "app": {"name": 1}}}]}]}`,
		`{"writeKey": "wk", "sequences": [{"events": [{"type": "alias", "timestamp": "2024-13-01T00:00:00Z"}]}]}`,
		`{"writeKey": "", "sequences": null}`,
		`[1, 2, 3]`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		in, warns, err := decodeInput(data)
		if err != nil {
			var ie *InputError
			require.ErrorAs(t, err, &ie)
			require.NotEmpty(t, ie.Reason, "an error with no reason: %v", err)
			if ie.Path != "" {
				require.Regexp(t, pathPattern, ie.Path, "a malformed path in %v", err)
			}
			require.Nil(t, in, "error %v came with an input", err)
			require.Nil(t, warns, "error %v came with warnings", err)
			return
		}
		require.NotNil(t, in, "no error, but no input")
		require.NotEmpty(t, in.writeKey, "no error, but no write key")
		for i, s := range in.sequences {
			require.GreaterOrEqual(t, s.delay, time.Duration(0), "sequences[%d] has a negative delay", i)
			for j, ev := range s.events {
				require.NotNil(t, ev.msg, "sequences[%d].events[%d] has no message", i, j)
				require.Regexp(t, pathPattern, ev.path, "sequences[%d].events[%d] has a malformed path", i, j)
			}
		}
		for k, v := range in.config {
			key, ok := configKeys[k]
			require.True(t, ok, "unknown config key %q kept", k)
			switch v.(type) {
			case int:
				ok = key.unit == count
			case time.Duration:
				ok = key.unit == millisecond || key.unit == second
			case bool:
				ok = key.unit == boolean
			default:
				ok = false
			}
			require.True(t, ok, "config %s = %#v (%T) does not match its unit", k, v, v)
		}
		_ = in.config.options()
	})
}
