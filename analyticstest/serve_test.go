package analyticstest

// Every answer kind over a real socket on 127.0.0.1, seen by a plain
// net/http client.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

func TestSocketAnswersStatusHeadersAndBody(t *testing.T) {
	s := New().Script(Answer{Status: 418, Header: http.Header{"Retry-After": {"1", "2"}, "X-Why": {"tea"}}, Body: "teapot"})
	l := start(t, s)
	resp, body, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 418 || body != "teapot" || resp.Header.Get("X-Why") != "tea" ||
		!reflect.DeepEqual(resp.Header["Retry-After"], []string{"1", "2"}) {
		t.Fatalf("got %d %v %q, want 418, two Retry-After lines, X-Why, teapot", resp.StatusCode, resp.Header, body)
	}
	if r := onlyRequest(t, s); r.Status != 418 || r.Path != "/v1/batch" || !slices.Equal(r.MessageIDs(), []string{"m1"}) {
		t.Fatalf("recorded %+v", r)
	}
}

func TestSocketDefaultIs200(t *testing.T) {
	s := New()
	l := start(t, s)
	resp, body, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	if err != nil || resp.StatusCode != 200 || body != "" {
		t.Fatalf("got %v %q %v, want 200 with an empty body", resp, body, err)
	}
	if r := onlyRequest(t, s); r.Status != 200 {
		t.Fatalf("recorded status %d", r.Status)
	}
}

func TestSocketNoContent(t *testing.T) {
	s := New().Default(Status(204))
	l := start(t, s)
	resp, body, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	if err != nil || resp.StatusCode != 204 || body != "" {
		t.Fatalf("got %v %q %v, want 204", resp, body, err)
	}
}

func TestSocketDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	s := New().Script(Answer{Status: 202, Delay: delay})
	l := start(t, s)
	begin := time.Now()
	resp, _, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	if err != nil || resp.StatusCode != 202 {
		t.Fatalf("got %v %v, want 202", resp, err)
	}
	if took := time.Since(begin); took < delay {
		t.Fatalf("answered after %v, before the delay of %v", took, delay)
	}
}

func TestSocketDelayEndsWithTheClient(t *testing.T) {
	s := New().Default(Answer{Delay: time.Hour})
	ch := recorded(s)
	l := start(t, s)
	c := plainClient(t)
	c.Timeout = 50 * time.Millisecond
	if _, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil); err == nil {
		t.Fatal("got a response to a request delayed an hour")
	}
	if r := receive(t, ch); r.Status != 0 || len(r.Events) != 1 {
		t.Fatalf("recorded %+v, want the batch with Status 0", r)
	}
}

// socketTrace records which httptrace hooks a client request reached.
type socketTrace struct{ wrote, firstByte atomic.Bool }

func (st *socketTrace) context() context.Context {
	return httptrace.WithClientTrace(context.Background(), &httptrace.ClientTrace{
		WroteRequest:         func(httptrace.WroteRequestInfo) { st.wrote.Store(true) },
		GotFirstResponseByte: func() { st.firstByte.Store(true) },
	})
}

func TestSocketFaults(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer Answer
		// body says whether the record holds the body: it does unless the
		// connection was closed before the read.
		body bool
		// firstByte says whether the client got a response byte.
		firstByte bool
	}{
		{"drop", Answer{Drop: true}, true, false},
		{"close before read", Answer{CloseBeforeRead: true}, false, false},
		{"partial", Answer{Partial: true}, true, true},
		{"partial 503", Answer{Partial: true, Status: 503}, true, true},
		{"1xx alone", Status(103), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New().Script(tc.answer)
			l := start(t, s)
			var st socketTrace
			req, err := http.NewRequestWithContext(st.context(), http.MethodPost, l.URL+"/v1/batch", nil)
			if err != nil {
				t.Fatal(err)
			}
			body := batch("m1")
			req.Body, req.ContentLength = nopCloser(body), int64(len(body))
			req.Header.Set("X-Test", tc.name)
			resp, err := plainClient(t).Do(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("got %d, want an error: no complete response", resp.StatusCode)
			}
			if st.firstByte.Load() != tc.firstByte {
				t.Errorf("client got a first response byte: %v, want %v", st.firstByte.Load(), tc.firstByte)
			}
			if tc.answer.Drop && !st.wrote.Load() {
				t.Error("a dropped request was not written")
			}
			r := onlyRequest(t, s)
			want := 0
			if tc.answer.action() == respond {
				want = tc.answer.Status // a 1xx was answered, alone
			}
			if r.Status != want || r.Header.Get("X-Test") != tc.name || (r.Body != nil) != tc.body {
				t.Fatalf("recorded status %d, header %q, body %q; want status %d, the header, body %v", r.Status, r.Header.Get("X-Test"), r.Body, want, tc.body)
			}
		})
	}
}

func TestSocketRecordsOtherPathsAndMethods(t *testing.T) {
	s := New()
	l := start(t, s)
	c := plainClient(t)
	if _, _, err := post(c, l.URL+"/moved/v1/batch", []byte(batch("m1")), nil); err != nil {
		t.Fatal(err)
	}
	resp, err := c.Get(l.URL + "/v1/batch")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[0].Path != "/moved/v1/batch" || reqs[0].Status != 200 || len(reqs[0].Events) != 1 ||
		reqs[1].Method != http.MethodGet || reqs[1].Events != nil || reqs[1].Err != nil {
		t.Fatalf("recorded %+v", reqs)
	}
}

func TestSocketConnsCountsAcceptedConnections(t *testing.T) {
	s := New()
	l := start(t, s)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	for range 3 {
		if _, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil); err != nil {
			t.Fatal(err)
		}
	}
	if n := l.Conns(); n != 1 {
		t.Fatalf("%d connections for 3 sequential requests with keep-alive, want 1", n)
	}
	if _, _, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m2")), nil); err != nil {
		t.Fatal(err)
	}
	if n := l.Conns(); n != 2 {
		t.Fatalf("%d connections, want 2", n)
	}
}

func TestSocketAbortsWithoutHijacker(t *testing.T) {
	// An http.ResponseWriter that cannot be hijacked (HTTP/2, a recorder):
	// the handler aborts, which net/http turns into a closed stream.
	s := New().Script(Answer{Drop: true})
	defer func() {
		if v := recover(); !errors.Is(asError(v), http.ErrAbortHandler) {
			t.Fatalf("recovered %v, want http.ErrAbortHandler", v)
		}
	}()
	req, _ := http.NewRequest(http.MethodPost, "/v1/batch", nopCloser(batch("m1")))
	s.ServeHTTP(noHijack{}, req)
	t.Fatal("ServeHTTP returned")
}
