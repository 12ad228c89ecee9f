package analyticstest

// The control API over a socket, as a harness in another process uses it.

import (
	"context"
	"encoding/json"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// control sends a control request and returns the status and body.
func control(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	resp, b, err := doRead(c, req)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// wireRecord is one element of GET /_requests decoded as a harness in
// another language would: plain JSON types.
type wireRecord struct {
	At         time.Time           `json:"at"`
	Method     string              `json:"method"`
	Path       string              `json:"path"`
	Headers    map[string][]string `json:"headers"`
	Body       string              `json:"body"`
	Events     []map[string]any    `json:"events"`
	MessageIDs []string            `json:"messageIds"`
	SentAt     string              `json:"sentAt"`
	Context    map[string]any      `json:"context"`
	Status     int                 `json:"status"`
	Rejected   int                 `json:"rejected"`
	Error      *string             `json:"error"`
}

func TestControlRequestsShape(t *testing.T) {
	s := New().Script(Status(503))
	l := start(t, s)
	c := plainClient(t)
	_, _, err := post(c, l.URL+"/v1/batch", gzipped(t, batch("m1", "m2")), http.Header{"Content-Encoding": {"gzip"}, "X-Retry-Count": {"1"}})
	require.NoError(t, err)
	_, _, err = post(c, l.URL+"/v1/batch", []byte("nope"), nil)
	require.NoError(t, err)
	code, body := control(t, c, http.MethodGet, l.URL+"/_requests", "")
	require.Equal(t, 200, code, "GET /_requests: %s", body)

	var raw []map[string]json.RawMessage
	require.NoError(t, json.Unmarshal([]byte(body), &raw), "GET /_requests is a JSON array of objects:\n%s", body)
	require.Len(t, raw, 2, "records: control requests are not recorded")
	wantKeys := []string{"at", "body", "context", "error", "events", "headers", "messageIds", "method", "path", "rejected", "sentAt", "status"}
	for i, r := range raw {
		assert.Equal(t, wantKeys, slices.Sorted(maps.Keys(r)), "keys of record %d", i)
	}

	var recs []wireRecord
	require.NoError(t, json.Unmarshal([]byte(body), &recs))
	first, second := recs[0], recs[1]
	assert.False(t, first.At.IsZero(), "first: at")
	assert.Equal(t, "POST", first.Method, "first")
	assert.Equal(t, "/v1/batch", first.Path, "first")
	assert.Equal(t, []string{"1"}, first.Headers["X-Retry-Count"], "first")
	assert.Equal(t, batch("m1", "m2"), first.Body, "first: the body, decoded")
	require.Len(t, first.Events, 2, "first: events")
	assert.Equal(t, "m1", first.Events[0]["messageId"], "first")
	assert.Equal(t, []string{"m1", "m2"}, first.MessageIDs, "first")
	assert.Equal(t, testSentAt, first.SentAt, "first")
	assert.NotNil(t, first.Context["library"], "first: context")
	assert.Equal(t, 503, first.Status, "first")
	assert.Zero(t, first.Rejected, "first")
	assert.Nil(t, first.Error, "first")

	assert.Equal(t, "nope", second.Body, "second")
	assert.Equal(t, []map[string]any{}, second.Events, "second: an empty array, not null")
	assert.Equal(t, []string{}, second.MessageIDs, "second: an empty array, not null")
	assert.Nil(t, second.Context, "second: context null")
	assert.Equal(t, 400, second.Status, "second: refused")
	require.NotNil(t, second.Error, "second: error")
	assert.Contains(t, *second.Error, "not JSON", "second")

	// A Go harness decodes the same body into []Request.
	var reqs []Request
	require.NoError(t, json.Unmarshal([]byte(body), &reqs))
	require.Len(t, reqs, 2, "[]Request")
	assert.Equal(t, []string{"m1", "m2"}, reqs[0].MessageIDs(), "[]Request")
	assert.Error(t, reqs[1].Err, "[]Request")
}

func TestControlRequestsEmptyIsAnArray(t *testing.T) {
	l := start(t, New())
	code, body := control(t, plainClient(t), http.MethodGet, l.URL+"/_requests", "")
	assert.Equal(t, 200, code)
	assert.Equal(t, "[]", strings.TrimSpace(body))
}

func TestControlReset(t *testing.T) {
	s := New().Script(Status(500), Status(500)).Default(Status(503))
	l := start(t, s)
	c := plainClient(t)
	resp, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	assert.Equal(t, 500, resp.StatusCode, "before reset")
	code, body := control(t, c, http.MethodPost, l.URL+"/_reset", "")
	require.Equal(t, http.StatusNoContent, code, "POST /_reset: %s", body)
	assert.Empty(t, s.Requests(), "after reset")
	resp, _, err = post(c, l.URL+"/v1/batch", []byte(batch("m2")), nil)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode, "after reset: script and default cleared")
}

func TestControlScript(t *testing.T) {
	s := New().Script(Status(500))
	l := start(t, s)
	c := plainClient(t)
	script := `{"responses": [{"status": 429, "headers": {"Retry-After": ["1", "2"]}}], "rules": [{"ifEventsOver": 1, "then": {"status": 413}}], "default": {"status": 202}}`
	code, body := control(t, c, http.MethodPost, l.URL+"/_script", script)
	require.Equal(t, http.StatusNoContent, code, "POST /_script: %s", body)
	var got []int
	for i, b := range []string{batch("a"), batch("b", "c"), batch("d")} {
		resp, _, err := post(c, l.URL+"/v1/batch", []byte(b), nil)
		require.NoError(t, err)
		got = append(got, resp.StatusCode)
		if i == 0 {
			assert.Equal(t, []string{"1", "2"}, resp.Header["Retry-After"], "the 429's Retry-After")
		}
	}
	assert.Equal(t, []int{429, 413, 202}, got, "the loaded script, the old one replaced")

	code, body = control(t, c, http.MethodPost, l.URL+"/_script", `{"responses": [{"action": "explode"}]}`)
	assert.Equal(t, http.StatusBadRequest, code, "a bad script")
	assert.Contains(t, body, "responses[0]", "a bad script")
	assert.Contains(t, body, "explode", "a bad script")
	resp, _, err := post(c, l.URL+"/v1/batch", []byte(batch("e")), nil)
	require.NoError(t, err)
	assert.Equal(t, 202, resp.StatusCode, "after a bad script: the script before it kept")
}

func TestControlErrors(t *testing.T) {
	s := New()
	l := start(t, s)
	c := plainClient(t)
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{http.MethodPost, "/_requests", http.StatusMethodNotAllowed},
		{http.MethodGet, "/_reset", http.StatusMethodNotAllowed},
		{http.MethodGet, "/_script", http.StatusMethodNotAllowed},
		{http.MethodGet, "/_nothing", http.StatusNotFound},
		{http.MethodPost, "/_script", http.StatusBadRequest}, // empty body
	} {
		code, body := control(t, c, tc.method, l.URL+tc.path, "")
		assert.Equal(t, tc.code, code, "%s %s: %s", tc.method, tc.path, body)
		errCode, _ := errorFields(t, body)
		assert.Equal(t, errorCode(tc.code), errCode, "%s %s: the code of the JSON error body", tc.method, tc.path)
	}
	big := `{"responses": [` + strings.Repeat(`{},`, maxScriptBytes/3) + `{}]}`
	code, _ := control(t, c, http.MethodPost, l.URL+"/_script", big)
	assert.Equal(t, http.StatusRequestEntityTooLarge, code, "a script over %d bytes", maxScriptBytes)
	assert.Empty(t, s.Requests(), "control requests are not recorded")
}

