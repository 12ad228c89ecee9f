package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/jitter"
	"github.com/dualpath/analytics-go/retry"
)

// batchRun is the outcome of one batch of a fleetRun, and when it came.
type batchRun struct {
	id  string
	err error
	at  time.Time
}

// deliverMany starts n batches of one event each, one every every (0: all
// at once), each on a goroutine of its own as the analytics package runs
// them, and returns their outcomes once every batch has one. The event of
// batch i has messageId prefix-i.
func (r *rig) deliverMany(prefix string, n int, every time.Duration) []batchRun {
	r.t.Helper()
	out := make([]batchRun, n)
	var wg sync.WaitGroup
	for i := range n {
		if i > 0 {
			time.Sleep(every)
		}
		id := fmt.Sprintf("%s-%d", prefix, i)
		wg.Go(func() {
			ctx := context.Background()
			slot, err := r.up.acquire(ctx)
			if !assert.NoError(r.t, err) {
				return
			}
			ev := fmt.Appendf(nil, `{"type":"track","event":"E","userId":"u","messageId":%q}`, id)
			r.up.deliver(ctx, slot, [][]byte{ev}, func(_, _ int, err error) {
				out[i] = batchRun{id: id, err: err, at: time.Now()}
			})
		})
	}
	wg.Wait()
	return out
}

// downUntil answers with down until the bubble's clock reaches the end,
// then 200.
func downUntil(end time.Time, down answer) func(sent) answer {
	return func(s sent) answer {
		if s.at.Before(end) {
			return down
		}
		return status(200)
	}
}

// during returns the requests sent in [from, to).
func during(reqs []sent, from, to time.Time) []sent {
	var in []sent
	for _, s := range reqs {
		if !s.at.Before(from) && s.at.Before(to) {
			in = append(in, s)
		}
	}
	return in
}

// perSecond counts the requests of each second from from on, for n
// seconds.
func perSecond(reqs []sent, from time.Time, n int) []int {
	bins := make([]int, n)
	for _, s := range reqs {
		if i := int(s.at.Sub(from) / time.Second); !s.at.Before(from) && i < n {
			bins[i]++
		}
	}
	return bins
}

// During an outage, a client that sent 4 batches a second sends one
// attempt at a time once three have failed in a row, spaced as the
// backoff schedule says but at least 8/4 = 2s apart, an eighth of its
// healthy rate (2s, 2s, then every 4s, ProbeInterval), not a retry loop
// per batch. The
// batches held back spend no retry: with 3 retries each, where a loop of
// its own would have run out after 1.75s, every batch gets through a 40s
// outage.
func TestOutageSendsOnlyTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t).policy(func(p *retry.Policy) { p.RetryCount = 3 })
		start := time.Now()
		down, up := start.Add(20*time.Second), start.Add(60*time.Second)
		r.tr.rule = func(s sent) answer {
			if !s.at.Before(down) && s.at.Before(up) {
				return status(503)
			}
			return status(200)
		}
		out := r.deliverMany("m", 320, 250*time.Millisecond) // for 80s
		for _, o := range out {
			assert.NoError(t, o.err, "batch %s", o.id)
		}
		reqs := r.tr.requests()
		outage := during(reqs, down, up)
		var spacing []time.Duration
		for i := 1; i < len(outage); i++ {
			spacing = append(spacing, outage[i].at.Sub(outage[i-1].at))
		}
		// The first batches and their retries, within 500ms, until three
		// fail in a row (which attempts they are depends on how the
		// goroutines of batches due in the same instant run); then the
		// probe, at least 8 over the healthy rate (a little over 4 a
		// second) apart, then ProbeInterval.
		early := len(during(reqs, down, down.Add(time.Second)))
		assert.LessOrEqual(t, early, 6, "attempts before the client probes: 3 in a row, those in flight together counting once")
		assert.LessOrEqual(t, len(outage), early+10, "attempts during the 40s outage, where 160 batches were due")
		for i, d := range spacing[early-1:] {
			assert.GreaterOrEqual(t, d, 1950*time.Millisecond, "the spacing of probe %d", i+1)
		}
		for i, d := range spacing[len(spacing)-8:] {
			assert.Equal(t, 4*time.Second, d, "the spacing of one of the last probes (%d)", i)
		}
		for _, s := range reqs {
			assert.NotEqual(t, "4", s.header.Get("X-Retry-Count"), "a batch retried 4 times with RetryCount 3: %v", s)
		}
		assert.Positive(t, r.up.SendRate().Held, "attempts held back")
	})
}

// The option off is the SDK as it was: each batch retries on its own
// schedule, so the same outage ends every batch with ErrRetriesExhausted,
// after many more attempts.
func TestOutageWithTheSendRateOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t).policy(func(p *retry.Policy) { p.RetryCount = 3 })
		r.up.gate = retry.NewGate(&r.up.cfg.Policy, false) // as New makes it with AdaptiveSendRate false
		start := time.Now()
		r.tr.rule = downUntil(start.Add(40*time.Second), status(503))
		out := r.deliverMany("m", 16, 0)
		for _, o := range out {
			assert.ErrorIs(t, o.err, retry.ErrRetriesExhausted, "batch %s", o.id)
			assert.Equal(t, 1750*time.Millisecond, o.at.Sub(start), "batch %s failed after 250ms+500ms+1s", o.id)
		}
		assert.Len(t, r.tr.requests(), 16*4, "attempts: 4 of each batch")
		assert.Equal(t, retry.GateState{}, r.up.SendRate(), "the send rate's state when off")
	})
}

