package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rateRig drives a SendRate through time by hand.
type rateRig struct {
	t      *testing.T
	policy Policy
	s      *SendRate
	now    time.Time
}

func newRateRig(t *testing.T) *rateRig {
	r := &rateRig{t: t, policy: testPolicy(), now: t0}
	r.s = NewSendRate(&r.policy)
	return r
}

// admit asks for a turn now and requires one.
func (r *rateRig) admit(msg string) Turn {
	r.t.Helper()
	turn, wait, ok := r.s.Admit(r.now)
	require.True(r.t, ok, "%s: a turn at %v (told to wait %v)", msg, r.now.Sub(t0), wait)
	return turn
}

// held asks for a turn now, requires none, and returns the wait.
func (r *rateRig) held(msg string) time.Duration {
	r.t.Helper()
	_, wait, ok := r.s.Admit(r.now)
	require.False(r.t, ok, "%s: no turn at %v", msg, r.now.Sub(t0))
	return wait
}

// attempt admits an attempt now and ends it at once with o.
func (r *rateRig) attempt(o Outcome, msg string) bool {
	r.t.Helper()
	return r.s.End(r.admit(msg), r.now, o)
}

// next waits as long as the rate says, then admits an attempt.
func (r *rateRig) next(msg string) Turn {
	r.t.Helper()
	for {
		turn, wait, ok := r.s.Admit(r.now)
		if ok {
			return turn
		}
		require.Positive(r.t, wait, "%s: a wait for no probe in flight", msg)
		r.now = r.now.Add(wait)
	}
}

// healthy sends perSecond successful attempts a second, evenly, for d,
// from the clock on; the clock ends at the last attempt.
func (r *rateRig) healthy(perSecond int, d time.Duration) {
	r.t.Helper()
	start := r.now
	gap := time.Second / time.Duration(perSecond)
	for at := time.Duration(0); at < d; at += gap {
		r.now = start.Add(at)
		r.attempt(OutcomeSuccess, "healthy")
	}
}

func (r *rateRig) state() SendRateState { return r.s.State(r.now) }

func TestSendRateDoesNotBindWhileHealthy(t *testing.T) {
	r := newRateRig(t)
	// A thousand attempts in the same instant, and a thousand more, all
	// admitted at once: while the API answers, nothing is limited.
	for i := range 2000 {
		turn := r.admit("attempt")
		if i%2 == 0 {
			assert.False(t, r.s.End(turn, r.now, OutcomeSuccess), "a success while healthy is no recovery")
		}
	}
	assert.Equal(t, SendRateState{Mode: SendHealthy}, r.state())
	// Answers that say nothing of the API's load change nothing.
	for _, o := range []Outcome{OutcomeFatal, OutcomeRedirect, OutcomeTooLarge, 0} {
		r.attempt(o, o.String())
	}
	assert.Equal(t, SendRateState{Mode: SendHealthy}, r.state(), "after fatal, redirect, 413 and unsent attempts")
}

// A client of 4 attempts a second whose API fails: the limit halves to 2,
// below the probe's rate (one per first backoff wait, 250ms): it probes.
func TestSendRateProbesWhenTheAPIFails(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	failAt := r.now.Add(250 * time.Millisecond)
	r.now = failAt
	assert.False(t, r.attempt(OutcomeRetryable, "the first failure"), "a failure is no recovery")
	assert.Equal(t, SendRateState{Mode: SendProbing, Limit: 4}, r.state(), "after the first failure")
	assert.Equal(t, 250*time.Millisecond, r.held("right after the failure"), "the probe's first spacing: backoff retry 1's shortest wait")
	r.now = failAt.Add(250 * time.Millisecond)
	probe := r.admit("the first probe")
	// One attempt at a time: while the probe is in flight, no turn, and no
	// time to wait for (the probe's end decides).
	r.now = r.now.Add(time.Hour)
	assert.Zero(t, r.held("while the probe is in flight"), "the wait while the probe is in flight")
	r.s.End(probe, r.now, OutcomeRetryable)
	assert.Equal(t, 500*time.Millisecond, r.held("after the second failure"), "the spacing after the second failure in a row")
}

