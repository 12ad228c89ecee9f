package analyticstest

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// exampleScript is the script of ParseScript's doc comment.
const exampleScript = `{
  "responses": [
    {"status": 503},
    {"status": 429, "headers": {"Retry-After": "1"}},
    {"action": "drop"},
    {"action": "close_before_read"},
    {"action": "partial"},
    {"status": 200, "delayMs": 1500, "body": "{}"}
  ],
  "rules": [{"ifEventsOver": 10, "then": {"status": 413}}],
  "default": {"status": 200}
}`

func TestParseScript(t *testing.T) {
	sc, err := ParseScript([]byte(exampleScript))
	require.NoError(t, err)
	want := []Answer{
		{Status: 503},
		{Status: 429, Header: http.Header{"Retry-After": {"1"}}},
		{Drop: true},
		{CloseBeforeRead: true},
		{Partial: true},
		{Status: 200, Delay: 1500 * time.Millisecond, Body: "{}"},
	}
	assert.Equal(t, want, sc.Responses)
	assert.Equal(t, Status(200), sc.Default)
	require.Len(t, sc.Rules, 1, "rules")
	rule := sc.Rules[0]
	assert.Equal(t, Status(413), rule(Request{Events: make([]map[string]any, 11)}), "11 events")
	assert.Equal(t, Answer{Default: true}, rule(Request{Events: make([]map[string]any, 10)}), "10 events: the default")
}

func TestParseScriptDetails(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       Script
	}{
		{"empty", `{}`, Script{}},
		{"repeated header", `{"responses": [{"status": 503, "headers": {"retry-after": ["1", "2"], "X-A": "b"}}]}`,
			Script{Responses: []Answer{{Status: 503, Header: http.Header{"Retry-After": {"1", "2"}, "X-A": {"b"}}}}}},
		{"respond is the default action", `{"responses": [{"action": "respond", "body": "x"}]}`,
			Script{Responses: []Answer{{Body: "x"}}}},
		{"delay before a drop", `{"default": {"action": "drop", "delayMs": 2.5}}`,
			Script{Default: Answer{Drop: true, Delay: 2500 * time.Microsecond}}},
		{"status of a partial", `{"responses": [{"action": "partial", "status": 503}]}`,
			Script{Responses: []Answer{{Partial: true, Status: 503}}}},
		{"status bounds", `{"responses": [{"status": 100}, {"status": 599}]}`,
			Script{Responses: []Answer{{Status: 100}, {Status: 599}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseScript([]byte(tc.json))
			require.NoError(t, err)
			assert.Equal(t, tc.want, *sc)
		})
	}
}

func TestParseScriptErrors(t *testing.T) {
	for _, tc := range []struct {
		name, json string
		want       []string // all in the error
	}{
		{"unknown top-level field", `{"respones": []}`, []string{`"respones"`}},
		{"unknown answer field", `{"responses": [{}, {"status": 200, "delay": 5}]}`, []string{"responses[1]", `"delay"`}},
		{"unknown rule field", `{"rules": [{"ifEventsOver": 1, "then": {}, "else": {}}]}`, []string{"rules[0]", `"else"`}},
		{"unknown field in then", `{"rules": [{"ifEventsOver": 1, "then": {"code": 413}}]}`, []string{"rules[0]", "then", `"code"`}},
		{"unknown default field", `{"default": {"stat": 200}}`, []string{"default", `"stat"`}},
		{"bad action", `{"responses": [{}, {}, {"action": "explode"}]}`, []string{"responses[2]", `"explode"`}},
		{"status above 599", `{"responses": [{"status": 600}]}`, []string{"responses[0]", "600", "100–599"}},
		{"status below 100", `{"default": {"status": 99}}`, []string{"default", "99"}},
		{"status 0", `{"responses": [{"status": 0}]}`, []string{"responses[0]", "status 0"}},
		{"status of a drop", `{"responses": [{"action": "drop", "status": 200}]}`, []string{"responses[0]", "drop", "status"}},
		{"body of a close", `{"responses": [{"action": "close_before_read", "body": "x"}]}`, []string{"responses[0]", "body"}},
		{"headers of a partial", `{"responses": [{"action": "partial", "headers": {"A": "b"}}]}`, []string{"responses[0]", "headers"}},
		{"status as a string", `{"responses": [{"status": "200"}]}`, []string{"responses[0]", `"status"`, "integer"}},
		{"responses as an object", `{"responses": {}}`, []string{`"responses"`, "array"}},
		{"header number", `{"responses": [{"headers": {"Retry-After": 1}}]}`, []string{"responses[0]", "string"}},
		{"header null", `{"responses": [{"headers": {"Retry-After": null}}]}`, []string{"responses[0]", "null"}},
		{"header no value", `{"responses": [{"headers": {"Retry-After": []}}]}`, []string{"responses[0]", "no value"}},
		{"header bad name", `{"responses": [{"headers": {"Retry After": "1"}}]}`, []string{"responses[0]", `"Retry After"`}},
		{"header line break", `{"responses": [{"headers": {"A": "1\r\nB: 2"}}]}`, []string{"responses[0]", "line break"}},
		{"negative delay", `{"responses": [{"delayMs": -1}]}`, []string{"responses[0]", "delayMs"}},
		{"rule without condition", `{"rules": [{"then": {"status": 413}}]}`, []string{"rules[0]", "ifEventsOver"}},
		{"rule without then", `{"rules": [{"ifEventsOver": 3}]}`, []string{"rules[0]", "then"}},
		{"negative ifEventsOver", `{"rules": [{"ifEventsOver": -1, "then": {}}]}`, []string{"rules[0]", "negative"}},
		{"null answer", `{"responses": [null]}`, []string{"responses[0]", "object"}},
		{"not an object", `[]`, []string{"object"}},
		{"null", `null`, []string{"object"}},
		{"trailing data", `{} {}`, []string{"trailing"}},
		{"not JSON", `{"responses": [`, []string{"mockapi: script"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, err := ParseScript([]byte(tc.json))
			require.Error(t, err, "parsed %+v", sc)
			for _, w := range tc.want {
				assert.ErrorContains(t, err, w)
			}
		})
	}
}