// After a 20s outage, the backlog of a client that sent 10 batches a
// second goes out at 2.5 times its usual rate, not all at once (the
// outage's failures are too few against the accepts of the 2 minutes
// before for the throttle to bind, so the limit starts at its ceiling),
// and every held batch is delivered, once.
func TestRecoveryRampsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		start := time.Now()
		down, up := start.Add(20*time.Second), start.Add(40*time.Second)
		r.tr.rule = func(s sent) answer {
			if !s.at.Before(down) && s.at.Before(up) {
				return status(503)
			}
			return status(200)
		}
		out := r.deliverMany("m", 600, 100*time.Millisecond) // for 60s
		delivered := map[string]int{}
		for _, s := range r.tr.requests() {
			if !s.at.Before(down) && s.at.Before(up) {
				continue
			}
			for _, id := range s.ids() {
				delivered[id]++
			}
		}
		for _, o := range out {
			assert.NoError(t, o.err, "batch %s", o.id)
			assert.Equal(t, 1, delivered[o.id], "times %s was delivered", o.id)
		}
		// The probe finds the API back within ProbeInterval (4s).
		var back time.Time
		for _, s := range r.tr.requests() {
			if !s.at.Before(up) {
				back = s.at
				break
			}
		}
		require.False(t, back.IsZero(), "no request after the recovery")
		assert.LessOrEqual(t, back.Sub(up), 4*time.Second, "the recovery seen after")
		bins := perSecond(r.tr.requests(), back, 20)
		t.Logf("attempts per second once the API is seen back: %v", bins)
		for i, n := range bins[:10] {
			assert.LessOrEqual(t, n, 27, "attempts in second %d: at most 2.5 × 10, the probe and one ready", i)
		}
		// 200 batches held by the outage, 10 more each second: at 25 a
		// second the backlog is gone within about 15s, and after 10s at
		// the ceiling the ceiling itself rises.
		for _, o := range out[:400] { // those started before the recovery
			if o.at.After(back.Add(15 * time.Second)) {
				assert.Fail(t, "a batch delivered late", "%s at %v after the API was seen back", o.id, o.at.Sub(back))
				break
			}
		}
		// Then the limit, no longer binding, is lifted.
		assert.Equal(t, retry.GateState{}.Limit, r.up.SendRate().Limit, "the limit at the end")
	})
}

// A batch sleeping through a long backoff does not sleep on once another
// batch's success shows the API is back: it goes at once.
func TestRecoveryWakesALongBackoff(t *testing.T) {
	for _, adaptive := range []bool{true, false} {
		t.Run(fmt.Sprintf("adaptive=%v", adaptive), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t)
				r.up.gate = retry.NewGate(&r.up.cfg.Policy, adaptive)
				start := time.Now()
				r.tr.rule = downUntil(start.Add(20*time.Second), status(503))
				var wg sync.WaitGroup
				var a batchRun
				wg.Go(func() {
					// Attempts at 0, 0.25, 0.75, 1.75, 3.75, 7.75, 15.75s;
					// then a wait of 16s, to 31.75s.
					a = r.deliverMany("a", 1, 0)[0]
				})
				time.Sleep(21 * time.Second)
				b := r.deliverMany("b", 1, 0)[0]
				wg.Wait()
				require.NoError(t, a.err)
				require.NoError(t, b.err)
				assert.Equal(t, 21*time.Second, b.at.Sub(start), "b, delivered at once")
				if adaptive {
					assert.Equal(t, 21*time.Second, a.at.Sub(start), "a, woken by b's success")
				} else {
					assert.Equal(t, 31750*time.Millisecond, a.at.Sub(start), "a, at the end of its backoff")
				}
			})
		})
	}
}

// A Retry-After pause ends after a jitter of the client's own, up to a
// tenth of the wait (at most 1s), never earlier than the server asked; the
// log shows the server's wait and the jitter apart. Off, the pause ends
// at the server's time.
func TestRetryAfterPauseEndsWithTheClientsJitter(t *testing.T) {
	for _, tt := range []struct {
		name     string
		adaptive bool
		jitter   func(time.Duration) time.Duration
		ra       string
		want     time.Duration
	}{
		{"no jitter", true, func(time.Duration) time.Duration { return 0 }, "10", 10 * time.Second},
		{"half", true, func(n time.Duration) time.Duration { return n / 2 }, "4", 4200 * time.Millisecond},
		{"most, capped at 1s", true, func(n time.Duration) time.Duration { return n - 1 }, "30", 31*time.Second - 1},
		{"off", false, func(n time.Duration) time.Duration { return n - 1 }, "30", 30 * time.Second},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				var logs strings.Builder
				r := newRig(t, retryAfter(429, tt.ra)).policy(func(p *retry.Policy) { jitter.Set(p, tt.jitter) })
				r.up.cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
				if !tt.adaptive {
					r.up.gate = retry.NewGate(&r.up.cfg.Policy, false)
				}
				require.NoError(t, one(t, r.deliver(context.Background(), 1), 1))
				assert.Equal(t, []time.Duration{tt.want}, r.waits(), "the wait before the retry")
				assert.Contains(t, logs.String(), " path=rate-limit wait="+tt.ra+"s ", "the log: the server's wait")
				ra, err := time.ParseDuration(tt.ra + "s")
				require.NoError(t, err)
				if tt.adaptive {
					assert.Contains(t, logs.String(), " jitter="+(tt.want-ra).String()+" ", "the log: the jitter, apart")
				} else {
					assert.NotContains(t, logs.String(), "jitter=", "the log without the send rate")
				}
			})
		})
	}
}

