package analyticstest

// The refusals of the real API: each one's status and JSON body, in memory
// and over a socket, what is recorded of it, and what is accepted.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// call is one request to the tracking API, as the SDK sends it unless a
// field says otherwise.
type call struct {
	method string      // POST when empty
	path   string      // /v1/batch when empty
	body   []byte      // a batch of one event when nil
	header http.Header // added to the request; an Authorization replaces the write key's
	noAuth bool        // no Authorization at all
}

func (c call) request(t *testing.T, base string) *http.Request {
	t.Helper()
	method, path, body := c.method, c.path, c.body
	if method == "" {
		method = http.MethodPost
	}
	if path == "" {
		path = BatchPath
	}
	if body == nil && method == http.MethodPost {
		body = []byte(batch("m1"))
	}
	req, err := http.NewRequest(method, base+path, bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if !c.noAuth {
		req.SetBasicAuth(writeKey, "")
	}
	for k, v := range c.header {
		req.Header[k] = v
	}
	return req
}

// transports runs f over each way to reach a Server: in memory and over a
// socket on 127.0.0.1; base is the URL to send to.
func transports(t *testing.T, s *Server, f func(t *testing.T, c *http.Client, base string)) {
	t.Run("memory", func(t *testing.T) { f(t, s.Client(nil), "http://tracking.test") })
	t.Run("socket", func(t *testing.T) { f(t, plainClient(t), start(t, s).URL) })
}

// bodyOfSize returns a batch of one event whose encoding is exactly n
// bytes long.
func bodyOfSize(t *testing.T, n int) []byte {
	t.Helper()
	const head, tail = `{"batch":[{"type":"track","event":"E","userId":"u","messageId":"m1","properties":{"pad":"`, `"}}]}`
	pad := n - len(head) - len(tail)
	require.GreaterOrEqual(t, pad, 0, "a body of %d bytes", n)
	return []byte(head + strings.Repeat("x", pad) + tail)
}

// errorFields decodes an error body, failing unless it is an object of
// exactly a code and a message.
func errorFields(t *testing.T, body string) (code, message string) {
	t.Helper()
	var fields map[string]string
	require.NoError(t, json.Unmarshal([]byte(body), &fields), "the error body is a JSON object of strings: %s", body)
	require.Equal(t, []string{"code", "message"}, slices.Sorted(maps.Keys(fields)), "the error body's keys: %s", body)
	return fields["code"], fields["message"]
}

func TestRefusals(t *testing.T) {
	big := bodyOfSize(t, 1_200_000)
	for _, tc := range []struct {
		name    string
		call    call
		status  int
		code    string
		message string // in the body's message and in the recorded Err
		header  http.Header
	}{
		{"an endpoint given with /v1/batch", call{path: "/v1/batch/v1/batch"}, 404, "not_found", "an endpoint is the scheme and host only", nil},
		{"another API path", call{path: "/v1/track"}, 404, "not_found", "/v1/track", nil},
		{"the root", call{path: "/"}, 404, "not_found", "no tracking API path /", nil},
		{"a trailing slash", call{path: "/v1/batch/"}, 404, "not_found", "/v1/batch/", nil},
		{"GET", call{method: http.MethodGet}, 405, "method_not_allowed", "not GET", http.Header{"Allow": {"POST"}}},
		{"PUT", call{method: http.MethodPut}, 405, "method_not_allowed", "not PUT", http.Header{"Allow": {"POST"}}},
		{"no Authorization", call{noAuth: true}, 401, "unauthorized", "no write key", http.Header{"Www-Authenticate": {`Basic realm="tracking API"`}}},
		{"an empty write key", call{header: http.Header{"Authorization": {"Basic OnNlY3JldA=="}}}, 401, "unauthorized", "no write key", nil}, // ":secret"
		{"Bearer", call{header: http.Header{"Authorization": {"Bearer wk"}}}, 401, "unauthorized", "no write key", nil},
		{"Basic that is not base64", call{header: http.Header{"Authorization": {"Basic !!"}}}, 401, "unauthorized", "no write key", nil},
		{"not JSON", call{body: []byte("not json")}, 400, "invalid_request", "body is not JSON", nil},
		{"an empty body", call{body: []byte{}}, 400, "invalid_request", "body is not JSON", nil},
		{"JSON, not an object", call{body: []byte(`[{"type":"track"}]`)}, 400, "invalid_request", "not a JSON object", nil},
		{"a single call, not a batch", call{body: []byte(`{"type":"track","event":"E","userId":"u"}`)}, 400, "invalid_request", `no "batch" array`, nil},
		{"batch null", call{body: []byte(`{"batch":null}`)}, 400, "invalid_request", `no "batch" array`, nil},
		{"batch an object", call{body: []byte(`{"batch":{"type":"track"}}`)}, 400, "invalid_request", `no "batch" array`, nil},
		{"an item that is not an object", call{body: []byte(`{"batch":[{"type":"track"},"track"]}`)}, 400, "invalid_request", "batch[1] is not a JSON object", nil},
		{"an item without type", call{body: []byte(`{"batch":[{"type":"track","messageId":"a"},{"event":"E","userId":"u","messageId":"b"}]}`)}, 400, "invalid_request", `batch[1] has no "type"`, nil},
		{"an empty type", call{body: []byte(`{"batch":[{"type":""}]}`)}, 400, "invalid_request", `batch[0] has no "type"`, nil},
		{"a type that is not a string", call{body: []byte(`{"batch":[{"type":1}]}`)}, 400, "invalid_request", `batch[0] has no "type"`, nil},
		{"gzip that is not gzip", call{header: http.Header{"Content-Encoding": {"gzip"}}}, 400, "invalid_request", "gzip", nil},
		{"gzip cut short", call{body: gzipped(t, batch("m1"))[:30], header: http.Header{"Content-Encoding": {"gzip"}}}, 400, "invalid_request", "gzip", nil},
		{"gzip of something else", call{body: gzipped(t, "not json"), header: http.Header{"Content-Encoding": {"gzip"}}}, 400, "invalid_request", "body is not JSON", nil},
		{"another coding", call{header: http.Header{"Content-Encoding": {"br"}}}, 400, "invalid_request", `Content-Encoding "br"`, nil},
		{"1.2 MB", call{body: big}, 413, "payload_too_large", "larger than 500000 bytes", nil},
		{"1.2 MB in gzip", call{body: gzipped(t, string(big)), header: http.Header{"Content-Encoding": {"gzip"}}}, 413, "payload_too_large", "larger than 500000 bytes", nil},
		{"500,001 bytes", call{body: bodyOfSize(t, maxBatchBytes+1)}, 413, "payload_too_large", "larger than 500000 bytes", nil},
		// The order of the checks: path, method, write key, size, body.
		{"path before method and write key", call{method: http.MethodGet, path: "/v1/batch/v1/batch", noAuth: true}, 404, "not_found", "/v1/batch/v1/batch", nil},
		{"method before write key", call{method: http.MethodGet, noAuth: true}, 405, "method_not_allowed", "not GET", nil},
		{"write key before body", call{body: []byte("not json"), noAuth: true}, 401, "unauthorized", "no write key", nil},
		{"size before body", call{body: append(bytes.Repeat([]byte("x"), maxBatchBytes), '!')}, 413, "payload_too_large", "larger than", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Whatever the script, the rule and the default say.
			s := New().Script(Status(202)).Rule(func(Request) Answer { return Status(203) }).Default(Status(204))
			transports(t, s, func(t *testing.T, c *http.Client, base string) {
				resp, body, err := doRead(c, tc.call.request(t, base))
				require.NoError(t, err)
				assert.Equal(t, tc.status, resp.StatusCode, "status; body %s", body)
				assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
				for k, v := range tc.header {
					assert.Equal(t, v, resp.Header[k], "header %s", k)
				}
				code, message := errorFields(t, body)
				assert.Equal(t, tc.code, code, "code")
				assert.Contains(t, message, tc.message, "message")

				reqs := s.Requests()
				require.NotEmpty(t, reqs, "requests recorded")
				r := reqs[len(reqs)-1]
				assert.Equal(t, tc.status, r.Status, "status recorded")
				require.Error(t, r.Err, "Err recorded")
				assert.Equal(t, message, r.Err.Error(), "Err recorded: the message of the body")
			})
			assert.Len(t, s.Requests(), 2, "requests recorded: one per transport")
		})
	}
}

