package analyticstest

// Which answer a request gets (script, rules, default) and what is
// recorded of it, in memory.

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// statuses sends each body to s in memory and returns the statuses
// answered (0 for an error).
func statuses(t *testing.T, s *Server, bodies ...string) []int {
	t.Helper()
	var got []int
	for _, b := range bodies {
		resp, _, _, err := roundTrip(t, s, context.Background(), b)
		if err != nil {
			got = append(got, 0)
			continue
		}
		got = append(got, resp.StatusCode)
	}
	return got
}

func TestScriptThenRuleThenDefault(t *testing.T) {
	s := New().
		Script(Status(500), Answer{Default: true}).
		Rule(MaxEvents(1, Status(413))).
		Default(Status(202))
	big, small := batch("a", "b"), batch("c")
	got := statuses(t, s, big, big, big, small, small)
	assert.Equal(t, []int{500, 202, 413, 202, 202}, got,
		"the script (one deferring to the default), then the rule, else the default")
}

func TestRuleAnswersEverythingAfterTheScript(t *testing.T) {
	n := 0
	s := New().Script(Status(503)).Default(Status(500)).Rule(func(Request) Answer {
		n++ // runs under the server's lock: no race
		if n%2 == 0 {
			return Answer{Default: true}
		}
		return Status(201)
	})
	assert.Equal(t, []int{503, 201, 500, 201}, statuses(t, s, batch("a"), batch("b"), batch("c"), batch("d")))
	s.Rule(nil)
	assert.Equal(t, []int{500}, statuses(t, s, batch("e")), "after Rule(nil): the default")
}

func TestMaxEvents(t *testing.T) {
	rule := MaxEvents(2, Status(413))
	for n, want := range []Answer{{Default: true}, {Default: true}, {Default: true}, Status(413), Status(413)} {
		assert.Equal(t, want, rule(Request{Events: make([]map[string]any, n)}), "%d events", n)
	}
}

func TestDefaultCloseBeforeReadDoesNotRead(t *testing.T) {
	// With no rule the default is known before the body is read, so the
	// body is never read; a rule has read it by the time it answers.
	s := New().Default(Answer{CloseBeforeRead: true})
	roundTrip(t, s, context.Background(), batch("a"))
	s.Rule(func(Request) Answer { return Answer{CloseBeforeRead: true} })
	roundTrip(t, s, context.Background(), batch("b"))
	reqs := s.Requests()
	require.Len(t, reqs, 2, "requests recorded")
	assert.Nil(t, reqs[0].Body, "the default's body: never read")
	assert.Equal(t, 0, reqs[0].Status, "the default's status")
	assert.NotNil(t, reqs[1].Body, "the rule's body: read")
	assert.Equal(t, 0, reqs[1].Status, "the rule's status")
}

func TestLoadReplacesAndResetClears(t *testing.T) {
	s := New().Script(Status(500), Status(500)).Rule(MaxEvents(0, Status(413)))
	statuses(t, s, batch("a"))
	s.Load(&Script{Responses: []Answer{Status(503)}, Default: Status(202)})
	assert.Equal(t, []int{503, 202}, statuses(t, s, batch("b"), batch("c")), "after Load: the new script and default, no old rule")
	assert.Len(t, s.Requests(), 3, "Load keeps the record")

	var seen int
	s.OnRequest(func(Request) { seen++ })
	s.Script(Status(500)).Reset()
	assert.Empty(t, s.Requests(), "after Reset")
	assert.Equal(t, []int{200}, statuses(t, s, batch("d")), "after Reset")
	assert.Equal(t, 1, seen, "OnRequest calls: Reset keeps it")

	s.Load(nil)
	assert.Equal(t, []int{200}, statuses(t, s, batch("e")), "after Load(nil)")
}

func TestRecordDecodesGzipAndPlainBodies(t *testing.T) {
	body := batch("m1", "m2")
	for _, tc := range []struct {
		name   string
		raw    []byte
		header http.Header
	}{
		{"plain", []byte(body), nil},
		{"gzip", gzipped(t, body), http.Header{"Content-Encoding": {"gzip"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New()
			l := start(t, s)
			_, _, err := post(plainClient(t), l.URL+"/v1/batch", tc.raw, tc.header)
			require.NoError(t, err)
			r := onlyRequest(t, s)
			assert.NoError(t, r.Err)
			assert.Equal(t, body, string(r.Body), "body, decoded")
			assert.Equal(t, []string{"m1", "m2"}, r.MessageIDs())
			assert.Equal(t, testSentAt, r.SentAt)
			require.Len(t, r.Events, 2, "events")
			assert.Equal(t, "E", r.Events[1]["event"])
			assert.Equal(t, map[string]any{"library": map[string]any{"name": "test"}}, r.Context)
			assert.Equal(t, http.MethodPost, r.Method)
			assert.Equal(t, "/v1/batch", r.Path)
			assert.False(t, r.At.IsZero(), "At is set")
			assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
			assert.Equal(t, map[string]int{"m1": 1, "m2": 1}, s.Delivered())
		})
	}
}

func TestRequestJSONRoundTrip(t *testing.T) {
	s := New().Script(Status(503))
	roundTrip(t, s, context.Background(), batch("m1"))
	roundTrip(t, s, context.Background(), "not json")
	want := s.Requests()
	data, err := json.Marshal(want)
	require.NoError(t, err)
	var got []Request
	require.NoError(t, json.Unmarshal(data, &got))
	require.Len(t, got, len(want), "requests decoded")
	for i := range want {
		w, g := want[i], got[i]
		assert.True(t, g.At.Equal(w.At), "request %d: at %v, want %v", i, g.At, w.At)
		if w.Err == nil {
			assert.NoError(t, g.Err, "request %d", i)
		} else {
			assert.EqualError(t, g.Err, w.Err.Error(), "request %d", i)
		}
		w.At, w.Err, g.Err = g.At, nil, nil
		assert.Equal(t, w, g, "request %d", i)
	}
}
