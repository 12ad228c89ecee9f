package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
)

// fault is one kind of broken answer of the mix.
type fault string

const (
	fault503     fault = "503"
	fault500     fault = "500"
	fault429     fault = "429"
	faultDrop    fault = "drop"
	faultPartial fault = "partial"
	faultStall   fault = "stall"
)

var faultKinds = []fault{fault503, fault500, fault429, faultDrop, faultPartial, faultStall}

// mix is the percent of requests that get each fault.
type mix map[fault]float64

// parseMix reads "503=5,429=1,drop=1": percent of requests per fault.
func parseMix(s string) (mix, error) {
	m := mix{}
	total := 0.0
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, value, ok := strings.Cut(part, "=")
		pct, err := strconv.ParseFloat(value, 64)
		if !ok || err != nil || pct < 0 || pct > 100 {
			return nil, fmt.Errorf("-faults: %q is not name=percent", part)
		}
		f := fault(name)
		known := false
		for _, k := range faultKinds {
			known = known || k == f
		}
		if !known {
			return nil, fmt.Errorf("-faults: unknown fault %q (have %v)", name, faultKinds)
		}
		m[f] += pct
		total += pct
	}
	if total > 100 {
		return nil, fmt.Errorf("-faults: %v%% of requests in all, more than 100", total)
	}
	return m, nil
}

func (m mix) String() string {
	var parts []string
	for _, k := range faultKinds {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %g%%", k, m[k]))
		}
	}
	if len(parts) == 0 {
		return "no faults"
	}
	return strings.Join(parts, ", ")
}

// sink is the in-process tracking API: the mock with a rule that answers
// by the fault mix, and a count of what it accepted.
type sink struct {
	api *analyticstest.Server
	ln  *analyticstest.Listener
	// seen marks the events received in a request answered 2xx.
	seen *bitset

	mu       sync.Mutex
	statuses map[int]int64 // answers by status; 0: none (drop, partial, stall)
	copies   int64         // events in 2xx answers, duplicates included
	dupes    int64         // of which already received before
	foreign  int64         // events whose messageId is not one of ours
}

func startSink(cfg config, events int) (*sink, error) {
	s := &sink{api: analyticstest.New(), seen: newBitset(events), statuses: map[int]int64{}}
	s.api.Rule(s.rule(cfg)).OnRequest(s.count)
	ln, err := s.api.Start()
	if err != nil {
		return nil, err
	}
	s.ln = ln
	return s, nil
}

// rule draws each request's answer from the mix.
func (s *sink) rule(cfg config) func(analyticstest.Request) analyticstest.Answer {
	return func(analyticstest.Request) analyticstest.Answer {
		x := rand.Float64() * 100
		for _, k := range faultKinds {
			if x -= cfg.faults[k]; x >= 0 {
				continue
			}
			switch k {
			case fault503, fault500:
				code, _ := strconv.Atoi(string(k))
				return analyticstest.Status(code)
			case fault429:
				return analyticstest.RetryAfter(http.StatusTooManyRequests, cfg.retryAfter)
			case faultDrop:
				return analyticstest.Answer{Drop: true}
			case faultPartial:
				return analyticstest.Answer{Partial: true}
			case faultStall:
				// Cut short when the client gives up (RequestTimeout).
				return analyticstest.Answer{Delay: 24 * time.Hour}
			}
		}
		var delay time.Duration
		if cfg.latency > 0 {
			delay = rand.N(cfg.latency)
		}
		return analyticstest.Answer{Delay: delay}
	}
}

// count runs for each request as it is answered.
func (s *sink) count(r analyticstest.Request) {
	ok := r.Status >= 200 && r.Status <= 299
	var copies, dupes, foreign int64
	if ok {
		for _, e := range r.Events {
			id, _ := e["messageId"].(string)
			n, isOurs := parseID(id)
			switch {
			case !isOurs:
				foreign++
			case s.seen.set(n):
				dupes++
			}
			copies++
		}
	}
	s.mu.Lock()
	s.statuses[r.Status]++
	s.copies += copies
	s.dupes += dupes
	s.foreign += foreign
	s.mu.Unlock()
}

// trim clears the mock's record, which keeps every request in memory, and
// puts the rule back (Reset removes it). A request answered in between
// gets a plain 200: the mix is a little milder for an instant.
func (s *sink) trim(cfg config) {
	s.api.Reset().Rule(s.rule(cfg))
}

func (s *sink) close() { s.ln.Close() }

type sinkCounts struct {
	statuses               map[int]int64
	copies, dupes, foreign int64
}

func (s *sink) counts() sinkCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := make(map[int]int64, len(s.statuses))
	for k, v := range s.statuses {
		st[k] = v
	}
	return sinkCounts{statuses: st, copies: s.copies, dupes: s.dupes, foreign: s.foreign}
}

func (c sinkCounts) answers() string {
	codes := make([]int, 0, len(c.statuses))
	for code := range c.statuses {
		codes = append(codes, code)
	}
	sort.Ints(codes)
	var parts []string
	for _, code := range codes {
		name := strconv.Itoa(code)
		if code == 0 {
			name = "none"
		}
		parts = append(parts, fmt.Sprintf("%d×%s", c.statuses[code], name))
	}
	return strings.Join(parts, " ")
}

const idPrefix = "soak-"

func eventID(n int) string { return idPrefix + strconv.Itoa(n) }

func parseID(id string) (int, bool) {
	s, ok := strings.CutPrefix(id, idPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 0
}

// bitset marks event numbers; it is sized once, so it does not grow with
// the run. Safe for concurrent use.
type bitset struct {
	mu sync.Mutex
	w  []uint64
}

func newBitset(n int) *bitset { return &bitset{w: make([]uint64, (n+63)/64)} }

// set marks n and reports whether it was marked already. A number beyond
// the size is ignored (reported as marked, so it shows as an anomaly).
func (b *bitset) set(n int) (already bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if n/64 >= len(b.w) {
		return true
	}
	was := b.w[n/64]&(1<<(n%64)) != 0
	b.w[n/64] |= 1 << (n % 64)
	return was
}

func (b *bitset) has(n int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return n/64 < len(b.w) && b.w[n/64]&(1<<(n%64)) != 0
}
