package analyticstest

// The same answer kinds in memory (RoundTrip), inside synctest bubbles
// where a Delay is fake time.

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptrace"
	"reflect"
	"strings"
	"testing"
	"testing/synctest"
	"time"
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

// roundTrip posts a batch to s in memory and returns the response with its
// body read, the error, and the httptrace hooks reached.
func roundTrip(t *testing.T, s *Server, ctx context.Context, body string) (*http.Response, string, memoryTrace, error) {
	t.Helper()
	var mt memoryTrace
	req, err := http.NewRequestWithContext(mt.context(ctx), http.MethodPost, "http://tracking.test/v1/batch", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
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
			if strings.Join(hooks, " ") != tc.hooks {
				t.Errorf("httptrace hooks %v, want %s", hooks, tc.hooks)
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !errors.Is(err, ErrDropped) {
					t.Fatalf("error %v, want %v (an ErrDropped)", err, tc.err)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tc.status || body != tc.answer.Body || !reflect.DeepEqual(resp.Header["Retry-After"], tc.answer.Header["Retry-After"]) {
					t.Fatalf("got %d %v %q", resp.StatusCode, resp.Header, body)
				}
			}
			r := onlyRequest(t, s)
			if r.Status != tc.status || (r.Body != nil) != tc.recBody {
				t.Fatalf("recorded status %d body %q, want %d and body %v", r.Status, r.Body, tc.status, tc.recBody)
			}
		})
	}
}

func TestMemoryDelayIsFakeTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New().Script(Answer{Status: 201, Delay: time.Hour})
		begin := time.Now()
		resp, _, _, err := roundTrip(t, s, context.Background(), batch("m1"))
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("got %v %v, want 201", resp, err)
		}
		if took := time.Since(begin); took != time.Hour {
			t.Fatalf("answered after %v, want exactly the delay", took)
		}
	})
}

func TestMemoryDelayEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New().Default(Answer{Delay: time.Hour})
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		begin := time.Now()
		_, _, hooks, err := roundTrip(t, s, ctx, batch("m1"))
		if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) != time.Second {
			t.Fatalf("error %v after %v, want the deadline after 1s", err, time.Since(begin))
		}
		if strings.Join(hooks, " ") != "conn wrote" {
			t.Fatalf("hooks %v", hooks)
		}
		if r := onlyRequest(t, s); r.Status != 0 {
			t.Fatalf("recorded status %d, want 0", r.Status)
		}
	})
}

func TestMemoryFollowsRedirects(t *testing.T) {
	// A 307 keeps the method and the body: the Client's redirect policy
	// runs on the in-memory responses as on real ones.
	s := New().Script(Answer{Status: 307, Header: http.Header{"Location": {"/moved/v1/batch"}}})
	resp, _, _, err := roundTrip(t, s, context.Background(), batch("m1"))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("got %v %v", resp, err)
	}
	reqs := s.Requests()
	if len(reqs) != 2 || reqs[1].Path != "/moved/v1/batch" || reqs[1].Method != http.MethodPost || len(reqs[1].Events) != 1 {
		t.Fatalf("recorded %+v", reqs)
	}
}
