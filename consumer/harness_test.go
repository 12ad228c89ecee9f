package consumer

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/internal/fakeclock"
	"github.com/dualpath/analytics-go/retry"
)

func newFakeClock() *fakeclock.Clock {
	return fakeclock.New(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))
}

// answer is what the fake transport does with one request.
type answer struct {
	status int
	header http.Header
	body   string
	// err makes the round trip fail with no response, after reaching phase.
	err   error
	phase Phase
}

func status(code int) answer { return answer{status: code} }

func retryAfter(code int, v string) answer {
	return answer{status: code, header: http.Header{"Retry-After": {v}}}
}

func dropped(p Phase) answer {
	return answer{err: io.ErrUnexpectedEOF, phase: p}
}

// sent is one request the fake transport received.
type sent struct {
	method string
	header http.Header
	raw    []byte // body as sent
	body   []byte // body after gzip decoding
	batch  sentBatch
	at     time.Time
}

type sentBatch struct {
	Batch   []map[string]any `json:"batch"`
	SentAt  string           `json:"sentAt"`
	Context map[string]any   `json:"context"`
}

func (s sent) ids() []string {
	ids := make([]string, len(s.batch.Batch))
	for i, e := range s.batch.Batch {
		ids[i], _ = e["messageId"].(string)
	}
	return ids
}

// fakeTransport answers from a script, then with rule (or 200), and records
// every request. It drives the httptrace hooks as a real transport would.
type fakeTransport struct {
	t     *testing.T
	clock Clock

	mu     sync.Mutex
	script []answer
	rule   func(s sent) answer
	reqs   []sent
}

func (f *fakeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var raw []byte
	if req.Body != nil {
		var err error
		if raw, err = io.ReadAll(req.Body); err != nil {
			f.t.Errorf("reading request body: %v", err)
		}
	}
	s := sent{method: req.Method, header: req.Header.Clone(), raw: raw, body: raw, at: f.clock.Now()}
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			f.t.Errorf("gzip header: %v", err)
		} else if s.body, err = io.ReadAll(zr); err != nil {
			f.t.Errorf("gzip body: %v", err)
		}
	}
	if req.Method != http.MethodPost {
		// A redirected GET has no body to decode.
	} else if err := json.Unmarshal(s.body, &s.batch); err != nil {
		f.t.Errorf("request body is not a batch: %v\n%s", err, s.body)
	}

	f.mu.Lock()
	f.reqs = append(f.reqs, s)
	a := answer{status: 200}
	switch {
	case len(f.script) > 0:
		a, f.script = f.script[0], f.script[1:]
	case f.rule != nil:
		a = f.rule(s)
	}
	f.mu.Unlock()

	trace := httptrace.ContextClientTrace(req.Context())
	if a.err != nil {
		if trace != nil {
			if a.phase >= PhaseConnected {
				trace.GotConn(httptrace.GotConnInfo{})
			}
			if a.phase >= PhaseWritten {
				trace.WroteRequest(httptrace.WroteRequestInfo{})
			}
		}
		return nil, a.err
	}
	if trace != nil {
		trace.GotConn(httptrace.GotConnInfo{})
		trace.WroteRequest(httptrace.WroteRequestInfo{})
		trace.GotFirstResponseByte()
	}
	h := a.header
	if h == nil {
		h = http.Header{}
	}
	return &http.Response{
		StatusCode: a.status,
		Header:     h,
		Body:       io.NopCloser(strings.NewReader(a.body)),
		Request:    req,
	}, nil
}

func (f *fakeTransport) requests() []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]sent(nil), f.reqs...)
}

// outcome is one report call of Deliver.
type outcome struct {
	lo, hi int
	err    error
}

type rig struct {
	t     *testing.T
	clock *fakeclock.Clock
	tr    *fakeTransport
	up    *Uploader
}

// newRig builds an Uploader on a fake clock and transport with exact
// (jitter-free) backoff waits: retry n waits BackoffBase·2^(n−1)/2.
func newRig(t *testing.T, script ...answer) *rig {
	t.Helper()
	clock := newFakeClock()
	tr := &fakeTransport{t: t, clock: clock, script: script}
	policy := retry.DefaultPolicy()
	policy.Jitter = func(time.Duration) time.Duration { return 0 }
	r := &rig{t: t, clock: clock, tr: tr}
	r.up = New(Config{
		Endpoint:              "http://tracking.test",
		WriteKey:              "wk-secret",
		UserAgent:             "analytics-go/test",
		Context:               []byte(`{"library":{"name":"analytics-go","version":"test"}}`),
		Client:                &http.Client{Transport: tr, CheckRedirect: CheckRedirect},
		Gzip:                  true,
		RequestTimeout:        10 * time.Second,
		MaxConcurrentRequests: 8,
		Policy:                policy,
		Clock:                 clock,
	})
	return r
}

func (r *rig) policy(edit func(p *retry.Policy)) *rig {
	edit(&r.up.policy)
	return r
}

// deliver sends n events with messageIds m0..m(n-1) and returns the reports.
func (r *rig) deliver(ctx context.Context, n int) []outcome {
	var out []outcome
	slot, err := r.up.Acquire(ctx)
	if err != nil {
		r.t.Fatal(err)
	}
	r.up.Deliver(ctx, slot, events(n), func(lo, hi int, err error) {
		out = append(out, outcome{lo, hi, err})
	})
	return out
}

func events(n int) [][]byte {
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, `{"type":"track","event":"E","userId":"u","messageId":"m%d","timestamp":"2026-11-29T12:00:00.000Z"}`, i)
	}
	return evs
}

// one asserts a single report covering all n events and returns its error.
func one(t *testing.T, out []outcome, n int) error {
	t.Helper()
	if len(out) != 1 || out[0].lo != 0 || out[0].hi != n {
		t.Fatalf("reports = %+v, want one covering [0, %d)", out, n)
	}
	return out[0].err
}
