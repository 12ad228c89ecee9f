package consumer

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/jitter"
	"github.com/dualpath/analytics-go/retry"
)

// maxBodyBytes is the body limit the analytics package gives its Uploader
// (MaxBatchBytes).
const maxBodyBytes = 500_000

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
	at     time.Time // when it was sent: in a bubble, fake time
}

type sentBatch struct {
	Batch   []map[string]any `json:"batch"`
	SentAt  string           `json:"sentAt"`
	Context map[string]any   `json:"context"`
}

// String shows what tells requests apart, for failure messages.
func (s sent) String() string {
	return fmt.Sprintf("%s X-Retry-Count=%q %v", s.method, s.header.Get("X-Retry-Count"), s.ids())
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
// It answers at once, so in a synctest bubble a request takes no time.
type fakeTransport struct {
	t *testing.T

	mu     sync.Mutex
	script []answer
	rule   func(s sent) answer
	reqs   []sent
}

func (f *fakeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var raw []byte
	if req.Body != nil {
		var err error
		raw, err = io.ReadAll(req.Body)
		assert.NoError(f.t, err, "reading the request body")
	}
	s := sent{method: req.Method, header: req.Header.Clone(), raw: raw, body: raw, at: time.Now()}
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if assert.NoError(f.t, err, "the gzip header") {
			s.body, err = io.ReadAll(zr)
			assert.NoError(f.t, err, "the gzip body")
		}
	}
	// A redirected GET has no body to decode.
	if req.Method == http.MethodPost {
		assert.NoError(f.t, json.Unmarshal(s.body, &s.batch), "the request body is not a batch:\n%s", s.body)
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

// String shows the run and the text of its error: printed with %v, an
// outcome in a slice shows what went wrong, not a pointer.
func (o outcome) String() string {
	if o.err == nil {
		return fmt.Sprintf("[%d, %d) delivered", o.lo, o.hi)
	}
	return fmt.Sprintf("[%d, %d) failed: %s", o.lo, o.hi, o.err)
}

// rig is an Uploader on the in-memory fakeTransport. Its tests run in a
// testing/synctest bubble, where time passes only while the retry loop
// waits: the gaps between requests are the loop's waits, exact.
type rig struct {
	t  *testing.T
	tr *fakeTransport
	up *Uploader
	// start and end are when the last deliver began and returned.
	start, end time.Time
}

// newRig builds an Uploader on a fake transport with exact (jitter-free)
// backoff waits: retry n waits BackoffBase·2^(n−1)/2. Its send rate is on,
// as the SDK's is by default; with jitter-free waits a pause ends exactly
// at the server's time.
func newRig(t *testing.T, script ...answer) *rig {
	t.Helper()
	tr := &fakeTransport{t: t, script: script}
	policy := retry.DefaultPolicy()
	jitter.Set(&policy, func(time.Duration) time.Duration { return 0 })
	r := &rig{t: t, tr: tr}
	r.up = New(Config{
		Endpoint:              "http://tracking.test",
		WriteKey:              "wk-secret",
		UserAgent:             "analytics-go/test",
		Context:               []byte(`{"library":{"name":"analytics-go","version":"test"}}`),
		Client:                &http.Client{Transport: tr, CheckRedirect: CheckRedirect},
		Gzip:                  true,
		RequestTimeout:        10 * time.Second,
		MaxBodyBytes:          maxBodyBytes,
		MaxConcurrentRequests: 8,
		Policy:                policy,
		AdaptiveSendRate:      true,
	})
	return r
}

func (r *rig) policy(edit func(p *retry.Policy)) *rig {
	edit(&r.up.cfg.Policy)
	return r
}

// deliver sends n events with messageIds m0..m(n-1) and returns the reports.
func (r *rig) deliver(ctx context.Context, n int) []outcome {
	return r.deliverEvents(ctx, events(n))
}

// deliverEvents sends evs as one batch and returns the reports.
func (r *rig) deliverEvents(ctx context.Context, evs [][]byte) []outcome {
	var out []outcome
	r.start = time.Now()
	slot, err := r.up.acquire(ctx)
	require.NoError(r.t, err)
	r.up.deliver(ctx, slot, evs, func(lo, hi int, err error) {
		out = append(out, outcome{lo, hi, err})
	})
	r.end = time.Now()
	return out
}

// waits returns how long the last deliver waited: the gaps other than zero
// between its start, each request, and its end. In a synctest bubble time
// passes only while the loop waits, so these are its waits, in order.
func (r *rig) waits() []time.Duration {
	var waits []time.Duration
	at := r.start
	for _, s := range r.tr.requests() {
		if d := s.at.Sub(at); d != 0 {
			waits = append(waits, d)
		}
		at = s.at
	}
	if d := r.end.Sub(at); d != 0 {
		waits = append(waits, d)
	}
	return waits
}

func events(n int) [][]byte {
	evs := make([][]byte, n)
	for i := range evs {
		evs[i] = fmt.Appendf(nil, `{"type":"track","event":"E","userId":"u","messageId":"m%d","timestamp":"2026-11-29T12:00:00.000Z"}`, i)
	}
	return evs
}

// one requires a single report covering all n events and returns its
// error.
func one(t *testing.T, out []outcome, n int) error {
	t.Helper()
	require.Len(t, out, 1, "reports %v", out)
	require.Equal(t, 0, out[0].lo, "the report's first event")
	require.Equal(t, n, out[0].hi, "the report's end")
	return out[0].err
}

// hangGuard is how long a test waits for a call that must end by itself
// before declaring it hung: far above any deadline the tests set, so that
// it holds on a loaded machine.
const hangGuard = 30 * time.Second

// serveConns accepts connections on ln and runs serve on each, with its
// number, from 1 in accept order. At cleanup it closes ln and every
// connection and waits for every goroutine.
func serveConns(t *testing.T, ln net.Listener, serve func(c net.Conn, conn int)) {
	t.Helper()
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			n := len(conns)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				serve(c, n)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
}

// rawServer listens on 127.0.0.1 and runs serve for each connection, with
// the request already read. It returns the base URL. Every connection and
// goroutine ends at cleanup.
func rawServer(t *testing.T, serve func(c net.Conn, req *http.Request)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	serveConns(t, ln, func(c net.Conn, _ int) {
		req, err := http.ReadRequest(bufio.NewReader(c))
		if err != nil {
			return
		}
		_, _ = io.Copy(io.Discard, req.Body)
		serve(c, req)
	})
	return "http://" + ln.Addr().String()
}

// refusedAddr returns a 127.0.0.1 address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// realUploader is an Uploader over real sockets with the SDK's own HTTP
// client, real time and no retries, logging to logs.
func realUploader(t *testing.T, endpoint string, timeout time.Duration, logs io.Writer) *Uploader {
	t.Helper()
	client := NewHTTPClient(2)
	t.Cleanup(client.CloseIdleConnections)
	policy := retry.DefaultPolicy()
	policy.RetryCount = 0
	if logs == nil {
		logs = io.Discard
	}
	return New(Config{
		Endpoint:              endpoint,
		WriteKey:              testKey,
		UserAgent:             "analytics-go/test",
		Context:               []byte(`{}`),
		Client:                client,
		RequestTimeout:        timeout,
		MaxBodyBytes:          maxBodyBytes,
		MaxConcurrentRequests: 2,
		Policy:                policy,
		Logger:                slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

const testKey = "wk-0123456789abcdef0123456789abcdef"

// deliverOnce runs one Deliver of one event and returns its error. It
// fails the test if Deliver has not returned within hangGuard.
func deliverOnce(t *testing.T, ctx context.Context, up *Uploader) error {
	t.Helper()
	var out []outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		slot, err := up.acquire(ctx)
		if err != nil {
			out = append(out, outcome{0, 1, err})
			return
		}
		up.deliver(ctx, slot, events(1), func(lo, hi int, err error) {
			out = append(out, outcome{lo, hi, err})
		})
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		require.FailNow(t, "Deliver hangs", "it had not returned after %v", hangGuard)
	}
	return one(t, out, 1)
}