// The probe's spacing is the backoff schedule: after the k-th failure in
// a row, d/2 with d = min(BackoffCap, BackoffBase·2^(k−1)), at most
// ProbeInterval (4s by default).
func TestSendRateProbeSpacingIsTheBackoffSchedule(t *testing.T) {
	r := newRateRig(t)
	want := []time.Duration{
		250 * time.Millisecond, 500 * time.Millisecond, time.Second, 2 * time.Second,
		4 * time.Second, 4 * time.Second, 4 * time.Second,
	}
	var got []time.Duration
	for range want {
		r.attempt(OutcomeRetryable, "a probe")
		d := r.held("after a failed probe")
		got = append(got, d)
		r.now = r.now.Add(d)
	}
	assert.Equal(t, want, got, "probe spacings")
	assert.Equal(t, 0.25, r.state().Limit, "the limit shown while probing: one per 4s")

	r.policy.ProbeInterval = 0 // no cap but BackoffCap's
	for range 10 {
		r.attempt(OutcomeRetryable, "a probe")
		r.now = r.now.Add(r.held("after a failed probe"))
	}
	r.attempt(OutcomeRetryable, "a probe")
	assert.Equal(t, 30*time.Second, r.held("after many failures"), "BackoffCap/2")
}

// A batch alone in flight never waits for the send rate beyond its own
// backoff: the probe's spacing after its k-th failure is at most the
// shortest wait of its retry k, whatever the jitter, base and caps.
func TestProbeSpacingNeverExceedsTheBatchsOwnWait(t *testing.T) {
	for _, base := range []time.Duration{0, time.Millisecond, 500 * time.Millisecond, 7 * time.Second} {
		for _, probeCap := range []time.Duration{0, time.Second, 4 * time.Second, time.Hour} {
			p := DefaultPolicy()
			p.BackoffBase, p.ProbeInterval = base, probeCap
			p.Jitter = noJitter
			for k := 1; k <= 40; k++ {
				require.LessOrEqual(t, p.probeSpacing(k), p.backoff(k), "base %v, ProbeInterval %v, retry %d", base, probeCap, k)
			}
		}
	}
}

// With Backoff set, it is the backoff path's wait (a negative one counts as
// 0), and the probe's spacing follows it, so that a batch alone in flight
// still waits no more than its own wait.
func TestBackoffFuncSetsWaitsAndProbeSpacing(t *testing.T) {
	p := DefaultPolicy()
	p.Backoff = func(n int) time.Duration { return time.Duration(n-2) * time.Second }
	for k := 1; k <= 10; k++ {
		want := max(time.Duration(k-2)*time.Second, 0)
		assert.Equal(t, want, p.backoff(k), "retry %d", k)
		assert.Equal(t, min(want, p.ProbeInterval), p.probeSpacing(k), "probe after %d failures", k)
	}
}

// A client that sends 1,000 attempts a second, and an API that fails: the
// limit halves at each failure, from 500 a second, down to the probe.
// Attempts in flight together count once.
func TestSendRateHalvesOnFailure(t *testing.T) {
	r := newRateRig(t)
	r.healthy(1000, 20*time.Second)
	r.now = r.now.Add(time.Millisecond)
	var inFlight []Turn
	for range 8 {
		inFlight = append(inFlight, r.admit("one of 8 in flight"))
	}
	r.now = r.now.Add(time.Millisecond)
	for _, turn := range inFlight {
		r.s.End(turn, r.now, OutcomeRetryable)
	}
	st := r.state()
	assert.Equal(t, SendLimited, st.Mode, "after 8 failures in flight together")
	assert.InDelta(t, 500, st.Limit, 5, "half the healthy rate: the 8 failures count once")

	limits := []float64{st.Limit}
	for r.state().Mode == SendLimited {
		r.now = r.now.Add(r.held("the limit binds"))
		r.attempt(OutcomeRetryable, "a failure")
		limits = append(limits, r.state().Limit)
	}
	require.Len(t, limits, 8, "limits until the probe")
	for i, l := range limits[1:7] {
		assert.InDelta(t, limits[i]/2, l, 1e-9, "failure %d halves the limit", i+2)
	}
	assert.Equal(t, SendRateState{Mode: SendProbing, Limit: 0.25}, r.state(),
		"probing, after 7 failures in a row (one for the 8 in flight): one per 4s, ProbeInterval")
}

