package main

import (
	"compress/gzip"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// schedule says which answer the mock API gives at a time since the run
// started: 200 before outageStart and from recovery on, the fault between.
type schedule struct {
	outageStart, recovery time.Duration
	fault                 int // 503 or 429
	retryAfter            int // seconds, sent with a 429; 0 sends none
}

func (s schedule) inOutage(at time.Duration) bool { return at >= s.outageStart && at < s.recovery }

// request is one batch request the mock API received.
type request struct {
	at     time.Duration // arrival, since the run started
	status int
}

// delivery is what the mock API knows of one messageId: when it was first
// answered 2xx, how many 2xx answers carried it, and when it was enqueued
// (the event's fleet_enqueued_ns property).
type delivery struct {
	first, enqueued time.Duration
	count           int
}

// batchBody is the part of a batch body the mock API reads.
type batchBody struct {
	Batch []struct {
		MessageID  string `json:"messageId"`
		Properties struct {
			Enqueued int64 `json:"fleet_enqueued_ns"`
		} `json:"properties"`
	} `json:"batch"`
}

// mockAPI is one tracking API shared by every client of a run. It answers
// by the schedule, and records every request and, for 2xx answers, every
// event. It is safe for concurrent use.
type mockAPI struct {
	start time.Time
	sched schedule

	mu           sync.Mutex
	requests     []request
	deliveries   map[string]delivery
	decodeErrors int
	conns        int
}

func newMockAPI(start time.Time, sched schedule) *mockAPI {
	return &mockAPI{start: start, sched: sched, deliveries: make(map[string]delivery, 1<<16)}
}

// ServeHTTP reads every body whole (so that the client can reuse its
// connection), answers the fault during the outage, and otherwise decodes
// the batch and answers 200.
func (m *mockAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	at := time.Since(m.start)
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	if m.sched.inOutage(at) {
		_, _ = io.Copy(io.Discard, r.Body)
		m.record(request{at: at, status: m.sched.fault}, nil)
		if m.sched.fault == http.StatusTooManyRequests && m.sched.retryAfter > 0 {
			w.Header().Set("Retry-After", strconv.Itoa(m.sched.retryAfter))
		}
		w.WriteHeader(m.sched.fault)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			m.badBody(w, at, r.Body)
			return
		}
		body = zr
	}
	var b batchBody
	if err := json.NewDecoder(body).Decode(&b); err != nil {
		m.badBody(w, at, r.Body)
		return
	}
	_, _ = io.Copy(io.Discard, r.Body)
	m.record(request{at: at, status: http.StatusOK}, &b)
	w.Header().Set("Content-Type", "application/json")
	_, _ = io.WriteString(w, `{"success":true}`)
}

// badBody answers 400 to a body the mock API cannot read: a fatal status,
// so that a bug in the SDK's encoding shows as failed events.
func (m *mockAPI) badBody(w http.ResponseWriter, at time.Duration, rest io.Reader) {
	_, _ = io.Copy(io.Discard, rest)
	m.mu.Lock()
	m.decodeErrors++
	m.requests = append(m.requests, request{at: at, status: http.StatusBadRequest})
	m.mu.Unlock()
	http.Error(w, "undecodable batch", http.StatusBadRequest)
}

func (m *mockAPI) record(req request, b *batchBody) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.requests = append(m.requests, req)
	if b == nil {
		return
	}
	for _, e := range b.Batch {
		d, ok := m.deliveries[e.MessageID]
		if !ok {
			d = delivery{first: req.at, enqueued: time.Duration(e.Properties.Enqueued)}
		}
		d.count++
		m.deliveries[e.MessageID] = d
	}
}

// connState counts the connections the mock API accepted.
func (m *mockAPI) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		m.mu.Lock()
		m.conns++
		m.mu.Unlock()
	}
}

// apiRecord is what the mock API recorded, copied out once the run is over.
type apiRecord struct {
	requests     []request
	deliveries   map[string]delivery
	decodeErrors int
	conns        int
}

func (m *mockAPI) snapshot() apiRecord {
	m.mu.Lock()
	defer m.mu.Unlock()
	return apiRecord{requests: m.requests, deliveries: m.deliveries, decodeErrors: m.decodeErrors, conns: m.conns}
}

// serve starts an HTTP server for m on a free port of 127.0.0.1 and
// returns its base URL and a function that stops it.
func serve(m *mockAPI) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: m, ConnState: m.connState, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		_ = srv.Close()
		<-done
	}, nil
}
