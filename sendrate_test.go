package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// outageAPI answers 503 while down is set, else 200.
func outageAPI(down *atomic.Bool) *analyticstest.Server {
	return newAPI().Rule(func(analyticstest.Request) analyticstest.Answer {
		if down.Load() {
			return analyticstest.Status(503)
		}
		return analyticstest.Status(200)
	})
}

// Stats shows the send rate: nothing while healthy; while the API is
// down, probing, at the probe's rate, with the attempts held back and
// waiting; after the recovery, a limit, lifted once it no longer binds.
func TestStatsShowTheSendRate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		api := outageAPI(&down)
		e := newEnv(t, api, WithFlushAt(1), withExactBackoff())
		for _, m := range tracks("ok", 4) { // over 1.5s: a healthy rate of 2 a second
			e.enqueue(m)
			e.flush()
			time.Sleep(500 * time.Millisecond)
		}
		assert.Equal(t, SendRateStats{}, e.client.Stats().SendRate, "while healthy")

		down.Store(true)
		msgs := tracks("m", 5)
		e.enqueue(msgs...)
		// Three failures in a row, then probes 4s apart: ProbeInterval, and
		// 8 over the healthy rate.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := e.client.Stats()
		assert.True(t, st.SendRate.Probing, "probing during the outage")
		assert.Equal(t, 0.25, st.SendRate.Limit, "the limit while probing: one attempt per 4s (ProbeInterval)")
		assert.Positive(t, st.SendRate.Held, "attempts held back")
		assert.Positive(t, st.SendRate.Waiting, "attempts waiting now")
		// Each batch on its own schedule would have made 6 attempts by now
		// (TestAdaptiveSendRateOff): here three fail in a row, then the
		// client probes, one at a time.
		assert.Less(t, st.Attempts, int64(3+5*6)*2/3, "attempts")
		raw, err := json.Marshal(st)
		require.NoError(t, err, "Stats as JSON")
		assert.Contains(t, string(raw), `"send_rate":{"limit":0.25,"probing":true,`, "Stats as JSON")

		down.Store(false)
		e.flush()
		st = e.client.Stats()
		assert.False(t, st.SendRate.Probing, "after the recovery")
		assert.Positive(t, st.SendRate.Limit, "right after the recovery, a limit")
		assert.Zero(t, st.SendRate.Waiting, "waiting once every event is delivered")
		time.Sleep(time.Second)
		assert.Zero(t, e.client.Stats().SendRate.Limit, "a second later, the limit is lifted")
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}

// WithAdaptiveSendRate(false) is the client as it was: every batch
// retries on its own schedule, and Stats shows no send rate.
func TestAdaptiveSendRateOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		e := newEnv(t, outageAPI(&down), WithFlushAt(1), withExactBackoff(), WithAdaptiveSendRate(false))
		msgs := tracks("m", 5)
		e.enqueue(msgs...)
		// Each batch: 0, 0.25, 0.75, 1.75, 3.75, 7.75s.
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := e.client.Stats()
		assert.Equal(t, int64(5*6), st.Attempts, "attempts: each batch on its own schedule")
		assert.Equal(t, SendRateStats{}, st.SendRate, "no send rate")
		down.Store(false)
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}

// panicOnce is a transport that panics on the first request once armed,
// and passes every other request to next.
type panicOnce struct {
	next     http.RoundTripper
	armed    atomic.Bool
	panicked atomic.Bool
}

func (p *panicOnce) RoundTrip(req *http.Request) (*http.Response, error) {
	if p.armed.Load() && p.panicked.CompareAndSwap(false, true) {
		panic("transport bug")
	}
	return p.next.RoundTrip(req)
}