func TestRefusalsKeepWhatWasSent(t *testing.T) {
	// The record of a refused request shows what the client sent, so that
	// a test can tell what went wrong.
	s := New()
	resp, _, err := doRead(s.Client(nil), call{path: "/v1/batch/v1/batch"}.request(t, "http://tracking.test"))
	require.NoError(t, err)
	require.Equal(t, 404, resp.StatusCode)
	r := onlyRequest(t, s)
	assert.Equal(t, "/v1/batch/v1/batch", r.Path)
	assert.Equal(t, []string{"m1"}, r.MessageIDs(), "the events of the refused batch")
	assert.Equal(t, batch("m1"), string(r.Body))
	assert.Empty(t, s.Delivered(), "a refused batch is not delivered")
}

func TestRefusalTakesNoAnswerFromTheScript(t *testing.T) {
	var ruleCalls int
	s := New().Script(Status(503)).Rule(func(Request) Answer { ruleCalls++; return Status(201) })
	c := s.Client(nil)
	var got []int
	for _, cl := range []call{{body: []byte("not json")}, {}, {noAuth: true}, {}} {
		resp, _, err := doRead(c, cl.request(t, "http://tracking.test"))
		require.NoError(t, err)
		got = append(got, resp.StatusCode)
	}
	assert.Equal(t, []int{400, 503, 401, 201}, got, "the script and the rule answer the valid requests, in order")
	assert.Equal(t, 1, ruleCalls, "rule calls: never for a refused request")
}

