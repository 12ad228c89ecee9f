package faults

// Random fault scripts against the real TLS server (HTTP/1.1, or HTTP/2
// where connection faults become stream resets): statuses, Retry-After
// values, dropped and reset connections, partial answers, delays, stalls,
// and random client settings. Whatever happens, every accepted event ends
// delivered or failed, exactly once, and each delivered one arrived in a
// request the server answered 2xx.
//
// The seed is printed; replay a failure with
//
//	go test -race -run TestRandomFaultScripts ./faults/ -faults.seed=N
//
// or FAULTS_SEED=N in the environment.

import (
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
)

var seedFlag = flag.Uint64("faults.seed", 0, "seed of TestRandomFaultScripts (0: $FAULTS_SEED, else the clock)")

const randomIterations = 40

func TestRandomFaultScripts(t *testing.T) {
	leakCheck(t)
	seed := *seedFlag
	if seed == 0 {
		if env := os.Getenv("FAULTS_SEED"); env != "" {
			var err error
			seed, err = strconv.ParseUint(env, 10, 64)
			require.NoError(t, err, "FAULTS_SEED=%q", env)
		}
	}
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay: go test -race -run TestRandomFaultScripts ./faults/ -faults.seed=%d)", seed, seed)
	for i := range randomIterations {
		rng := rand.New(rand.NewPCG(seed, uint64(i)))
		passed := t.Run(strconv.Itoa(i), func(t *testing.T) { runRandomScript(t, rng) })
		require.True(t, passed, "iteration %d failed; replay: go test -race -run TestRandomFaultScripts/%d ./faults/ -faults.seed=%d", i, i, seed)
	}
}

// randomAnswer draws one answer: mostly statuses, some with Retry-After,
// some connection faults.
func randomAnswer(rng *rand.Rand) Answer {
	pick := func(xs ...int) int { return xs[rng.IntN(len(xs))] }
	withRA := func(status int, values ...string) Answer {
		return Answer{Status: status, Header: http.Header{"Retry-After": {values[rng.IntN(len(values))]}}}
	}
	switch w := rng.IntN(100); {
	case w < 28:
		return Answer{Status: pick(200, 200, 201, 202, 204)}
	case w < 42:
		return Answer{Status: pick(408, 410, 429, 460, 500, 502, 503, 504)}
	case w < 54: // valid: the rate-limit path
		future := time.Now().Add(time.Duration(1+rng.IntN(60)) * time.Second).UTC().Format(http.TimeFormat)
		return withRA(pick(429, 503), "1", "2", "0005", "120", "99999999999999999999", future)
	case w < 60: // invalid: the backoff path
		past := time.Now().Add(-time.Hour).UTC().Format(http.TimeFormat)
		return withRA(pick(429, 503), "0", "-1", "1.5", "soon", " ", past)
	case w < 65:
		return Answer{Status: pick(400, 401, 403, 404, 422, 501, 505, 511)}
	case w < 68:
		return Answer{Status: http.StatusRequestEntityTooLarge}
	case w < 76:
		return Answer{Delay: time.Duration(rng.IntN(20)) * time.Millisecond}
	case w < 80:
		return Answer{Action: CloseRaw}
	case w < 84:
		return Answer{Action: CloseTLS}
	case w < 88:
		return Answer{Action: Reset}
	case w < 92:
		return Answer{Action: PartialHeaders}
	case w < 94:
		return Answer{Action: Stall}
	default:
		return Answer{Action: KillIfReused}
	}
}

func describe(a Answer) string {
	if a.Action != Respond {
		return a.Action.String()
	}
	s := strconv.Itoa(cmp0(a.Status, 200))
	if ra := a.Header.Get("Retry-After"); ra != "" || a.Header != nil {
		s += fmt.Sprintf("(RA %q)", ra)
	}
	if a.Delay > 0 {
		s += "+" + a.Delay.String()
	}
	return s
}

func cmp0(x, def int) int {
	if x == 0 {
		return def
	}
	return x
}

