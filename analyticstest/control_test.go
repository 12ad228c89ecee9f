package analyticstest

// The control API over a socket, as a harness in another process uses it.

import (
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// control sends a control request and returns the status and body.
func control(t *testing.T, c *http.Client, method, url, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp, b, err := doRead(c, req)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func TestControlRequestsShape(t *testing.T) {
	s := New().Script(Status(503))
	l := start(t, s)
	c := plainClient(t)
	if _, _, err := post(c, l.URL+"/v1/batch", gzipped(t, batch("m1", "m2")), http.Header{"Content-Encoding": {"gzip"}, "X-Retry-Count": {"1"}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := post(c, l.URL+"/v1/batch", []byte("nope"), nil); err != nil {
		t.Fatal(err)
	}
	code, body := control(t, c, http.MethodGet, l.URL+"/_requests", "")
	if code != 200 {
		t.Fatalf("GET /_requests: %d %s", code, body)
	}
	var raw []map[string]json.RawMessage
	if err := json.Unmarshal([]byte(body), &raw); err != nil {
		t.Fatalf("GET /_requests is not a JSON array of objects: %v\n%s", err, body)
	}
	if len(raw) != 2 {
		t.Fatalf("%d records, want 2 (control requests are not recorded)", len(raw))
	}
	wantKeys := []string{"at", "body", "context", "error", "events", "headers", "messageIds", "method", "path", "sentAt", "status"}
	for i, r := range raw {
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("record %d has keys %v, want %v", i, keys, wantKeys)
		}
	}

	// Decoded as a harness in another language would: plain JSON types.
	var recs []struct {
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
		Error      *string             `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &recs); err != nil {
		t.Fatal(err)
	}
	first, second := recs[0], recs[1]
	if first.At.IsZero() || first.Method != "POST" || first.Path != "/v1/batch" ||
		!slices.Equal(first.Headers["X-Retry-Count"], []string{"1"}) || first.Body != batch("m1", "m2") ||
		len(first.Events) != 2 || first.Events[0]["messageId"] != "m1" || !slices.Equal(first.MessageIDs, []string{"m1", "m2"}) ||
		first.SentAt != testSentAt || first.Context["library"] == nil || first.Status != 503 || first.Error != nil {
		t.Fatalf("first record %+v", first)
	}
	if second.Body != "nope" || second.Events == nil || len(second.Events) != 0 || second.MessageIDs == nil ||
		second.Context != nil || second.Status != 200 || second.Error == nil || !strings.Contains(*second.Error, "not JSON") {
		t.Fatalf("second record %+v: want empty arrays, a null context and the error", second)
	}

	// A Go harness decodes the same body into []Request.
	var reqs []Request
	if err := json.Unmarshal([]byte(body), &reqs); err != nil || !slices.Equal(reqs[0].MessageIDs(), []string{"m1", "m2"}) || reqs[1].Err == nil {
		t.Fatalf("[]Request: %+v %v", reqs, err)
	}
}

func TestControlRequestsEmptyIsAnArray(t *testing.T) {
	l := start(t, New())
	if code, body := control(t, plainClient(t), http.MethodGet, l.URL+"/_requests", ""); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Fatalf("got %d %q, want []", code, body)
	}
}

func TestControlReset(t *testing.T) {
	s := New().Script(Status(500), Status(500)).Default(Status(503))
	l := start(t, s)
	c := plainClient(t)
	if resp, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil); err != nil || resp.StatusCode != 500 {
		t.Fatalf("before reset: %v %v", resp, err)
	}
	if code, body := control(t, c, http.MethodPost, l.URL+"/_reset", ""); code != http.StatusNoContent {
		t.Fatalf("POST /_reset: %d %s", code, body)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d requests after reset", n)
	}
	if resp, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m2")), nil); err != nil || resp.StatusCode != 200 {
		t.Fatalf("after reset: %v %v, want 200: script and default cleared", resp, err)
	}
}

func TestControlScript(t *testing.T) {
	s := New().Script(Status(500))
	l := start(t, s)
	c := plainClient(t)
	script := `{"responses": [{"status": 429, "headers": {"Retry-After": ["1", "2"]}}], "rules": [{"ifEventsOver": 1, "then": {"status": 413}}], "default": {"status": 202}}`
	if code, body := control(t, c, http.MethodPost, l.URL+"/_script", script); code != http.StatusNoContent {
		t.Fatalf("POST /_script: %d %s", code, body)
	}
	var got []int
	for _, b := range []string{batch("a"), batch("b", "c"), batch("d")} {
		resp, _, err := post(c, l.URL+"/v1/batch", []byte(b), nil)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, resp.StatusCode)
		if resp.StatusCode == 429 && !reflect.DeepEqual(resp.Header["Retry-After"], []string{"1", "2"}) {
			t.Fatalf("429 with Retry-After %q", resp.Header["Retry-After"])
		}
	}
	if !slices.Equal(got, []int{429, 413, 202}) {
		t.Fatalf("statuses %v, want the loaded script (the old one replaced)", got)
	}

	code, body := control(t, c, http.MethodPost, l.URL+"/_script", `{"responses": [{"action": "explode"}]}`)
	if code != http.StatusBadRequest || !strings.Contains(body, "responses[0]") || !strings.Contains(body, "explode") {
		t.Fatalf("a bad script: %d %q, want 400 naming the response", code, body)
	}
	if resp, _, err := post(c, l.URL+"/v1/batch", []byte(batch("e")), nil); err != nil || resp.StatusCode != 202 {
		t.Fatalf("after a bad script: %v %v, want the script before it kept", resp, err)
	}
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
		if code, body := control(t, c, tc.method, l.URL+tc.path, ""); code != tc.code {
			t.Errorf("%s %s: %d %q, want %d", tc.method, tc.path, code, body, tc.code)
		}
	}
	big := `{"responses": [` + strings.Repeat(`{},`, maxScriptBytes/3) + `{}]}`
	if code, _ := control(t, c, http.MethodPost, l.URL+"/_script", big); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a script over %d bytes: %d, want 413", maxScriptBytes, code)
	}
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("%d control requests recorded, want none", n)
	}
}

func TestControlInMemory(t *testing.T) {
	s := New()
	c := s.Client(nil)
	if code, _ := control(t, c, http.MethodPost, "http://tracking.test/_script", `{"default": {"status": 418}}`); code != http.StatusNoContent {
		t.Fatalf("POST /_script in memory: %d", code)
	}
	resp, _, err := post(c, "http://tracking.test/v1/batch", []byte(batch("m1")), nil)
	if err != nil || resp.StatusCode != 418 {
		t.Fatalf("got %v %v, want 418", resp, err)
	}
	code, body := control(t, c, http.MethodGet, "http://tracking.test/_requests", "")
	var reqs []Request
	if err := json.Unmarshal([]byte(body), &reqs); code != 200 || err != nil || len(reqs) != 1 || reqs[0].Status != 418 {
		t.Fatalf("GET /_requests in memory: %d %v %+v", code, err, reqs)
	}
}