func TestCloseBeforeReadChecksOnlyTheHead(t *testing.T) {
	// A CloseBeforeRead closes before the body is read, so a body the API
	// would refuse goes unseen; a request line or headers it would refuse
	// are refused still.
	s := New().Default(Answer{CloseBeforeRead: true})
	c := s.Client(nil)
	_, _, err := doRead(c, call{body: []byte("not json")}.request(t, "http://tracking.test"))
	require.ErrorIs(t, err, ErrClosedBeforeRead, "a body the API would refuse")
	resp, _, err := doRead(c, call{noAuth: true}.request(t, "http://tracking.test"))
	require.NoError(t, err, "no write key")
	assert.Equal(t, 401, resp.StatusCode, "no write key")
	reqs := s.Requests()
	require.Len(t, reqs, 2, "requests recorded")
	assert.Equal(t, 0, reqs[0].Status, "closed before the read")
	assert.Nil(t, reqs[0].Body, "closed before the read")
	assert.NoError(t, reqs[0].Err, "closed before the read")
	assert.Equal(t, 401, reqs[1].Status, "no write key")
}

func TestAccepts(t *testing.T) {
	// What the real API accepts, the mock accepts: in particular every
	// body the SDK may send (at most 500,000 bytes before gzip), and an
	// item without messageId (the API assigns one).
	limit := bodyOfSize(t, maxBatchBytes)
	for _, tc := range []struct {
		name string
		call call
		ids  []string // the messageIds recorded
	}{
		{"no messageId", call{body: []byte(`{"batch":[{"type":"track","event":"E","userId":"u"}]}`)}, []string{""}},
		{"a password", call{header: http.Header{"Authorization": {"Basic d2s6cHc="}}}, []string{"m1"}},      // wk:pw
		{"basic in lower case", call{header: http.Header{"Authorization": {"basic d2s6"}}}, []string{"m1"}}, // wk:
		{"an empty batch", call{body: []byte(`{"batch":[]}`)}, []string{}},
		{"no sentAt, no context", call{body: []byte(`{"batch":[{"type":"identify","userId":"u","messageId":"m1"}]}`)}, []string{"m1"}},
		{"a type the SDK does not send", call{body: []byte(`{"batch":[{"type":"experiment","messageId":"m1"}]}`)}, []string{"m1"}},
		{"exactly 500,000 bytes", call{body: limit}, []string{"m1"}},
		{"exactly 500,000 bytes in gzip", call{body: gzipped(t, string(limit)), header: http.Header{"Content-Encoding": {"gzip"}}}, []string{"m1"}},
		{"gzip", call{body: gzipped(t, batch("m1")), header: http.Header{"Content-Encoding": {"gzip"}}}, []string{"m1"}},
		{"GZIP", call{body: gzipped(t, batch("m1")), header: http.Header{"Content-Encoding": {"GZIP"}}}, []string{"m1"}},
		{"Gzip", call{body: gzipped(t, batch("m1")), header: http.Header{"Content-Encoding": {"Gzip"}}}, []string{"m1"}},
		{"x-gzip", call{body: gzipped(t, batch("m1")), header: http.Header{"Content-Encoding": {"x-gzip"}}}, []string{"m1"}},
		{"identity", call{header: http.Header{"Content-Encoding": {"Identity"}}}, []string{"m1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			transports(t, s, func(t *testing.T, c *http.Client, base string) {
				resp, body, err := doRead(c, tc.call.request(t, base))
				require.NoError(t, err)
				assert.Equal(t, 200, resp.StatusCode, "status; body %s", body)
				reqs := s.Requests()
				require.NotEmpty(t, reqs, "requests recorded")
				r := reqs[len(reqs)-1]
				assert.Equal(t, 200, r.Status, "status recorded")
				assert.NoError(t, r.Err, "Err recorded")
				assert.Equal(t, tc.ids, r.MessageIDs(), "messageIds recorded")
			})
		})
	}
}

