package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
)

// Scenarios are the sink's fault scenarios, in table order.
var scenarios = []string{"clean", "503x3", "429x3", "drop3", "p10"}

// scenarioDoc says what each scenario does, for -h and the README.
var scenarioDoc = map[string]string{
	"clean":   "every request answered 200",
	"503x3":   "the first 3 requests answered 503",
	"429x3":   "the first 3 requests answered 429 with Retry-After: 1",
	"drop3":   "the first 3 requests read whole, then the connection closed unanswered",
	"p10":     "each request answered 503 with probability 0.1 (seeded)",
	"stalled": "connections accepted and read, never answered (the -stalled mode)",
}

// sinkStats is what the sink reports on its control endpoint.
type sinkStats struct {
	Requests     int64            `json:"requests"`      // batch requests received
	Answers      map[string]int64 `json:"answers"`       // by status; "drop" for a closed connection
	WireBytes    int64            `json:"wire_bytes"`    // request body bytes as received (before gunzip)
	Conns        int64            `json:"conns"`         // TCP connections accepted
	Events       int64            `json:"events"`        // events in bodies answered 2xx
	Distinct     int64            `json:"distinct"`      // distinct ids among them
	Duplicates   int64            `json:"duplicates"`    // events - distinct: ids delivered again
	NoID         int64            `json:"no_id"`         // events without an id
	DecodeErrors int64            `json:"decode_errors"` // bodies that were not gzip/JSON (answered 400)
	CPUSeconds   float64          `json:"cpu_seconds"`   // the sink's own CPU time, user + system
}

// sink is the local tracking API. It decodes every body, counts events by
// id, and answers as its scenario says.
type sink struct {
	scenario string

	requests  atomic.Int64
	wireBytes atomic.Int64
	conns     atomic.Int64
	decodeErr atomic.Int64

	rngMu sync.Mutex
	rng   *rand.Rand

	mu       sync.Mutex
	answers  map[string]int64
	dense    []uint8           // deliveries of the drivers' ids, which are decimal numbers
	seen     map[string]uint32 // deliveries of any other id
	events   int64
	distinct int64
	noID     int64

	bufs sync.Pool // *bytes.Buffer
	gzs  sync.Pool // *gzip.Reader
}

func runSink(scenario string, seed uint64, cpuProfile string) error {
	if _, ok := scenarioDoc[scenario]; !ok {
		return fmt.Errorf("unknown scenario %q", scenario)
	}
	s := &sink{
		scenario: scenario,
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		answers:  map[string]int64{},
		seen:     map[string]uint32{},
	}
	data, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	control, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	if scenario == "stalled" {
		go s.serveStalled(data)
	} else {
		srv := &http.Server{
			Handler:           s,
			ReadHeaderTimeout: 30 * time.Second,
			ConnState: func(_ net.Conn, st http.ConnState) {
				if st == http.StateNew {
					s.conns.Add(1)
				}
			},
		}
		go func() { _ = srv.Serve(data) }()
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.stats())
	})
	go func() { _ = http.Serve(control, mux) }()

	// The first line tells the orchestrator where to send events and where
	// to ask for the counters.
	if err := json.NewEncoder(os.Stdout).Encode(map[string]string{
		"endpoint": "http://" + data.Addr().String(),
		"control":  "http://" + control.Addr().String(),
	}); err != nil {
		return err
	}
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	// The sink lives as long as its stdin: the orchestrator closes it, or
	// the pipe breaks when the orchestrator dies.
	_, _ = io.Copy(io.Discard, os.Stdin)
	return nil
}