func runRandomScript(t *testing.T, rng *rand.Rand) {
	h2 := rng.IntN(4) == 0
	s := startServer(t, h2)
	var script []string
	for range rng.IntN(16) {
		a := randomAnswer(rng)
		s.Script(a)
		script = append(script, describe(a))
	}
	var conn []string
	for range rng.IntN(3) {
		f := []ConnFault{ConnServe, ConnClose, ConnReset}[rng.IntN(3)]
		s.ConnScript(f)
		conn = append(conn, []string{"serve", "close", "reset"}[f])
	}
	retries := rng.IntN(5)
	flushAt := 1 + rng.IntN(40)
	workers := 1 + rng.IntN(4)
	gzipOn := rng.IntN(4) > 0
	rateBudget, backoffBudget := time.Hour, time.Hour
	if rng.IntN(6) == 0 {
		rateBudget = 0 // any valid Retry-After fails the batch
	}
	if rng.IntN(8) == 0 {
		backoffBudget = 0 // any backoff wait fails the batch
	}
	n := 1 + rng.IntN(200)
	t.Logf("script %v, conns %v; HTTP/2 %v, %d events, FlushAt %d, %d workers, RetryCount %d, gzip %v, budgets rate-limit %v backoff %v",
		script, conn, h2, n, flushAt, workers, retries, gzipOn, rateBudget, backoffBudget)

	e := newEnv(t, s.URL, s.HTTPClient(t, 0),
		analytics.WithFlushAt(flushAt),
		analytics.WithMaxConcurrentRequests(workers),
		analytics.WithRetryCount(retries),
		analytics.WithGzip(gzipOn),
		analytics.WithRequestTimeout(150*time.Millisecond),
		analytics.WithRateLimitRetryAfterCap(3*time.Millisecond),
		analytics.WithMaxRateLimitDuration(rateBudget),
		analytics.WithMaxTotalBackoffDuration(backoffBudget),
	)
	msgs := tracks("r", n)
	mid := rng.IntN(n + 1)
	e.enqueue(msgs[:mid]...)
	if rng.IntN(2) == 0 {
		e.flush()
	}
	e.enqueue(msgs[mid:]...)
	e.close()

	// Every accepted event: exactly one outcome.
	delivered, failed := e.out.Split(t, ids(msgs))
	st := e.client.Stats()
	f := st.Failed
	failedSum := f.RetriesExhausted + f.BackoffBudgetExceeded + f.RateLimitBudgetExceeded + f.FatalStatus + f.Redirect + f.Shutdown + f.Other
	assert.Equal(t, int64(n), st.Enqueued, "Stats.Enqueued")
	assert.Equal(t, int64(len(delivered)), st.Delivered, "Stats.Delivered, against Success callbacks")
	assert.Equal(t, int64(len(failed)), failedSum, "Stats.Failed, all reasons, against Failure callbacks")
	assert.Equal(t, st.Enqueued, st.Delivered+failedSum, "Stats: delivered and failed, against enqueued")
	assert.Zero(t, st.InFlight, "Stats.InFlight")
	assert.Zero(t, st.QueueDepth, "Stats.QueueDepth")
	// Every attempt either ended its batch, split it, or led to a retry.
	assert.Equal(t, st.BatchesDelivered+st.BatchesFailed+st.Splits+st.Retries.Backoff+st.Retries.RateLimit, st.Attempts,
		"Stats.Attempts, against batch outcomes, splits and retries")

	// Every delivered event arrived in a 2xx request.
	got := s.DeliveredIDs()
	for _, id := range delivered {
		assert.Positive(t, got[id], "%s reported delivered: requests answered 2xx that carried it", id)
	}
	for id, err := range failed {
		checkRandomFailure(t, id, err, retries)
	}

	// What the server saw: never more requests than attempts, and each
	// batch's attempts numbered once each, with the same bytes.
	reqs := s.Received()
	assert.LessOrEqual(t, int64(len(reqs)), st.Attempts+st.Resends, "requests the server received, against the client's attempts and resends")
	if h2 {
		assert.Zero(t, st.Resends, "Stats.Resends over HTTP/2")
	}
	byBatch := map[string][]Received{}
	for _, r := range reqs {
		if r.Raw == nil || r.Cut {
			// Killed unread, or cut short by the client: the 150 ms
			// request timeout can end an attempt mid-body on a loaded
			// machine (an unexpected EOF, an HTTP/2 stream CANCEL).
			continue
		}
		if !assert.NoError(t, r.Err, "request on conn %d", r.Conn) {
			continue
		}
		assert.Equal(t, gzipOn, r.Header.Get("Content-Encoding") == "gzip", "Content-Encoding %q with gzip %v", r.Header.Get("Content-Encoding"), gzipOn)
		key := strings.Join(r.MessageIDs(), ",")
		byBatch[key] = append(byBatch[key], r)
	}
	for key, rs := range byBatch {
		last, answered, resent := -1, 0, false
		for _, r := range inClientOrder(rs) {
			rc := 0
			if h := r.Header.Get("X-Retry-Count"); h != "" {
				var err error
				rc, err = strconv.Atoi(h)
				assert.NoError(t, err, "X-Retry-Count %q", h)
				assert.GreaterOrEqual(t, rc, 1, "X-Retry-Count %q", h)
			}
			if rc == last {
				// An attempt lost to a kept-alive connection's close is
				// resent once, with its X-Retry-Count.
				assert.Zero(t, answered, "batch %.40s...: X-Retry-Count %d repeated after an answer", key, rc)
				assert.False(t, resent, "batch %.40s...: X-Retry-Count %d sent more than twice", key, rc)
				resent = true
			} else {
				assert.Greater(t, rc, last, "batch %.40s...: X-Retry-Count out of order", key)
				resent = false
			}
			last, answered = rc, r.Status
			// True rather than Equal: a diff of two bodies would be
			// hundreds of kilobytes.
			assert.True(t, r.withoutSentAt() == rs[0].withoutSentAt(), "batch %.40s...: the body changed between attempts beyond sentAt", key)
		}
	}
}