// After the API recovers, the limit starts at half the healthy rate (at
// least the probe's rate), rises by a quarter with each success, and holds
// at 2.5 times the healthy rate; after holding 10s there, the ceiling
// rises by half.
func TestSendRateRampsUpAfterRecovery(t *testing.T) {
	r := newRateRig(t)
	r.healthy(40, 20*time.Second)
	r.now = r.now.Add(25 * time.Millisecond)
	r.attempt(OutcomeRetryable, "the outage begins") // the limit: 20 a second
	for r.state().Mode == SendLimited {
		r.now = r.now.Add(r.held("the limit binds"))
		r.attempt(OutcomeRetryable, "the outage goes on") // 10, 5, 2.5 a second: probing
	}
	r.now = r.now.Add(r.held("the probe's spacing"))
	assert.True(t, r.attempt(OutcomeSuccess, "the probe"), "the first success after the probe is a recovery")
	st := r.state()
	assert.Equal(t, SendLimited, st.Mode, "after the recovery")
	assert.InDelta(t, 20, st.Limit, 0.5, "the limit after the recovery: half the healthy rate")

	// A backlog: attempts as fast as the limit allows. Count them by second.
	start := r.now
	perSecond := map[int]int{}
	var ceilingAt time.Duration
	for r.now.Sub(start) < 25*time.Second {
		turn := r.next("the backlog")
		assert.False(t, r.s.End(turn, r.now, OutcomeSuccess), "no recovery while limited")
		perSecond[int(r.now.Sub(start)/time.Second)]++
		if ceilingAt == 0 && r.state().Limit >= 100 {
			ceilingAt = r.now.Sub(start)
		}
	}
	assert.Less(t, ceilingAt, 500*time.Millisecond, "time to reach the ceiling")
	for sec := range 10 {
		assert.LessOrEqual(t, perSecond[sec], 101, "attempts in second %d: at most the ceiling, 2.5 × 40, and the turn that was ready", sec)
	}
	assert.InDelta(t, 150, perSecond[12], 2, "attempts in second 12: the ceiling rose by half after 10s")
	assert.InDelta(t, 225, perSecond[22], 3, "attempts in second 22: and again after 10s more")
}

// Once the limit holds nothing back for a second, and nothing fails, it
// is lifted.
func TestSendRateIsLiftedWhenItNoLongerBinds(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	r.now = r.now.Add(250 * time.Millisecond)
	r.attempt(OutcomeRetryable, "a failure")
	r.now = r.now.Add(r.held("the probe's spacing"))
	r.attempt(OutcomeSuccess, "the probe")
	require.Equal(t, SendLimited, r.state().Mode)
	r.now = r.now.Add(999 * time.Millisecond)
	r.attempt(OutcomeSuccess, "the usual traffic")
	assert.Equal(t, SendLimited, r.state().Mode, "999ms after the recovery")
	r.now = r.now.Add(time.Millisecond)
	assert.Equal(t, SendRateState{Mode: SendHealthy}, r.state(), "a second after the last hold and the last failure")
	for range 100 {
		r.admit("healthy again: no limit")
	}
}

// A rate-limited answer lowers the limit too, but the probe after it goes
// as soon as the Retry-After pause lets it: the pause is the wait.
func TestSendRateAfterARateLimitedAnswer(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	r.now = r.now.Add(250 * time.Millisecond)
	r.attempt(OutcomeRateLimited, "429 with Retry-After")
	assert.Equal(t, SendProbing, r.state().Mode, "after a 429")
	probe := r.admit("the probe, at once: the Pause holds it")
	assert.True(t, r.s.End(probe, r.now.Add(5*time.Second), OutcomeSuccess), "the answer after the pause: a recovery")
}

// The first attempt of a client that fails tells no healthy rate: the
// client probes, then ramps up from the probe's rate without a ceiling,
// until it no longer binds. So does a client younger than a second: its
// first milliseconds say little of what it sends.
func TestSendRateWithoutAHealthyRate(t *testing.T) {
	r := newRateRig(t)
	r.attempt(OutcomeRetryable, "the first attempt ever")
	assert.Equal(t, SendProbing, r.state().Mode, "after the first attempt failed")
	r.now = r.now.Add(r.held("the probe's spacing"))
	r.attempt(OutcomeSuccess, "the probe")
	assert.Equal(t, SendRateState{Mode: SendLimited, Limit: 4}, r.state(), "the probe's rate")
	for range 60 {
		r.s.End(r.next("the backlog"), r.now, OutcomeSuccess)
	}
	assert.Greater(t, r.state().Limit, 10_000.0, "no ceiling: the limit after 60 successes")

	r = newRateRig(t)
	r.healthy(1000, 100*time.Millisecond)
	r.attempt(OutcomeRetryable, "a failure 100ms after the start")
	assert.InEpsilon(t, 500, r.state().Limit, 0.05, "half the rate measured over 100ms")
	for range 60 {
		r.s.End(r.next("the backlog"), r.now, OutcomeSuccess)
	}
	assert.Greater(t, r.state().Limit, 1250.0, "the limit after 60 successes: above 2.5 × the rate, no ceiling")
}

