package analyticstest

// Every answer kind over a real socket on 127.0.0.1, seen by a plain
// net/http client.

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSocketAnswersStatusHeadersAndBody(t *testing.T) {
	s := New().Script(Answer{Status: 418, Header: http.Header{"Retry-After": {"1", "2"}, "X-Why": {"tea"}}, Body: "teapot"})
	l := start(t, s)
	resp, body, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	assert.Equal(t, 418, resp.StatusCode)
	assert.Equal(t, "teapot", body)
	assert.Equal(t, "tea", resp.Header.Get("X-Why"))
	assert.Equal(t, []string{"1", "2"}, resp.Header["Retry-After"], "two Retry-After lines")
	r := onlyRequest(t, s)
	assert.Equal(t, 418, r.Status, "status recorded")
	assert.Equal(t, "/v1/batch", r.Path)
	assert.Equal(t, []string{"m1"}, r.MessageIDs())
}

func TestSocketDefaultIs200(t *testing.T) {
	s := New()
	l := start(t, s)
	resp, body, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	assert.Empty(t, body)
	assert.Equal(t, 200, onlyRequest(t, s).Status, "status recorded")
}

func TestSocketNoContent(t *testing.T) {
	s := New().Default(Status(204))
	l := start(t, s)
	resp, body, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	assert.Equal(t, 204, resp.StatusCode)
	assert.Empty(t, body)
}

func TestSocketDelay(t *testing.T) {
	const delay = 150 * time.Millisecond
	s := New().Script(Answer{Status: 202, Delay: delay})
	l := start(t, s)
	begin := time.Now()
	resp, _, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.NoError(t, err)
	assert.Equal(t, 202, resp.StatusCode)
	assert.GreaterOrEqual(t, time.Since(begin), delay, "answered after the delay")
}

func TestSocketDelayEndsWithTheClient(t *testing.T) {
	s := New().Default(Answer{Delay: time.Hour})
	ch := recorded(s)
	l := start(t, s)
	c := plainClient(t)
	c.Timeout = 50 * time.Millisecond
	_, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.Error(t, err, "a response to a request delayed an hour")
	r := receive(t, ch)
	assert.Equal(t, 0, r.Status, "status recorded")
	assert.Len(t, r.Events, 1, "events recorded")
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
			require.NoError(t, err)
			body := batch("m1")
			req.Body, req.ContentLength = nopCloser(body), int64(len(body))
			req.SetBasicAuth(writeKey, "")
			req.Header.Set("X-Test", tc.name)
			resp, err := plainClient(t).Do(req)
			if err == nil {
				resp.Body.Close()
			}
			require.Error(t, err, "no complete response")
			assert.Equal(t, tc.firstByte, st.firstByte.Load(), "the client got a first response byte")
			if tc.answer.Drop {
				assert.True(t, st.wrote.Load(), "a dropped request was written")
			}
			r := onlyRequest(t, s)
			want := 0
			if tc.answer.action() == respond {
				want = tc.answer.Status // a 1xx was answered, alone
			}
			assert.Equal(t, want, r.Status, "status recorded")
			assert.Equal(t, tc.name, r.Header.Get("X-Test"), "header recorded")
			assert.Equal(t, tc.body, r.Body != nil, "the record holds the body")
		})
	}
}

func TestSocketConnsCountsAcceptedConnections(t *testing.T) {
	s := New()
	l := start(t, s)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	for range 3 {
		_, _, err := post(c, l.URL+"/v1/batch", []byte(batch("m1")), nil)
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), l.Conns(), "connections for 3 sequential requests with keep-alive")
	_, _, err := post(plainClient(t), l.URL+"/v1/batch", []byte(batch("m2")), nil)
	require.NoError(t, err)
	assert.Equal(t, int64(2), l.Conns(), "connections after a request on a client of its own")
}

func TestSocketAbortsWithoutHijacker(t *testing.T) {
	// An http.ResponseWriter that cannot be hijacked (HTTP/2, a recorder):
	// the handler aborts, which net/http turns into a closed stream.
	s := New().Script(Answer{Drop: true})
	req, err := http.NewRequest(http.MethodPost, "/v1/batch", nopCloser(batch("m1")))
	require.NoError(t, err)
	req.SetBasicAuth(writeKey, "")
	assert.PanicsWithError(t, http.ErrAbortHandler.Error(), func() { s.ServeHTTP(noHijack{}, req) })
}

// A handler in front of the Server picks each request's answer by what the
// Server does not see (here a header); the script is left for the rest.
// A refusal still wins, and the answer returned is the record's.
func TestServeAnswerFromAHandlerInFront(t *testing.T) {
	s := New().Script(Status(202))
	var returned []Request
	var mu sync.Mutex
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Front") == "" {
			s.ServeHTTP(w, r)
			return
		}
		req := s.ServeAnswer(w, r, Answer{Status: 503, Body: "front"})
		mu.Lock()
		returned = append(returned, req)
		mu.Unlock()
	}))
	t.Cleanup(front.Close)
	c := plainClient(t)

	resp, body, err := post(c, front.URL+"/v1/batch", []byte(batch("m1")), http.Header{"X-Front": {"1"}})
	require.NoError(t, err)
	assert.Equal(t, 503, resp.StatusCode, "the answer given")
	assert.Equal(t, "front", body)
	resp, _, err = post(c, front.URL+"/v1/batch", []byte(batch("m2")), nil)
	require.NoError(t, err)
	assert.Equal(t, 202, resp.StatusCode, "the script's answer, left for the next request")
	resp, _, err = post(c, front.URL+"/v1/batch", []byte(`{"batch":[{}]}`), http.Header{"X-Front": {"1"}})
	require.NoError(t, err)
	assert.Equal(t, 400, resp.StatusCode, "a refusal, whatever the answer given")
	resp, _, err = post(c, front.URL+"/_requests", nil, http.Header{"X-Front": {"1"}})
	require.NoError(t, err)
	assert.Equal(t, 404, resp.StatusCode, "a control path, through ServeAnswer")

	reqs := s.Requests()
	require.Len(t, reqs, 4, "requests recorded")
	assert.Equal(t, []int{503, 202, 400, 404}, []int{reqs[0].Status, reqs[1].Status, reqs[2].Status, reqs[3].Status}, "statuses recorded")
	mu.Lock()
	defer mu.Unlock()
	require.Len(t, returned, 3, "requests ServeAnswer returned")
	assert.Equal(t, reqs[0].Status, returned[0].Status, "ServeAnswer returns the record")
	assert.Equal(t, []string{"m1"}, returned[0].MessageIDs(), "ServeAnswer returns the record")
	assert.Equal(t, reqs[2].Err, returned[1].Err, "the refusal's reason")
}

// An answer given that closes before the read is known before the body, as
// one from the script is.
func TestServeAnswerCloseBeforeRead(t *testing.T) {
	s := New()
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.ServeAnswer(w, r, Answer{CloseBeforeRead: true})
	}))
	t.Cleanup(front.Close)
	_, _, err := post(plainClient(t), front.URL+"/v1/batch", []byte(batch("m1")), nil)
	require.Error(t, err, "no response")
	r := onlyRequest(t, s)
	assert.Zero(t, r.Status, "status recorded")
	assert.Nil(t, r.Body, "the record holds the body")
}