// A batch of more than 2,500 events answered 2xx is not refused: as
// Segment's API does (segment-docs, HTTP API source, "Common reasons
// events are not accepted", PR #7023), the Server answers 200 and rejects
// the events past the 2,500th. The request is recorded whole, Rejected
// counts them, Delivered leaves them out and Rejected lists them; a batch
// of 2,500, one answered otherwise, or a Lenient Server rejects none.
func TestBatchOverTheEventLimitRejectsTheRest(t *testing.T) {
	const segmentBatchEvents, sent = 2_500, 2_550
	ids := make([]string, sent)
	for i := range ids {
		ids[i] = fmt.Sprintf("m%d", i)
	}
	t.Run("rejected past the 2,500th", func(t *testing.T) {
		s := New()
		transports(t, s, func(t *testing.T, c *http.Client, base string) {
			resp, body, err := doRead(c, call{body: []byte(batch(ids...))}.request(t, base))
			require.NoError(t, err)
			assert.Equal(t, 200, resp.StatusCode, "status; body %s", body)
		})
		reqs := s.Requests()
		require.Len(t, reqs, 2, "requests recorded")
		for i, r := range reqs {
			assert.Equal(t, 200, r.Status, "request %d: status recorded", i)
			assert.NoError(t, r.Err, "request %d: Err", i)
			assert.Equal(t, ids, r.MessageIDs(), "request %d: every event is recorded", i)
			assert.Equal(t, sent-segmentBatchEvents, r.Rejected, "request %d: events rejected", i)
		}
		delivered, rejected := s.Delivered(), s.Rejected()
		for _, id := range ids[:segmentBatchEvents] {
			assert.Equal(t, 2, delivered[id], "deliveries of %s, one per transport", id)
			assert.Zero(t, rejected[id], "rejections of %s", id)
		}
		for _, id := range ids[segmentBatchEvents:] {
			assert.Zero(t, delivered[id], "deliveries of %s, past the 2,500th", id)
			assert.Equal(t, 2, rejected[id], "rejections of %s, one per transport", id)
		}
		assert.Len(t, delivered, segmentBatchEvents, "events delivered")
		assert.Len(t, rejected, sent-segmentBatchEvents, "events rejected")

		// GET /_requests says so, and a Go harness reads it back.
		raw, err := json.Marshal(reqs[0])
		require.NoError(t, err)
		assert.Contains(t, string(raw), `"rejected":50`, "the record's JSON")
		var back Request
		require.NoError(t, json.Unmarshal(raw, &back))
		assert.Equal(t, sent-segmentBatchEvents, back.Rejected, "the record read back")
	})
	for _, tc := range []struct {
		name   string
		server *Server
		events int
		status int
	}{
		{"exactly 2,500", New(), segmentBatchEvents, 200},
		{"answered 503", New().Default(Status(503)), sent, 503},
		{"lenient", New().Lenient(), sent, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, _, err := doRead(tc.server.Client(nil), call{body: []byte(batch(ids[:tc.events]...))}.request(t, "http://tracking.test"))
			require.NoError(t, err)
			assert.Equal(t, tc.status, resp.StatusCode, "status")
			r := onlyRequest(t, tc.server)
			assert.Len(t, r.Events, tc.events, "events recorded")
			assert.Zero(t, r.Rejected, "events rejected")
			assert.Empty(t, tc.server.Rejected(), "Server.Rejected")
		})
	}
}

// exactBatch has numbers that float64 would change: 2^53+1, decimals
// with a trailing zero or no exact binary form, an exponent beyond
// float64's range.
const exactBatch = `{"batch":[{"type":"track","event":"E","userId":"u","messageId":"m1",` +
	`"properties":{"big":9007199254740993,"price":12.50,"tenth":0.1,"huge":1e400,"list":[-9007199254740993]}}],` +
	`"sentAt":"2024-05-06T07:08:09.123Z","context":{"library":{"name":"test"},"seq":18446744073709551615}}`

