package analytics

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fleetAPI is a tracking API shared by a fleet of clients, in memory: it
// answers with answer(now) and keeps, for each request, its time and
// status, and for each event delivered, how often. It keeps no bodies, so
// that a fleet's hour of traffic fits.
type fleetAPI struct {
	answer func(now time.Time) (status int, retryAfter string)

	mu        sync.Mutex
	at        []time.Time
	status    []int
	delivered map[string]int
	firstOK   map[string]time.Time
	maxRetry  int // the highest X-Retry-Count
}

func newFleetAPI(answer func(time.Time) (int, string)) *fleetAPI {
	return &fleetAPI{answer: answer, delivered: map[string]int{}, firstOK: map[string]time.Time{}}
}

func (f *fleetAPI) RoundTrip(req *http.Request) (*http.Response, error) {
	now := time.Now()
	raw, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	req.Body.Close()
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return nil, err
		}
		if raw, err = io.ReadAll(zr); err != nil {
			return nil, err
		}
	}
	status, retryAfter := f.answer(now)
	retries, _ := strconv.Atoi(req.Header.Get("X-Retry-Count"))
	f.mu.Lock()
	f.maxRetry = max(f.maxRetry, retries)
	f.at = append(f.at, now)
	f.status = append(f.status, status)
	if status/100 == 2 {
		var body struct {
			Batch []struct {
				MessageID string `json:"messageId"`
			} `json:"batch"`
		}
		if err := json.Unmarshal(raw, &body); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		for _, e := range body.Batch {
			if f.delivered[e.MessageID] == 0 {
				f.firstOK[e.MessageID] = now
			}
			f.delivered[e.MessageID]++
		}
	}
	f.mu.Unlock()
	h := http.Header{}
	if retryAfter != "" {
		h.Set("Retry-After", retryAfter)
	}
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader("")), Request: req}, nil
}

// perSecond counts the requests in each second of [from, to).
func (f *fleetAPI) perSecond(from, to time.Time) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	bins := make([]int, int(to.Sub(from)/time.Second))
	for _, at := range f.at {
		if i := int(at.Sub(from) / time.Second); !at.Before(from) && i < len(bins) {
			bins[i]++
		}
	}
	return bins
}

// fleetRun is a fleet's run: clients × rate events per second, an outage
// of the API from warmup to warmup+outage, then after more seconds of
// healthy API; then every client closes.
type fleetRun struct {
	clients, rate         int
	warmup, outage, after time.Duration
	answerDown            func() (int, string)
	opts                  []Option
	spread                time.Duration // the clients are made over it, one after the other
}

type fleetResult struct {
	healthy, during float64 // requests per second, the fleet's
	busiest         int     // the busiest second in the 10 s after recovery
	lastPreRecovery time.Duration
	lost, dups      int
	failed          int64
	drained         time.Duration // from the end of the run to every client closed
	maxRetry        int
	bins            []int
	stats           []Stats
}