// checkRandomFailure checks a failed event's error says why, consistently.
func checkRandomFailure(t *testing.T, id string, err error, retries int) {
	t.Helper()
	var be *analytics.BatchError
	if !assert.ErrorAs(t, err, &be, id) {
		return
	}
	assert.GreaterOrEqual(t, be.Attempts, 1, "%s: attempts", id)
	var he *analytics.HTTPError
	var te *analytics.TransportError
	isHTTP, isTransport := errors.As(err, &he), errors.As(err, &te)
	// The last attempt's error: a response or a transport error, not both.
	lastErr := func() {
		assert.NotEqual(t, isHTTP, isTransport, "%s: %v: an *HTTPError %v, a *TransportError %v", id, err, isHTTP, isTransport)
	}
	switch {
	case errors.Is(err, analytics.ErrRetriesExhausted):
		assert.GreaterOrEqual(t, be.Attempts, retries+1, "%s: %v: attempts with RetryCount %d", id, err, retries)
		lastErr()
	case errors.Is(err, analytics.ErrBackoffBudgetExceeded):
		lastErr()
	case errors.Is(err, analytics.ErrRateLimitBudgetExceeded):
		if assert.True(t, isHTTP, "%s: %v: rate-limit budget exceeded without an HTTP answer", id, err) {
			assert.Positive(t, he.RetryAfter, "%s: %v: rate-limit budget exceeded without a Retry-After", id, err)
		}
	case errors.Is(err, analytics.ErrFatalStatus):
		if assert.True(t, isHTTP, "%s: %v: fatal without an HTTP answer", id, err) {
			fatal := []int{400, 401, 403, 404, 413, 422, 501, 505, 511}
			assert.Contains(t, fatal, he.StatusCode, "%s: %v: fatal without a fatal status", id, err)
			assert.Zero(t, he.RetryAfter, "%s: %v: a fatal status with a Retry-After", id, err)
		}
	default:
		assert.Fail(t, "no sentinel a user can match", "%s: %v", id, err)
	}
}
