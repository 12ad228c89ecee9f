package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/jitter"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// rateRig drives a sendRate through time by hand.
type rateRig struct {
	t      *testing.T
	policy Policy
	s      *sendRate
	now    time.Time
}

func newRateRig(t *testing.T) *rateRig {
	r := &rateRig{t: t, policy: testPolicy(), now: t0}
	r.s = &sendRate{policy: &r.policy}
	return r
}

// admit asks for a turn now and requires one.
func (r *rateRig) admit(msg string) Turn {
	r.t.Helper()
	turn, wait, ok := r.s.admit(r.now)
	require.True(r.t, ok, "%s: a turn at %v (told to wait %v)", msg, r.now.Sub(t0), wait)
	return turn
}

// held asks for a turn now, requires none, and returns the wait.
func (r *rateRig) held(msg string) time.Duration {
	r.t.Helper()
	_, wait, ok := r.s.admit(r.now)
	require.False(r.t, ok, "%s: no turn at %v", msg, r.now.Sub(t0))
	return wait
}

// attempt admits an attempt now and ends it at once with o.
func (r *rateRig) attempt(o Outcome, msg string) bool {
	r.t.Helper()
	return r.s.end(r.admit(msg), r.now, o)
}

// next waits as long as the rate says, then admits an attempt.
func (r *rateRig) next(msg string) Turn {
	r.t.Helper()
	for {
		turn, wait, ok := r.s.admit(r.now)
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

// rateState is what the rate admits at the rig's now: its mode and limit.
type rateState struct {
	Mode  sendMode
	Limit float64
}

func (r *rateRig) state() rateState {
	limit := r.s.limit(r.now) // lifts a limit due to be lifted first
	return rateState{Mode: r.s.mode, Limit: limit}
}

func TestSendRateDoesNotBindWhileHealthy(t *testing.T) {
	r := newRateRig(t)
	// A thousand attempts in the same instant, and a thousand more, all
	// admitted at once: while the API answers, nothing is limited.
	for i := range 2000 {
		turn := r.admit("attempt")
		if i%2 == 0 {
			assert.False(t, r.s.end(turn, r.now, OutcomeSuccess), "a success while healthy is no recovery")
		}
	}
	assert.Equal(t, rateState{Mode: sendHealthy}, r.state())
	// Answers that say nothing of the API's load change nothing.
	for _, o := range []Outcome{OutcomeFatal, OutcomeRedirect, OutcomeTooLarge, 0} {
		r.attempt(o, o.String())
	}
	assert.Equal(t, rateState{Mode: sendHealthy}, r.state(), "after fatal, redirect, 413 and unsent attempts")
}

// failures ends n attempts in a row with a retryable failure, each
// admitted after the last one ended, and returns the wait the rate asks
// for after the last.
func (r *rateRig) failures(n int, msg string) time.Duration {
	r.t.Helper()
	for range n {
		r.s.end(r.next(msg), r.now, OutcomeRetryable)
	}
	turn, wait, ok := r.s.admit(r.now)
	if ok {
		r.s.end(turn, r.now, 0) // given back unsent
	}
	return wait
}

// Against an API that accepts every other attempt, the send rate never
// holds an attempt back: half the attempts failing is the most the
// throttle tolerates (K = 2; just past it, after an odd failure, p is
// 1/(requests + 1), and the limit (1 − p) times 2.5 times the healthy
// rate), and two failures never come in a row.
func TestSendRateHalfFailingAPIIsNotThrottled(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	for i := range 2000 { // 10 minutes at 4 a second, past the window
		r.now = r.now.Add(250 * time.Millisecond)
		o := OutcomeSuccess
		if i%2 == 0 {
			o = OutcomeRetryable
		}
		r.attempt(o, "an attempt against the half-failing API") // requires a turn
		require.NotEqual(t, sendProbing, r.state().Mode, "after attempt %d", i)
	}
	requests, accepts := r.s.recent.counts(r.now)
	assert.Equal(t, 2*accepts, requests, "the window: half accepted")
}

// The SRE book's throttle, exactly: max(0, (requests − 2·accepts) /
// (requests + 1)).
func TestThrottleProbability(t *testing.T) {
	for _, tt := range []struct {
		requests, accepts int
		want              float64
	}{
		{0, 0, 0}, {100, 100, 0}, {100, 50, 0}, {101, 50, 1.0 / 102},
		{3, 1, 1.0 / 4}, {10, 4, 2.0 / 11}, {10, 0, 10.0 / 11}, {1000, 0, 1000.0 / 1001},
	} {
		assert.InDelta(t, tt.want, throttleProbability(tt.requests, tt.accepts), 1e-12, "%d requests, %d accepted", tt.requests, tt.accepts)
	}
}

// The window counts the attempts of the last 2 minutes, in buckets of
// 10s: an attempt is forgotten once its bucket is 2 minutes old.
func TestWindowForgets(t *testing.T) {
	var w window
	w.add(t0, true)
	w.add(t0.Add(5*time.Second), false)
	w.add(t0.Add(15*time.Second), false)
	req, acc := w.counts(t0.Add(15 * time.Second))
	assert.Equal(t, [2]int{3, 1}, [2]int{req, acc}, "the counts")
	assert.InDelta(t, 1.0/4, w.throttle(t0.Add(15*time.Second)), 1e-12, "the throttle")
	req, acc = w.counts(t0.Add(windowLength - 1))
	assert.Equal(t, [2]int{3, 1}, [2]int{req, acc}, "just under 2 minutes after the first bucket began")
	req, acc = w.counts(t0.Add(windowLength))
	assert.Equal(t, [2]int{1, 0}, [2]int{req, acc}, "2 minutes after: the first bucket is forgotten")
	req, _ = w.counts(t0.Add(windowLength + bucketWidth))
	assert.Zero(t, req, "a bucket later: all forgotten")
	assert.Zero(t, w.throttle(t0.Add(time.Hour)), "an hour later")
	w.add(t0.Add(time.Hour), true)
	req, acc = w.counts(t0.Add(time.Hour))
	assert.Equal(t, [2]int{1, 1}, [2]int{req, acc}, "a bucket reused an hour later starts afresh")
}

// Three failures in a row and the API seems down: the client probes, one
// attempt at a time, at least 8 over the healthy rate apart (an eighth of
// what it sends when healthy); the failures of attempts in flight
// together count once.
func TestSendRateProbesAfterThreeFailuresInARow(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	r.now = r.now.Add(250 * time.Millisecond)
	var inFlight []Turn
	for range 8 {
		inFlight = append(inFlight, r.admit("one of 8 in flight"))
	}
	for _, turn := range inFlight {
		assert.False(t, r.s.end(turn, r.now, OutcomeRetryable), "a failure is no recovery")
	}
	assert.Equal(t, sendHealthy, r.state().Mode, "after 8 failures in flight together: one in a row")
	r.attempt(OutcomeRetryable, "the second in a row")
	assert.Equal(t, sendHealthy, r.state().Mode, "after two in a row")
	r.attempt(OutcomeRetryable, "the third in a row")
	// The healthy rate counts the 8 attempts of the same instant too.
	assert.InDelta(t, 4.9, r.s.healthy, 0.1, "the healthy rate")
	least := time.Duration(float64(time.Second) / (probeShare * r.s.healthy))
	assert.Equal(t, sendProbing, r.state().Mode, "after three in a row")
	assert.Equal(t, least, r.held("after the third failure"), "the probe's spacing: 8 over the healthy rate, more than s(3) = 1s")
	r.now = r.now.Add(least)
	probe := r.admit("the first probe")
	r.now = r.now.Add(time.Hour)
	assert.Zero(t, r.held("while the probe is in flight"), "the wait while the probe is in flight: its end decides")
	r.s.end(probe, r.now, OutcomeRetryable)
	assert.Equal(t, 2*time.Second, r.held("after the fourth failure"), "s(4) = 2s, more than 8 over the healthy rate")
	assert.Equal(t, 4*time.Second, r.failures(1, "a probe"), "then ProbeInterval")
	assert.Equal(t, 0.25, r.state().Limit, "the limit shown while probing: one per 4s")
}

// A client that sends little probes little: one that sends an attempt
// every 5s probes every 40s at most, its healthy rate over 8, though
// ProbeInterval is 4s, plus a jitter of up to half that; one that sends
// less, at most every BackoffCap.
// A client whose healthy rate is not known probes on the backoff
// schedule, at most ProbeInterval apart.
func TestSendRateProbeSpacing(t *testing.T) {
	r := newRateRig(t)
	for range 24 { // 2 minutes, one every 5s
		r.attempt(OutcomeSuccess, "healthy")
		r.now = r.now.Add(5 * time.Second)
	}
	wait := r.failures(3, "the outage")
	assert.InDelta(t, 0.2, r.s.healthy, 0.06, "the healthy rate, measured")
	assert.Equal(t, time.Duration(float64(time.Second)/(probeShare*r.s.healthy)), wait, "after the third failure: 8 over the healthy rate, about 40s")
	assert.Equal(t, wait, r.failures(5, "probes"), "and after more")

	// With a jitter, up to half more: clients whose outage began in the
	// same instant probe apart.
	r = newRateRig(t)
	jitter.Set(&r.policy, fullJitter)
	for range 24 {
		r.attempt(OutcomeSuccess, "healthy")
		r.now = r.now.Add(5 * time.Second)
	}
	wait = r.failures(3, "the outage")
	least := time.Duration(float64(time.Second) / (probeShare * r.s.healthy))
	assert.Equal(t, least+least/2-1, wait, "with the most jitter")

	r = newRateRig(t)
	for range 10 { // one a minute
		r.attempt(OutcomeSuccess, "healthy")
		r.now = r.now.Add(time.Minute)
	}
	assert.Equal(t, r.policy.BackoffCap, r.failures(3, "the outage"), "at most BackoffCap")

	r = newRateRig(t)
	var got []time.Duration
	for i := range 7 {
		if d := r.failures(1, "a failure"); i >= 2 {
			got = append(got, d)
		}
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 4 * time.Second}
	assert.Equal(t, want, got, "without a healthy rate: s(k) from the third failure on")
	r.policy.ProbeInterval = 0 // no cap but BackoffCap's
	assert.Equal(t, 30*time.Second, r.failures(10, "probes"), "BackoffCap/2")

	// With a jitter, up to a quarter earlier, never later than a batch's
	// own shortest wait: clients whose outage began in the same instant
	// drift apart.
	r = newRateRig(t)
	jitter.Set(&r.policy, fullJitter)
	assert.Equal(t, 3*time.Second+1, r.failures(6, "failures"), "s(6) = 4s, with the most jitter")
}

// A batch alone in flight never waits for the send rate beyond its own
// backoff: the probe's spacing after its k-th failure is at most the
// shortest wait of its retry k, whatever the jitter, base and caps.
func TestProbeSpacingNeverExceedsTheBatchsOwnWait(t *testing.T) {
	for _, base := range []time.Duration{0, time.Millisecond, 500 * time.Millisecond, 7 * time.Second} {
		for _, probeCap := range []time.Duration{0, time.Second, 4 * time.Second, time.Hour} {
			p := DefaultPolicy()
			p.BackoffBase, p.ProbeInterval = base, probeCap
			jitter.Set(&p, noJitter)
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

// After the API recovers, the limit is (1 − p) times 2.5 times the
// healthy rate, p the throttle, and in the first 2s at most the healthy
// rate rising to the ceiling: after a long outage, whose window holds
// only failures, it starts low and rises with each success as the formula
// says, up to the ceiling; after 10s at the ceiling, the ceiling rises by
// half, and again after 10s more. The window forgets the outage.
func TestSendRateRecoversAsTheThrottleSays(t *testing.T) {
	r := newRateRig(t)
	r.healthy(40, 20*time.Second)
	r.failures(3, "the outage begins")
	healthy := r.s.healthy
	assert.InDelta(t, 40, healthy, 1, "the healthy rate")
	start := r.now
	for r.now.Sub(start) < 3*time.Minute {
		r.failures(1, "a probe")
	}
	requests, accepts := r.s.recent.counts(r.now)
	require.Zero(t, accepts, "the window: no accept")
	assert.InDelta(t, 30, requests, 2, "the window: the probes of the last 2 minutes, 4s apart")
	assert.True(t, r.s.end(r.next("the probe"), r.now, OutcomeSuccess), "the first success after the probe is a recovery")
	recovered := r.now
	limits := []float64{}
	for range 40 {
		st := r.state()
		require.Equal(t, sendLimited, st.Mode, "after the recovery")
		req, acc := r.s.recent.counts(r.now)
		want := (1 - throttleProbability(req, acc)) * ceilingFactor * healthy
		if since := r.now.Sub(recovered); since < rampTime {
			want = min(want, healthy*(1+(ceilingFactor-1)*since.Seconds()/rampTime.Seconds()))
		}
		want = max(want, 0.25)
		assert.InDelta(t, want, st.Limit, 1e-9, "the limit with %d attempts, %d accepted", req, acc)
		limits = append(limits, st.Limit)
		r.s.end(r.next("the backlog"), r.now, OutcomeSuccess)
	}
	assert.Less(t, limits[0], ceilingFactor*healthy/5, "the limit after the first success: low")
	for i := 1; i < len(limits); i++ {
		assert.GreaterOrEqual(t, limits[i], limits[i-1], "the limit rises with each success (%d)", i)
	}
	for r.now.Before(recovered.Add(rampTime)) {
		r.s.end(r.next("the backlog, through the ramp"), r.now, OutcomeSuccess)
	}
	assert.Equal(t, ceilingFactor*healthy, r.state().Limit, "at the ceiling once half the window's attempts are accepted, 2s after the recovery")

	// A backlog at the ceiling, counted by second from when the limit
	// reached it.
	from := r.s.atCeiling
	require.False(t, from.IsZero(), "at the ceiling")
	perSecond := map[int]int{}
	for r.now.Sub(from) < 25*time.Second {
		r.s.end(r.next("the backlog"), r.now, OutcomeSuccess)
		perSecond[int(r.now.Sub(from)/time.Second)]++
	}
	for sec := range 9 {
		assert.LessOrEqual(t, perSecond[sec], 101, "attempts in second %d: at most the ceiling, 2.5 × 40, and the turn that was ready", sec)
	}
	assert.InDelta(t, 150, perSecond[12], 2, "attempts in second 12: the ceiling rose by half after 10s")
	assert.InDelta(t, 225, perSecond[22], 3, "attempts in second 22: and again after 10s more")
	r.now = r.now.Add(windowLength)
	requests, accepts = r.s.recent.counts(r.now)
	assert.Zero(t, requests-accepts, "the window 2 minutes later: the outage forgotten")
}

// Once the limit holds nothing back for a second, and nothing fails (or
// the throttle is 0), it is lifted.
func TestSendRateIsLiftedWhenItNoLongerBinds(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	r.failures(3, "the outage")
	r.now = r.now.Add(r.held("the probe's spacing"))
	r.attempt(OutcomeSuccess, "the probe")
	require.Equal(t, sendLimited, r.state().Mode)
	r.now = r.now.Add(999 * time.Millisecond)
	r.attempt(OutcomeSuccess, "the usual traffic")
	assert.Equal(t, sendLimited, r.state().Mode, "999ms after the recovery")
	r.now = r.now.Add(time.Millisecond)
	assert.Equal(t, rateState{Mode: sendHealthy}, r.state(), "a second after the last hold")
	for range 100 {
		r.admit("healthy again: no limit")
	}
}

// A rate-limited answer is the server saying it is overloaded: the client
// probes at once, and the probe after it goes as soon as the Retry-After
// pause lets it (the pause is the wait), at most one per 8 over the
// healthy rate.
func TestSendRateAfterARateLimitedAnswer(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	r.now = r.now.Add(250 * time.Millisecond)
	r.attempt(OutcomeRateLimited, "429 with Retry-After")
	assert.Equal(t, sendProbing, r.state().Mode, "after a 429")
	assert.Equal(t, time.Duration(float64(time.Second)/(probeShare*r.s.healthy)), r.held("the probe"), "8 over the healthy rate, about 2s")
	r.now = r.now.Add(5 * time.Second) // the pause
	probe := r.admit("the probe, after the pause")
	assert.True(t, r.s.end(probe, r.now, OutcomeSuccess), "the answer after the pause: a recovery")

	r = newRateRig(t)
	r.attempt(OutcomeRateLimited, "429 with Retry-After, no healthy rate")
	r.admit("the probe, at once: the Pause holds it")
}

// Right after the limit is lifted, until a second of healthy traffic has
// been measured, a new trouble keeps the healthy rate measured before the
// last one: a few attempts say little of what the client sends.
func TestSendRateKeepsItsHealthyRateThroughAYoungMeasure(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	r.now = r.now.Add(250 * time.Millisecond)
	r.attempt(OutcomeRateLimited, "the first trouble")
	before := r.s.healthy
	require.Positive(t, before, "the healthy rate measured before the first trouble")
	r.now = r.now.Add(r.held("the probe"))
	require.True(t, r.attempt(OutcomeSuccess, "the probe"), "the recovery")
	r.now = r.now.Add(2 * quietToHealthy)
	require.Equal(t, sendHealthy, r.state().Mode, "the limit lifted")

	r.healthy(100, 200*time.Millisecond) // 20 attempts, over less than healthyMinAge
	r.now = r.now.Add(10 * time.Millisecond)
	r.attempt(OutcomeRateLimited, "the second trouble")
	assert.Equal(t, before, r.s.healthy, "the healthy rate through the second trouble")
	assert.Equal(t, time.Duration(float64(time.Second)/(probeShare*before)), r.held("the probe"), "8 over the healthy rate measured before")
}

// A client younger than a second, or whose first attempt fails, tells no
// healthy rate: after the recovery there is no ceiling.
func TestSendRateWithoutAHealthyRate(t *testing.T) {
	r := newRateRig(t)
	r.healthy(1000, 100*time.Millisecond)
	r.failures(3, "failures 100ms after the start")
	r.now = r.now.Add(r.held("the probe's spacing"))
	assert.True(t, r.attempt(OutcomeSuccess, "the probe"), "the recovery")
	for range 1000 {
		r.admit("the backlog: no ceiling")
	}
}

// The turn of an attempt admitted before a counted failure does not count
// again, nor does it recover the probe if it was not one; only the probe's
// own end frees the probe's turn.
func TestSendRateTurns(t *testing.T) {
	r := newRateRig(t)
	r.healthy(4, 20*time.Second)
	old := r.admit("an attempt in flight")
	r.failures(3, "the outage")
	r.now = r.now.Add(r.held("the probe's spacing"))
	probe := r.admit("the probe")
	r.s.end(old, r.now, OutcomeRetryable)
	assert.Zero(t, r.held("the old attempt's end frees no turn"), "the probe is still in flight")
	r.s.end(probe, r.now, 0)
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
	jitter.Set(&p, fullJitter)
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
// probe, without a healthy rate: after three failures it probes, one
// attempt at a time, with no spacing; after the recovery nothing limits.
func TestSendRateWithoutBackoff(t *testing.T) {
	r := newRateRig(t)
	r.policy.BackoffBase = 0
	assert.Zero(t, r.failures(3, "failures"), "the wait after three failures")
	assert.Equal(t, rateState{Mode: sendProbing}, r.state(), "probing, with no spacing")
	probe := r.admit("the probe, at once")
	assert.Zero(t, r.held("while it is in flight"), "no turn, until it ends")
	r.s.end(probe, r.now, OutcomeRetryable)
	probe = r.admit("the next probe, at once")
	assert.True(t, r.s.end(probe, r.now, OutcomeSuccess), "the recovery")
	for range 100 {
		r.admit("no limit")
	}
}
