package analyticstest

// The same answer kinds in memory (RoundTrip), inside synctest bubbles
// where a Delay is fake time.

import (
	"context"
	"net/http"
	"net/http/httptrace"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memoryTrace records the httptrace hooks a round trip reached, in order.
type memoryTrace []string

func (mt *memoryTrace) context(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:              func(httptrace.GotConnInfo) { *mt = append(*mt, "conn") },
		WroteRequest:         func(httptrace.WroteRequestInfo) { *mt = append(*mt, "wrote") },
		GotFirstResponseByte: func() { *mt = append(*mt, "byte") },
	})
}

// roundTrip posts body to s in memory as the SDK would (with the write
// key) and returns the response with its body read, the error, and the
// httptrace hooks reached.
func roundTrip(t *testing.T, s *Server, ctx context.Context, body string) (*http.Response, string, memoryTrace, error) {
	t.Helper()
	var mt memoryTrace
	req, err := http.NewRequestWithContext(mt.context(ctx), http.MethodPost, "http://tracking.test/v1/batch", strings.NewReader(body))
	require.NoError(t, err)
	req.SetBasicAuth(writeKey, "")
	resp, b, err := doRead(s.Client(nil), req)
	return resp, b, mt, err
}

func TestMemoryAnswers(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answer  Answer
		status  int   // the client's status, 0 for an error
		err     error // the client's error
		hooks   string
		recBody bool // the record holds the body
	}{
		{"status, headers, body", Answer{Status: 429, Header: http.Header{"Retry-After": {"1", "2"}}, Body: "slow down"}, 429, nil, "conn wrote byte", true},
		{"zero answer", Answer{}, 200, nil, "conn wrote byte", true},
		{"1xx", Status(103), 103, nil, "conn wrote byte", true},
		{"drop", Answer{Drop: true}, 0, ErrDropped, "conn wrote", true},
		{"close before read", Answer{CloseBeforeRead: true}, 0, ErrClosedBeforeRead, "conn", false},
		{"partial", Answer{Partial: true}, 0, ErrPartialResponse, "conn wrote byte", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New().Script(tc.answer)
			resp, body, hooks, err := roundTrip(t, s, context.Background(), batch("m1"))
			assert.Equal(t, tc.hooks, strings.Join(hooks, " "), "httptrace hooks")
			if tc.err != nil {
				assert.ErrorIs(t, err, tc.err)
				assert.ErrorIs(t, err, ErrDropped)
			} else {
				require.NoError(t, err)
				assert.Equal(t, tc.status, resp.StatusCode)
				assert.Equal(t, tc.answer.Body, body)
				assert.Equal(t, tc.answer.Header["Retry-After"], resp.Header["Retry-After"])
			}
			r := onlyRequest(t, s)
			assert.Equal(t, tc.status, r.Status, "status recorded")
			assert.Equal(t, tc.recBody, r.Body != nil, "the record holds the body")
		})
	}
}

func TestMemoryDelayIsFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New().Script(Answer{Status: 201, Delay: time.Hour})
		begin := time.Now()
		resp, _, _, err := roundTrip(t, s, context.Background(), batch("m1"))
		require.NoError(t, err)
		assert.Equal(t, 201, resp.StatusCode)
		assert.Equal(t, time.Hour, time.Since(begin), "answered after exactly the delay")
	})
}

func TestMemoryDelayEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New().Default(Answer{Delay: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		begin := time.Now()
		_, _, hooks, err := roundTrip(t, s, ctx, batch("m1"))
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, time.Second, time.Since(begin), "failed at the deadline")
		assert.Equal(t, "conn wrote", strings.Join(hooks, " "), "httptrace hooks")
		assert.Equal(t, 0, onlyRequest(t, s).Status, "status recorded")
	})
}

func TestMemoryFollowsRedirects(t *testing.T) {
	// A 307 keeps the method and the body: the Client's redirect policy
	// runs on the in-memory responses as on real ones.
	s := New().Script(Answer{Status: 307, Header: http.Header{"Location": {"/v1/batch"}}})
	resp, _, _, err := roundTrip(t, s, context.Background(), batch("m1"))
	require.NoError(t, err)
	assert.Equal(t, 200, resp.StatusCode)
	reqs := s.Requests()
	require.Len(t, reqs, 2, "requests recorded")
	assert.Equal(t, 307, reqs[0].Status, "the first request")
	assert.Equal(t, 200, reqs[1].Status, "the redirected request")
	assert.Equal(t, http.MethodPost, reqs[1].Method)
	assert.Len(t, reqs[1].Events, 1, "events of the redirected request")
}