func (r fleetRun) run(t *testing.T) fleetResult {
	var res fleetResult
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		down := start.Add(r.warmup)
		up := down.Add(r.outage)
		end := up.Add(r.after)
		api := newFleetAPI(func(now time.Time) (int, string) {
			if !now.Before(down) && now.Before(up) {
				return r.answerDown()
			}
			return 200, ""
		})
		var wg sync.WaitGroup
		enqueued := make([][]string, r.clients)
		enqueuedAt := make([][]time.Time, r.clients)
		clients := make([]*Client, r.clients)
		for i := range clients {
			// Clients made over spread have their flush timers at
			// phases of their own, as a fleet's replicas do.
			time.Sleep(r.spread / time.Duration(r.clients))
			opts := append([]Option{
				WithEndpoint("http://tracking.test"),
				WithHTTPClient(&http.Client{Transport: api, CheckRedirect: CheckRedirect}),
				WithLogger(slog.New(slog.DiscardHandler)),
				WithFlushAt(25),
				WithMaxQueueSize(1_000_000),
				WithMaxQueueBytes(1 << 30),
				WithCloseTimeout(0),
			}, r.opts...)
			c, err := New(testWriteKey, opts...)
			require.NoError(t, err)
			clients[i] = c
		}
		// Each client starts at its own phase within the first 10 ms.
		for i, c := range clients {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 10 * time.Millisecond / time.Duration(r.clients))
				tick := time.Second / time.Duration(r.rate)
				for n := 0; time.Now().Before(end); n++ {
					id := fmt.Sprintf("c%d-%d", i, n)
					if err := c.Enqueue(Track{UserId: "u", Event: "E", MessageId: id}); err != nil {
						t.Errorf("Enqueue: %v", err)
						return
					}
					enqueued[i] = append(enqueued[i], id)
					enqueuedAt[i] = append(enqueuedAt[i], time.Now())
					time.Sleep(tick)
				}
			})
		}
		wg.Wait()
		closing := time.Now()
		for _, c := range clients {
			assert.NoError(t, c.Close())
			st := c.Stats()
			res.stats = append(res.stats, st)
			res.failed += st.Failed.Total()
		}
		res.drained = time.Since(closing)
		healthy := api.perSecond(down.Add(-10*time.Second), down)
		sum := 0
		for _, n := range healthy {
			sum += n
		}
		res.healthy = float64(sum) / 10
		during := api.perSecond(down, up)
		sum = 0
		for _, n := range during {
			sum += n
		}
		res.during = float64(sum) / r.outage.Seconds()
		res.bins = api.perSecond(down.Add(-5*time.Second), up.Add(20*time.Second))
		for _, n := range api.perSecond(up, up.Add(10*time.Second)) {
			res.busiest = max(res.busiest, n)
		}
		api.mu.Lock()
		defer api.mu.Unlock()
		res.maxRetry = api.maxRetry
		for i := range clients {
			for j, id := range enqueued[i] {
				switch n := api.delivered[id]; {
				case n == 0:
					res.lost++
				case n > 1:
					res.dups += n - 1
				}
				if enqueuedAt[i][j].Before(up) {
					if ok, found := api.firstOK[id]; found {
						res.lastPreRecovery = max(res.lastPreRecovery, ok.Sub(up))
					}
				}
			}
		}
	})
	return res
}

// fleetSize is the fleet of the targets, 50 clients; under the
// race detector, which makes each run take several times longer, 5, each
// of which behaves the same.
func fleetSize() int {
	if raceEnabled {
		return 5
	}
	return 50
}

// The targets: a fleet of clients × 100 events a second, FlushAt
// 25, through a 20s outage in both forms, 503 and 429 with Retry-After: 5.
// During the outage the fleet sends at most a quarter of its healthy
// request rate; in the 10s after the recovery its busiest second is at
// most 3 times that rate; every event enqueued before the recovery is
// delivered within 15s of it; none is lost or delivered twice. The
// outages of other lengths recover at other points of the probe's and
// the pause's schedules.
func TestFleetOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet")
	}
	for _, tt := range []struct {
		name   string
		down   func() (int, string)
		outage time.Duration
	}{
		{"503 for 20s", func() (int, string) { return 503, "" }, 20 * time.Second},
		{"503 for 16s", func() (int, string) { return 503, "" }, 16 * time.Second},
		{"429 Retry-After 5 for 20s", func() (int, string) { return 429, "5" }, 20 * time.Second},
		{"429 Retry-After 5 for 18s", func() (int, string) { return 429, "5" }, 18 * time.Second},
	} {
		if raceEnabled && tt.outage != 20*time.Second {
			continue // the outages are enough to look for races
		}
		t.Run(tt.name, func(t *testing.T) {
			r := fleetRun{clients: fleetSize(), rate: 100, warmup: 30 * time.Second, outage: tt.outage, after: 30 * time.Second, answerDown: tt.down}
			res := r.run(t)
			t.Logf("%d clients: healthy %.0f/s, during the outage %.1f/s (%.2f×), busiest second after %d (%.2f×), last event enqueued before the recovery delivered %v after it",
				r.clients, res.healthy, res.during, res.during/res.healthy, res.busiest, float64(res.busiest)/res.healthy, res.lastPreRecovery.Round(time.Millisecond))
			t.Logf("requests per second from 5s before the outage: %v", res.bins)
			assert.LessOrEqual(t, res.during, 0.25*res.healthy, "requests per second during the outage")
			assert.LessOrEqual(t, float64(res.busiest), 3*res.healthy, "the busiest second in the 10s after the recovery")
			assert.LessOrEqual(t, res.lastPreRecovery, 15*time.Second, "the last event enqueued before the recovery delivered after it")
			assert.Zero(t, res.lost, "events lost")
			assert.Zero(t, res.dups, "events delivered twice")
			assert.Zero(t, res.failed, "events failed")
		})
	}
}