func TestControlInMemory(t *testing.T) {
	s := New()
	c := s.Client(nil)
	code, _ := control(t, c, http.MethodPost, "http://tracking.test/_script", `{"default": {"status": 418}}`)
	require.Equal(t, http.StatusNoContent, code, "POST /_script in memory")
	resp, _, err := post(c, "http://tracking.test/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	assert.Equal(t, 418, resp.StatusCode)
	code, body := control(t, c, http.MethodGet, "http://tracking.test/_requests", "")
	require.Equal(t, 200, code, "GET /_requests in memory")
	var reqs []Request
	require.NoError(t, json.Unmarshal([]byte(body), &reqs))
	require.Len(t, reqs, 1, "requests")
	assert.Equal(t, 418, reqs[0].Status)
}

// controlAs sends a control request to l with the Host and headers given
// (a DNS-rebinding page's request reaches 127.0.0.1 with its own Host and
// Origin) and returns the status and body.
func controlAs(t *testing.T, c *http.Client, method, url, host string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	require.NoError(t, err)
	if host != "" {
		req.Host = host
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, b, err := doRead(c, req)
	require.NoError(t, err)
	return resp.StatusCode, b
}

// A page that rebinds its own name to 127.0.0.1 sends its Host: the
// control API refuses it, so neither the record (write keys included) nor
// a reset is open to it; a loopback Host, with or without a port, is
// answered.
func TestControlRefusesForeignHost(t *testing.T) {
	s := New()
	l := start(t, s)
	c := plainClient(t)
	_, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	port := strings.TrimPrefix(l.URL, "http://127.0.0.1:")

	for _, host := range []string{"rebind.attacker.example", "rebind.attacker.example:" + port, "localhost.attacker.example", "127.0.0.1.attacker.example:" + port} {
		for _, path := range []string{"/_requests", "/_reset", "/_script"} {
			method := http.MethodPost
			if path == "/_requests" {
				method = http.MethodGet
			}
			code, body := controlAs(t, c, method, l.URL+path, host, nil)
			assert.Equal(t, http.StatusForbidden, code, "%s %s with Host %s: %s", method, path, host, body)
			errCode, msg := errorFields(t, body)
			assert.Equal(t, "forbidden", errCode, "Host %s", host)
			assert.Contains(t, msg, host, "the message names the Host")
			assert.Contains(t, msg, "-public", "the message says how to allow it")
			assert.NotContains(t, body, writeKey, "no write key in the refusal")
		}
	}
	assert.Len(t, s.Requests(), 1, "the reset from a foreign Host was not obeyed")

	for _, host := range []string{"localhost", "localhost:" + port, "LocalHost:" + port, "127.0.0.1", "127.0.0.1:" + port, "127.9.8.7:1", "[::1]", "[::1]:" + port} {
		code, body := controlAs(t, c, http.MethodGet, l.URL+"/_requests", host, nil)
		assert.Equal(t, http.StatusOK, code, "GET /_requests with Host %s: %s", host, body)
	}
}

// A cross-site request (a page elsewhere that reaches the mock by its
// loopback address) is refused whatever its Host; the mock's own origin,
// a loopback origin (an app under development on localhost) and a request
// without Origin (curl, a harness) are answered.
func TestControlRefusesCrossSite(t *testing.T) {
	s := New()
	l := start(t, s)
	c := plainClient(t)
	_, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)

	for _, h := range []http.Header{
		{"Origin": {"http://rebind.attacker.example"}},
		{"Origin": {"https://attacker.example:8443"}},
		{"Origin": {"null"}},
		{"Sec-Fetch-Site": {"cross-site"}},
		{"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"cross-site"}},
	} {
		for _, path := range []string{"/_requests", "/_reset"} {
			method := http.MethodPost
			if path == "/_requests" {
				method = http.MethodGet
			}
			code, body := controlAs(t, c, method, l.URL+path, "", h)
			assert.Equal(t, http.StatusForbidden, code, "%s %s with %v: %s", method, path, h, body)
			errCode, msg := errorFields(t, body)
			assert.Equal(t, "forbidden", errCode, "%v", h)
			assert.Contains(t, msg, "cross-site", "%v: the message says why", h)
		}
	}
	assert.Len(t, s.Requests(), 1, "the cross-site reset was not obeyed")

	for _, h := range []http.Header{
		nil,
		{"Origin": {l.URL}},
		{"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}},
		{"Origin": {"http://[::1]:5173"}},
		{"Sec-Fetch-Site": {"none"}},
	} {
		code, body := controlAs(t, c, http.MethodGet, l.URL+"/_requests", "", h)
		assert.Equal(t, http.StatusOK, code, "GET /_requests with %v: %s", h, body)
	}
}

// Public answers any Host (a mock reached by a container's name) but still
// refuses a cross-site request; the tracking path never looks at either.
func TestControlPublic(t *testing.T) {
	s := New().Public()
	l := start(t, s)
	c := plainClient(t)
	code, body := controlAs(t, c, http.MethodGet, l.URL+"/_requests", "mockapi:8787", nil)
	assert.Equal(t, http.StatusOK, code, "Public, a foreign Host: %s", body)
	code, body = controlAs(t, c, http.MethodGet, l.URL+"/_requests", "mockapi:8787", http.Header{"Origin": {"http://mockapi:8787"}})
	assert.Equal(t, http.StatusOK, code, "Public, its own origin by that name: %s", body)
	code, body = controlAs(t, c, http.MethodPost, l.URL+"/_reset", "mockapi:8787", http.Header{"Origin": {"http://attacker.example"}})
	assert.Equal(t, http.StatusForbidden, code, "Public, a cross-site origin: %s", body)
}

// The address a request came in on counts as the mock's own, as loopback
// does: a harness that reaches a mock on a LAN address by that address is
// answered, another address is not. (Tests listen on 127.0.0.1 only, so
// the connection's address is given as net/http gives it.)
func TestControlAnswersItsListenAddress(t *testing.T) {
	s := New()
	local := &net.TCPAddr{IP: net.ParseIP("192.0.2.7"), Port: 8787}
	for _, tc := range []struct {
		host, origin string
		code         int
	}{
		{"192.0.2.7:8787", "", http.StatusOK},
		{"192.0.2.7", "http://192.0.2.7:8787", http.StatusOK},
		{"192.0.2.8:8787", "", http.StatusForbidden},
		{"192.0.2.7:8787", "http://192.0.2.8:8787", http.StatusForbidden},
	} {
		r := httptest.NewRequest(http.MethodGet, "http://"+tc.host+"/_requests", nil)
		r = r.WithContext(context.WithValue(r.Context(), http.LocalAddrContextKey, local))
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, r)
		assert.Equal(t, tc.code, w.Code, "Host %s, Origin %q, on %v: %s", tc.host, tc.origin, local, w.Body)
	}
}

func TestTrackingIgnoresHostAndOrigin(t *testing.T) {
	s := New()
	l := start(t, s)
	c := plainClient(t)
	req, err := http.NewRequest(http.MethodPost, l.URL+"/v1/batch", strings.NewReader(batch("m1")))
	require.NoError(t, err)
	req.Host = "rebind.attacker.example"
	req.Header.Set("Origin", "http://rebind.attacker.example")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	req.SetBasicAuth(writeKey, "")
	resp, body, err := doRead(c, req)
	require.NoError(t, err)
	assert.Equal(t, http.StatusOK, resp.StatusCode, "POST /v1/batch: %s", body)
	assert.Equal(t, map[string]int{"m1": 1}, s.Delivered())
}