// A panic in the transport on the probe's attempt is recovered, fails that
// batch, and ends the probe: the next attempt goes, and with the API up
// everything else is delivered.
func TestPanicInTheProbeEndsTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var down atomic.Bool
		down.Store(true)
		api := outageAPI(&down)
		rt := &panicOnce{next: api}
		e := newEnv(t, api, WithHTTPClient(&http.Client{Transport: rt, CheckRedirect: CheckRedirect}),
			WithFlushAt(1), withExactBackoff(), WithLogger(slog.New(slog.DiscardHandler)))
		msgs := tracks("m", 3)
		e.enqueue(msgs...)
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.True(t, e.client.Stats().SendRate.Probing, "probing during the outage")

		down.Store(false)
		rt.armed.Store(true) // the next attempt, the probe's, panics
		time.Sleep(10 * time.Second)
		synctest.Wait()
		require.True(t, rt.panicked.Load(), "the probe's attempt panicked")
		later := tracks("later", 2)
		e.enqueue(later...)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if !assert.NoError(t, e.client.Flush(ctx), "Flush after the panic") {
			_ = e.client.Close() // bounded by the close timeout
			return
		}
		e.close()

		failures := e.out.Failures()
		require.Len(t, failures, 1, "the batch whose attempt panicked fails")
		assert.ErrorContains(t, failures[0].Err, "internal error", "its error")
		var delivered []Message
		for _, m := range msgs {
			if MessageID(m) != MessageID(failures[0].Message) {
				delivered = append(delivered, m)
			}
		}
		e.assertDeliveredOnce(append(delivered, later...))
	})
}

// halfFailing runs a client against an API that answers every other
// request 503 (one broken backend of two behind a round-robin balancer),
// after 5 s of answering all: for 30 s it offers 800 events a second into
// a queue of 1,000, then closes. It returns how many events Enqueue
// refused with ErrQueueFull, how many the API received, and how many
// failed.
func halfFailing(t *testing.T, opts ...Option) (refused, delivered, failed int) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var n atomic.Int64
		// Every other request fails, from 5 s on; but a batch's second
		// retry succeeds, so that no batch fails three times in a row by
		// the luck of the draw and holds its events for seconds: with the
		// send rate off, then, nothing is refused in any run, and the two
		// runs compare exactly.
		api := newAPI().Rule(func(r analyticstest.Request) analyticstest.Answer {
			if time.Since(start) >= 5*time.Second && r.Header.Get("X-Retry-Count") != "2" && n.Add(1)%2 == 1 {
				return analyticstest.Status(503)
			}
			return analyticstest.Status(200)
		})
		e := newEnv(t, api, append([]Option{WithMaxQueueSize(1000), WithFlushAt(50), withExactBackoff(), WithCloseTimeout(0), WithLogger(slog.New(slog.DiscardHandler))}, opts...)...)
		for i := 0; time.Since(start) < 35*time.Second; i++ {
			for j := range 8 {
				err := e.client.Enqueue(Track{MessageId: fmt.Sprintf("m%d-%d", i, j), UserId: "u", Event: "E"})
				if errors.Is(err, ErrQueueFull) {
					refused++
				} else {
					require.NoError(t, err, "Enqueue")
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		e.close()
		delivered = len(e.api.Delivered())
		var ok int
		ok, failed = e.out.Calls()
		assert.Equal(t, delivered, ok, "Success callbacks")
	})
	return refused, delivered, failed
}

// Against an API that accepts half the requests, the send rate refuses
// nothing and delivers everything the client with it off delivers: the
// share of attempts that fail is at the limit it tolerates, not above.
// (Halving the limit per failure and raising it by a quarter per success
// pinned the client at the probe: 45% of the events were refused.)
func TestHalfFailingAPI(t *testing.T) {
	refusedOff, deliveredOff, failedOff := halfFailing(t, WithAdaptiveSendRate(false))
	require.Zero(t, refusedOff, "refused with the send rate off")
	refused, delivered, failed := halfFailing(t)
	assert.Zero(t, refused, "refused with ErrQueueFull")
	assert.Equal(t, failedOff, failed, "events failed, as with the send rate off")
	assert.Equal(t, deliveredOff, delivered, "events delivered, as with the send rate off")
}