func (s *sink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.Contains(r.URL.Path, "batch") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	n := s.requests.Add(1)
	buf := s.buffer()
	defer s.bufs.Put(buf)
	nb, err := buf.ReadFrom(r.Body)
	s.wireBytes.Add(nb)
	if err != nil {
		s.answer("read-error")
		return
	}

	switch {
	case s.scenario == "drop3" && n <= 3:
		s.answer("drop")
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		panic(http.ErrAbortHandler) // closes the connection without answering
	case s.scenario == "503x3" && n <= 3, s.scenario == "p10" && s.chance(0.1):
		s.reply(w, http.StatusServiceUnavailable, `{"success":false,"error":"unavailable"}`)
		return
	case s.scenario == "429x3" && n <= 3:
		w.Header().Set("Retry-After", "1")
		s.reply(w, http.StatusTooManyRequests, `{"success":false,"error":"rate limited"}`)
		return
	}

	body := buf.Bytes()
	if r.Header.Get("Content-Encoding") == "gzip" {
		plain, err := s.gunzip(body)
		defer s.bufs.Put(plain)
		if err != nil {
			s.decodeErr.Add(1)
			s.reply(w, http.StatusBadRequest, `{"success":false,"error":"bad gzip"}`)
			return
		}
		body = plain.Bytes()
	}
	s.mu.Lock()
	err = batchIDs(body, s.count)
	s.mu.Unlock()
	if err != nil {
		s.decodeErr.Add(1)
		s.reply(w, http.StatusBadRequest, `{"success":false,"error":"bad json"}`)
		return
	}
	s.reply(w, http.StatusOK, `{"success":true}`)
}

// count records one delivered event with its raw id. s.mu is held.
//
// A body whose decoding fails half-way has counted the events before the
// failure; the driver's ids never make a body fail, so the tables are not
// affected.
func (s *sink) count(id []byte) {
	s.events++
	if len(id) == 0 {
		s.noID++
		return
	}
	var c uint32
	if n, ok := denseID(id); ok {
		if n >= len(s.dense) {
			s.dense = append(s.dense, make([]uint8, n+1-len(s.dense)+len(s.dense)/2)...)
		}
		if s.dense[n] < 255 {
			s.dense[n]++
		}
		c = uint32(s.dense[n])
	} else {
		c = s.seen[string(id)] + 1
		s.seen[string(id)] = c
	}
	if c == 1 {
		s.distinct++
	}
}

// denseID parses the drivers' ids: exactly 10 decimal digits, below 2^26.
func denseID(id []byte) (int, bool) {
	if len(id) != 10 {
		return 0, false
	}
	n := 0
	for _, c := range id {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, n < 1<<26
}

func (s *sink) reply(w http.ResponseWriter, status int, body string) {
	s.answer(fmt.Sprint(status))
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func (s *sink) answer(kind string) {
	s.mu.Lock()
	s.answers[kind]++
	s.mu.Unlock()
}

func (s *sink) chance(p float64) bool {
	s.rngMu.Lock()
	defer s.rngMu.Unlock()
	return s.rng.Float64() < p
}

func (s *sink) buffer() *bytes.Buffer {
	if b, ok := s.bufs.Get().(*bytes.Buffer); ok {
		b.Reset()
		return b
	}
	return new(bytes.Buffer)
}

func (s *sink) gunzip(body []byte) (*bytes.Buffer, error) {
	out := s.buffer()
	zr, _ := s.gzs.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(bytes.NewReader(body))
	} else {
		err = zr.Reset(bytes.NewReader(body))
	}
	if err != nil {
		return out, err
	}
	defer s.gzs.Put(zr)
	_, err = out.ReadFrom(zr)
	return out, err
}

// serveStalled accepts connections and reads them, never answering: a
// tracking API that hangs.
func (s *sink) serveStalled(l net.Listener) {
	for {
		conn, err := l.Accept()
		if err != nil {
			return
		}
		s.conns.Add(1)
		go func() {
			defer conn.Close()
			n, _ := io.Copy(io.Discard, bufio.NewReader(conn))
			s.wireBytes.Add(n) // headers included: nothing is parsed
		}()
	}
}

func (s *sink) stats() sinkStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	answers := make(map[string]int64, len(s.answers))
	for k, v := range s.answers {
		answers[k] = v
	}
	cpu := figures.ProcessCPU()
	return sinkStats{
		Requests:     s.requests.Load(),
		Answers:      answers,
		WireBytes:    s.wireBytes.Load(),
		Conns:        s.conns.Load(),
		Events:       s.events,
		Distinct:     s.distinct,
		Duplicates:   s.events - s.noID - s.distinct,
		NoID:         s.noID,
		DecodeErrors: s.decodeErr.Load(),
		CPUSeconds:   cpu.Seconds(),
	}
}
