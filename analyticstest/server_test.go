package analyticstest

// Which answer a request gets (script, rules, default) and what is
// recorded of it, in memory.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
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
	if want := []int{500, 202, 413, 202, 202}; !slices.Equal(got, want) {
		t.Fatalf("statuses %v, want %v: the script (one deferring to the default), then the rule, else the default", got, want)
	}
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
	if got := statuses(t, s, batch("a"), batch("b"), batch("c"), batch("d")); !slices.Equal(got, []int{503, 201, 500, 201}) {
		t.Fatalf("statuses %v", got)
	}
	s.Rule(nil)
	if got := statuses(t, s, batch("e")); !slices.Equal(got, []int{500}) {
		t.Fatalf("after Rule(nil): %v, want the default", got)
	}
}

func TestMaxEvents(t *testing.T) {
	rule := MaxEvents(2, Status(413))
	for n, want := range []Answer{{Default: true}, {Default: true}, {Default: true}, Status(413), Status(413)} {
		if got := rule(Request{Events: make([]map[string]any, n)}); !reflect.DeepEqual(got, want) {
			t.Errorf("%d events: %+v, want %+v", n, got, want)
		}
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
	if len(reqs) != 2 || reqs[0].Body != nil || reqs[0].Status != 0 || reqs[1].Body == nil || reqs[1].Status != 0 {
		t.Fatalf("recorded %+v", reqs)
	}
}

func TestLoadReplacesAndResetClears(t *testing.T) {
	s := New().Script(Status(500), Status(500)).Rule(MaxEvents(0, Status(413)))
	statuses(t, s, batch("a"))
	s.Load(&Script{Responses: []Answer{Status(503)}, Default: Status(202)})
	if got := statuses(t, s, batch("b"), batch("c")); !slices.Equal(got, []int{503, 202}) {
		t.Fatalf("after Load: %v, want the new script and default, no old rule", got)
	}
	if n := len(s.Requests()); n != 3 {
		t.Fatalf("Load kept %d requests, want 3", n)
	}
	var seen int
	s.OnRequest(func(Request) { seen++ })
	s.Script(Status(500)).Reset()
	if n := len(s.Requests()); n != 0 {
		t.Fatalf("Reset left %d requests", n)
	}
	if got := statuses(t, s, batch("d")); !slices.Equal(got, []int{200}) || seen != 1 {
		t.Fatalf("after Reset: %v, OnRequest called %d times; want 200 and OnRequest kept", got, seen)
	}
	s.Load(nil)
	if got := statuses(t, s, batch("e")); !slices.Equal(got, []int{200}) {
		t.Fatalf("after Load(nil): %v", got)
	}
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
			if _, _, err := post(plainClient(t), l.URL+"/v1/batch", tc.raw, tc.header); err != nil {
				t.Fatal(err)
			}
			r := onlyRequest(t, s)
			if r.Err != nil || string(r.Body) != body || !slices.Equal(r.MessageIDs(), []string{"m1", "m2"}) ||
				r.SentAt != testSentAt || r.Events[1]["event"] != "E" ||
				!reflect.DeepEqual(r.Context, map[string]any{"library": map[string]any{"name": "test"}}) ||
				r.Method != http.MethodPost || r.Path != "/v1/batch" || r.At.IsZero() ||
				r.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("recorded %+v", r)
			}
			if got := s.Delivered(); !reflect.DeepEqual(got, map[string]int{"m1": 1, "m2": 1}) {
				t.Fatalf("Delivered %v", got)
			}
		})
	}
}

func TestRecordKeepsUndecodableBodies(t *testing.T) {
	s := New()
	roundTrip(t, s, context.Background(), "not json")
	req, _ := http.NewRequest(http.MethodPost, "http://tracking.test/v1/batch", strings.NewReader("not gzip"))
	req.Header.Set("Content-Encoding", "gzip")
	if _, _, err := doRead(s.Client(nil), req); err != nil {
		t.Fatal(err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Err == nil || string(reqs[0].Body) != "not json" || reqs[0].Status != 200 ||
		reqs[1].Err == nil || !strings.Contains(reqs[1].Err.Error(), "gzip") {
		t.Fatalf("recorded %+v", reqs)
	}
}

func TestRequestJSONRoundTrip(t *testing.T) {
	s := New().Script(Status(503))
	roundTrip(t, s, context.Background(), batch("m1"))
	roundTrip(t, s, context.Background(), "not json")
	want := s.Requests()
	data, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got []Request
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	for i := range want {
		w, g := want[i], got[i]
		if !g.At.Equal(w.At) || fmt.Sprint(g.Err) != fmt.Sprint(w.Err) {
			t.Fatalf("request %d: at %v err %v, want %v %v", i, g.At, g.Err, w.At, w.Err)
		}
		w.At, w.Err, g.Err = g.At, nil, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("request %d decoded as\n%+v\nwant\n%+v", i, g, w)
		}
	}
}