// The turn of an attempt admitted before a cut does not cut again, nor
// does it recover the probe if it was not one; only the probe's own end
// frees the probe's turn.
func TestSendRateTurns(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	old := r.admit("an attempt in flight")
	r.attempt(OutcomeRetryable, "a failure")
	r.now = r.now.Add(r.held("the probe's spacing"))
	probe := r.admit("the probe")
	r.s.End(old, r.now, OutcomeRetryable)
	assert.Zero(t, r.held("the old attempt's end frees no turn"), "the probe is still in flight")
	r.s.End(probe, r.now, 0)
	r.admit("the probe's turn, given back unused")
}

func TestResumeJitter(t *testing.T) {
	p := DefaultPolicy()
	for _, tt := range []struct{ wait, most time.Duration }{
		{0, 0}, {time.Millisecond, 100 * time.Microsecond}, {5 * time.Second, 500 * time.Millisecond},
		{10 * time.Second, time.Second}, {300 * time.Second, time.Second},
	} {
		for range 200 {
			j := p.ResumeJitter(tt.wait)
			require.GreaterOrEqual(t, j, time.Duration(0), "jitter after %v", tt.wait)
			if tt.most == 0 {
				require.Zero(t, j, "jitter after %v", tt.wait)
			} else {
				require.Less(t, j, tt.most, "jitter after %v", tt.wait)
			}
		}
	}
	p.Jitter = fullJitter
	assert.Equal(t, 500*time.Millisecond-1, p.ResumeJitter(5*time.Second), "the most after 5s")
}

func TestBudgetHolds(t *testing.T) {
	p := testPolicy()
	p.MaxTotalBackoffDuration = 10 * time.Second
	b := p.NewBudget(1)
	_, ok := b.BackoffDeadline()
	assert.False(t, ok, "no backoff budget runs before a backoff-path failure")
	assert.True(t, b.HoldFits(now, 1000*time.Hour), "a first attempt may be held as long as it takes")
	b.Next(rateLimited(time.Second), now)
	assert.True(t, b.HoldFits(now, 1000*time.Hour), "nor does a rate-limited answer start it")

	b.Next(retryable, now)
	end, ok := b.BackoffDeadline()
	assert.True(t, ok, "after a backoff-path failure")
	assert.Equal(t, now.Add(10*time.Second), end, "the deadline")
	assert.True(t, b.HoldFits(now.Add(4*time.Second), 6*time.Second), "a hold ending at the deadline")
	assert.False(t, b.HoldFits(now.Add(4*time.Second), 6*time.Second+1), "a hold ending past it")
	assert.Equal(t, 1, b.Retries(), "a hold spends no retry")
}

// With BackoffBase 0 the backoff waits nothing, and neither does the
// probe: any failure probes, one attempt at a time, with no spacing; after
// the recovery the limit starts at one attempt per millisecond.
func TestSendRateWithoutBackoff(t *testing.T) {
	r := newRateRig(t)
	r.policy.BackoffBase = 0
	r.healthy(100, 2*time.Second)
	r.attempt(OutcomeRetryable, "a failure")
	assert.Equal(t, SendRateState{Mode: SendProbing}, r.state(), "after one failure, however slow the limit would be")
	probe := r.admit("the probe, at once")
	assert.Zero(t, r.held("while it is in flight"), "no turn, until it ends")
	r.s.End(probe, r.now, OutcomeRetryable)
	probe = r.admit("the next probe, at once")
	assert.True(t, r.s.End(probe, r.now, OutcomeSuccess), "the recovery")
	assert.Equal(t, SendRateState{Mode: SendLimited, Limit: 1000}, r.state(), "the limit after it: more than half the healthy rate")
}