// Clients given the same Retry-After at the same instant come back apart,
// each after its own jitter, none before the server's time.
func TestClientsResumeApart(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rigs []*rig
		for range 5 {
			r := newRig(t, retryAfter(429, "5")).policy(func(p *retry.Policy) { jitter.Set(p, nil) })
			rigs = append(rigs, r)
		}
		var wg sync.WaitGroup
		for _, r := range rigs {
			wg.Go(func() { require.NoError(t, one(t, r.deliver(context.Background(), 1), 1)) })
		}
		wg.Wait()
		seen := map[time.Duration]bool{}
		for i, r := range rigs {
			w := r.waits()
			require.Len(t, w, 1, "client %d's waits", i)
			assert.GreaterOrEqual(t, w[0], 5*time.Second, "client %d: never earlier than asked", i)
			assert.Less(t, w[0], 5500*time.Millisecond, "client %d: at most a tenth later", i)
			seen[w[0]] = true
		}
		assert.Len(t, seen, len(rigs), "distinct waits of %d clients", len(rigs))
	})
}

// A batch held back by the send rate spends its backoff budget's time,
// not its retries: when the budget ends while it waits, it fails then with
// ErrBackoffBudgetExceeded, never later, and a wait known not to fit fails
// at once.
func TestHeldBatchFailsWhenItsBudgetEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t).policy(func(p *retry.Policy) {
			p.RetryCount = 1000
			p.MaxTotalBackoffDuration = 10 * time.Second
		})
		r.tr.rule = func(sent) answer { return status(503) }
		out := r.deliverMany("m", 8, 0)
		first := map[string]time.Time{}
		for _, s := range r.tr.requests() {
			for _, id := range s.ids() {
				if _, ok := first[id]; !ok {
					first[id] = s.at
				}
			}
		}
		for _, o := range out {
			assert.ErrorIs(t, o.err, retry.ErrBackoffBudgetExceeded, "batch %s", o.id)
			assert.LessOrEqual(t, o.at.Sub(first[o.id]), 10*time.Second, "batch %s failed past its budget", o.id)
		}
		assert.Less(t, len(r.tr.requests()), 8+10, "attempts: the 8 first ones, then the probe")
	})
}

// Stats: while the API is down the client probes, shows the probe's rate
// and the attempts waiting; after the recovery the limit rises, and once
// it no longer binds it is lifted.
func TestSendRateStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		start := time.Now()
		down, recovery := start.Add(2*time.Second), start.Add(30*time.Second)
		r.tr.rule = func(s sent) answer {
			if !s.at.Before(down) && s.at.Before(recovery) {
				return status(503)
			}
			return status(200)
		}
		r.deliverMany("healthy", 4, 500*time.Millisecond) // a healthy rate of 2 a second
		time.Sleep(time.Until(down))
		var wg sync.WaitGroup
		wg.Go(func() { r.deliverMany("m", 6, 0) })
		time.Sleep(10 * time.Second)
		synctest.Wait()
		st := r.up.SendRate()
		assert.True(t, st.Probing, "probing during the outage")
		assert.Equal(t, 0.25, st.Limit, "the probe's rate: one per 4s")
		assert.Positive(t, st.Held, "attempts held back")
		assert.Positive(t, st.Waiting, "attempts waiting now")
		wg.Wait()
		st = r.up.SendRate()
		assert.False(t, st.Probing, "after the recovery")
		assert.Positive(t, st.Limit, "the limit right after the recovery")
		assert.Zero(t, st.Waiting, "attempts waiting once all are delivered")
		time.Sleep(time.Second)
		st = r.up.SendRate()
		assert.Zero(t, st.Limit, "the limit a second later: lifted")
	})
}

// A batch alone, with BackoffBase 0, retries without waiting, with the
// send rate on as off.
func TestNoBackoffNoWait(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, status(503), status(502), dropped(PhaseWritten)).policy(func(p *retry.Policy) { p.BackoffBase = 0 })
		require.NoError(t, one(t, r.deliver(context.Background(), 2), 2))
		assert.Len(t, r.tr.requests(), 4, "attempts")
		assert.Empty(t, r.waits(), "waits")
	})
}