// The same targets for a quieter fleet in a longer outage: 20 clients of
// 20 events a second at the default FlushAt and FlushInterval, one batch
// every 5s each, started at phases spread over those 5s as a fleet's
// replicas are, through a 5-minute 503 outage. A probe every 4s would be
// more than such a client sends when healthy; the probes cost at most an
// eighth of it. The backlog of 5 minutes takes longer than 15s at 2.5
// times the healthy rate, and the recovery is seen up to 8 batch spacings
// late: it is logged, not held to 15s.
func TestFleetQuietLongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet")
	}
	r := fleetRun{clients: 20, rate: 20, warmup: 30 * time.Second, outage: 5 * time.Minute, after: 90 * time.Second,
		answerDown: func() (int, string) { return 503, "" }, opts: []Option{WithFlushAt(250)}, spread: 5 * time.Second}
	res := r.run(t)
	t.Logf("%d clients: healthy %.1f/s, during the outage %.2f/s (%.2f×), busiest second after %d (%.2f×), last event enqueued before the recovery delivered %v after it",
		r.clients, res.healthy, res.during, res.during/res.healthy, res.busiest, float64(res.busiest)/res.healthy, res.lastPreRecovery.Round(time.Millisecond))
	t.Logf("requests per second from 20s before the recovery: %v", res.bins[len(res.bins)-40:])
	assert.LessOrEqual(t, res.during, 0.25*res.healthy, "requests per second during the outage")
	assert.LessOrEqual(t, float64(res.busiest), 3*res.healthy, "the busiest second in the 10s after the recovery")
	assert.Zero(t, res.lost, "events lost")
	assert.Zero(t, res.dups, "events delivered twice")
	assert.Zero(t, res.failed, "events failed")
}

// Without the send rate, the same fleet is the one the issue measured:
// every batch retries on its own during the outage, and they all come
// back at once after it (and the last batches to come back, at the end
// of backoff waits of 16 to 32s, come late: random, and not checked).
func TestFleetOutageWithoutTheSendRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet")
	}
	r := fleetRun{clients: fleetSize(), rate: 100, warmup: 30 * time.Second, outage: 20 * time.Second, after: 40 * time.Second,
		answerDown: func() (int, string) { return 503, "" }, opts: []Option{WithAdaptiveSendRate(false)}}
	res := r.run(t)
	t.Logf("%d clients: healthy %.0f/s, during the outage %.1f/s (%.2f×), busiest second after %d (%.2f×), last event enqueued before the recovery delivered %v after it",
		r.clients, res.healthy, res.during, res.during/res.healthy, res.busiest, float64(res.busiest)/res.healthy, res.lastPreRecovery.Round(time.Millisecond))
	assert.Greater(t, res.during, 2*res.healthy, "requests per second during the outage")
	// 10-14× with 50 clients; with the 5 of a -race run, 6.4-14× (one
	// run in about twenty measured under 8×, the bound this once had): 5×
	// is still twice what the send rate allows (TestFleetOutage).
	assert.Greater(t, float64(res.busiest), 5*res.healthy, "the busiest second in the 10s after the recovery")
}

// A 10-minute outage at the default settings, with queue room for it,
// ends with every event delivered: batches held back by the send rate do
// not spend their retries, and the probe's turns go to the batches that
// have spent the fewest.
func TestFleetLongOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("a fleet")
	}
	for _, tt := range []struct {
		name string
		down func() (int, string)
	}{
		{"503", func() (int, string) { return 503, "" }},
		{"429 Retry-After 5", func() (int, string) { return 429, "5" }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := fleetRun{clients: min(fleetSize(), 2), rate: 100, warmup: 30 * time.Second, outage: 10 * time.Minute, after: time.Minute, answerDown: tt.down,
				opts: []Option{WithFlushAt(250)}}
			res := r.run(t)
			t.Logf("healthy %.1f/s, during the outage %.2f/s, last event enqueued before the recovery delivered %v after it, the most X-Retry-Count %d",
				res.healthy, res.during, res.lastPreRecovery.Round(time.Millisecond), res.maxRetry)
			assert.Zero(t, res.failed, "events failed")
			assert.Zero(t, res.lost, "events lost")
			assert.Zero(t, res.dups, "events delivered twice")
			if tt.name == "503" {
				assert.LessOrEqual(t, res.maxRetry, 6, "the most retries a batch spent, of 10")
			}
		})
	}
}