func TestNumbersKeptExactly(t *testing.T) {
	wantProps := map[string]any{
		"big": json.Number("9007199254740993"), "price": json.Number("12.50"), "tenth": json.Number("0.1"),
		"huge": json.Number("1e400"), "list": []any{json.Number("-9007199254740993")},
	}
	s := New()
	l := start(t, s)
	c := plainClient(t)
	_, _, err := post(c, l.URL+"/v1/batch", gzipped(t, exactBatch), http.Header{"Content-Encoding": {"gzip"}})
	require.NoError(t, err)

	t.Run("Events", func(t *testing.T) {
		r := onlyRequest(t, s)
		require.Len(t, r.Events, 1, "events")
		assert.Equal(t, wantProps, r.Events[0]["properties"])
		assert.Equal(t, json.Number("18446744073709551615"), r.Context["seq"], "a number of the envelope's context")
	})

	code, body := control(t, c, http.MethodGet, l.URL+"/_requests", "")
	require.Equal(t, 200, code, "GET /_requests")
	t.Run("GET /_requests", func(t *testing.T) {
		// Each number is written as received, whatever language reads it.
		var recs []map[string]json.RawMessage
		require.NoError(t, json.Unmarshal([]byte(body), &recs))
		require.Len(t, recs, 1, "records")
		for _, literal := range []string{`"big":9007199254740993`, `"price":12.50`, `"tenth":0.1`, `"huge":1e400`, `[-9007199254740993]`} {
			assert.Contains(t, string(recs[0]["events"]), literal, "events")
		}
		assert.Contains(t, string(recs[0]["context"]), `"seq":18446744073709551615`, "context")
	})
	t.Run("GET /_requests into []Request", func(t *testing.T) {
		var reqs []Request
		require.NoError(t, json.Unmarshal([]byte(body), &reqs))
		require.Len(t, reqs, 1, "requests")
		require.Len(t, reqs[0].Events, 1, "events")
		assert.Equal(t, wantProps, reqs[0].Events[0]["properties"])
		assert.Equal(t, json.Number("18446744073709551615"), reqs[0].Context["seq"])
	})
}

func TestLenient(t *testing.T) {
	// A Lenient Server answers from its script what the API would refuse,
	// and records why the body could not be decoded, as before the
	// refusals.
	s := New().Lenient().Default(Status(202))
	calls := []call{
		{path: "/moved"},
		{method: http.MethodGet},
		{noAuth: true},
		{body: []byte("not json")},
		{header: http.Header{"Content-Encoding": {"gzip"}}},
		{body: []byte(`{"batch":[{"event":"E"}]}`)},
		{body: bodyOfSize(t, 1_200_000)},
	}
	s.Reset().Load(nil).Default(Status(202)) // Reset and Load keep Lenient
	transports(t, s, func(t *testing.T, c *http.Client, base string) {
		for i, cl := range calls {
			resp, _, err := doRead(c, cl.request(t, base))
			require.NoError(t, err, "call %d", i)
			assert.Equal(t, 202, resp.StatusCode, "call %d", i)
		}
	})
	reqs := s.Requests()
	require.Len(t, reqs, 2*len(calls), "requests recorded")
	for i, r := range reqs[:len(calls)] {
		assert.Equal(t, 202, r.Status, "request %d: status recorded", i)
	}
	assert.Equal(t, "/moved", reqs[0].Path)
	assert.Len(t, reqs[0].Events, 1, "events of a POST to another path")
	assert.Equal(t, http.MethodGet, reqs[1].Method)
	assert.Nil(t, reqs[1].Events, "events of a GET")
	assert.NoError(t, reqs[1].Err, "a GET's body is not decoded")
	assert.NoError(t, reqs[2].Err, "no write key")
	assert.ErrorContains(t, reqs[3].Err, "not JSON")
	assert.Equal(t, "not json", string(reqs[3].Body))
	assert.ErrorContains(t, reqs[4].Err, "gzip")
	assert.ErrorContains(t, reqs[5].Err, `has no "type"`)
	assert.Len(t, reqs[5].Events, 1, "events of a batch with no type")
	assert.NoError(t, reqs[6].Err, "1.2 MB")
	assert.Len(t, reqs[6].Body, 1_200_000, "1.2 MB")
}

func TestErrorBody(t *testing.T) {
	for status, code := range map[int]string{
		400: "invalid_request", 401: "unauthorized", 404: "not_found", 405: "method_not_allowed",
		413: "payload_too_large", 500: "internal_error",
	} {
		gotCode, message := errorFields(t, errorBody(status, `say "why"`))
		assert.Equal(t, code, gotCode, "%d", status)
		assert.Equal(t, `say "why"`, message, "%d", status)
	}
	assert.Equal(t, fmt.Sprintf(`{"code":"not_found","message":%q}`, "x"), errorBody(404, "x"))
}
