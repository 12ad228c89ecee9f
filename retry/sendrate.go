package retry

import (
	"math"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// SendMode is how a SendRate admits attempts.
type SendMode int

const (
	// SendHealthy: no limit; every attempt goes at once.
	SendHealthy SendMode = iota
	// SendLimited: a token bucket of Limit attempts per second, burst 1,
	// lowered by failures and raised by successes.
	SendLimited
	// SendProbing: the API seems down. One attempt at a time, spaced as the
	// backoff schedule says (Policy.probeSpacing).
	SendProbing
)

// String returns the mode's name, for logs.
func (m SendMode) String() string {
	switch m {
	case SendLimited:
		return "limited"
	case SendProbing:
		return "probing"
	}
	return "healthy"
}

// The rules of the send rate. They are constants, not options: together
// they set how a client behaves in a fleet (see SendRate), and each is
// chosen for that.
const (
	// rateDecrease: a retryable failure halves the limit.
	rateDecrease = 0.5
	// rateIncrease: a success raises the limit by a quarter. Against the
	// halving, a limit rises while fewer than about 1 attempt in 4 fails:
	// scattered failures (1 in 10) do not hold a client back, an outage
	// brings it down to the probe within a few attempts.
	rateIncrease = 1.25
	// ceilingFactor: after an outage, the limit rises to this multiple of
	// the healthy rate, and holds there while the backlog drains: every
	// client of a fleet that recovers at once sends at most this multiple
	// of its usual rate.
	ceilingFactor = 2.5
	// ceilingHold and ceilingRise: once the limit has held at the ceiling
	// this long and still binds, the ceiling rises by half (and again after
	// as long), so that a long outage's backlog does not take long to
	// drain, and a client whose traffic grew meanwhile is not held back.
	ceilingHold = 10 * time.Second
	ceilingRise = 1.5
	// quietToHealthy: a limit that has held no attempt back for this long,
	// and seen no failure, is lifted.
	quietToHealthy = time.Second
	// healthyWindow is the time constant of the healthy rate's moving
	// average.
	healthyWindow = 10 * time.Second
	// healthyMinAge: a healthy rate measured over less than this sets no
	// ceiling. Its first milliseconds say little of what a client sends:
	// a client that fails as it starts ramps up without one.
	healthyMinAge = time.Second
	// maxLimit bounds the limit, far above any request rate, so that a
	// long run of successes cannot overflow it.
	maxLimit = 1e9
)

// A Turn is an attempt a SendRate admitted. Its end must be reported with
// End exactly once, whether the attempt was sent or not.
type Turn struct {
	seq   uint64 // the admission's number, from 1; 0 for no turn
	probe bool   // the probe of SendProbing
}

// SendRate is the client-wide send rate: every attempt of every batch,
// first or retry, asks it for a turn. It decides; it does no I/O and never
// reads the clock: the caller passes the time in, waits, and reports each
// attempt's end.
//
// While the API answers, it does not bind (SendHealthy). A retryable
// failure (a status of the backoff path, a transport error, a rate-limited
// answer) halves the limit, starting from the client's healthy rate, the
// moving average of its attempts while healthy; only an attempt admitted
// after the last cut lowers it again, so that attempts in flight together
// count once. Below the probe's own rate (one attempt per first spacing)
// it probes (SendProbing): one attempt at a time, after the k-th
// backoff-path failure in a row spaced d/2 with d the backoff ceiling of
// retry k, capped at Policy.ProbeInterval. A batch alone in flight
// therefore never waits for the send rate beyond its own backoff wait,
// which is at least d/2; nor while the limit is lowered, as a turn comes
// within the first spacing.
//
// A success while probing means the API is back: End reports it, so that
// the caller wakes the batches sleeping through their backoff. The limit
// starts again at half the healthy rate (at least the probe's rate) and
// each success raises it by a quarter, up to ceilingFactor times the
// healthy rate, where it holds while the backlog drains; after ceilingHold
// there, the ceiling rises by ceilingRise. Once the limit has held
// nothing back, and seen no failure, for quietToHealthy, it is lifted.
//
// A rate-limited answer lowers the limit too, but the wait is the
// client-wide Pause's: a probe after it goes as soon as the pause ends.
//
// A SendRate is safe for concurrent use.
type SendRate struct {
	mu     sync.Mutex
	policy *Policy
	mode   SendMode
	lim    *rate.Limiter // SendLimited's bucket

	seq    uint64 // turns admitted so far
	cutSeq uint64 // turns admitted before the last cut: their failures count no more

	// The healthy rate: a moving average of the attempts started while
	// healthy, with time constant healthyWindow, corrected for the time
	// since healthySince (as a young average is too low).
	avg          float64
	avgAt        time.Time
	healthySince time.Time
	healthyStart int     // attempts started since healthySince
	healthy      float64 // the healthy rate when the trouble began; 0 unknown
	trusted      bool    // healthy was measured over healthyMinAge at least

	ceiling   float64   // the most the limit rises to, for now
	atCeiling time.Time // when the limit reached the ceiling; zero if not there
	since     time.Time // when the limit was last lowered or the mode changed
	lastHeld  time.Time // when the limit last held an attempt back

	streak    int       // backoff-path failures since the last success
	probeOut  bool      // the probe is in flight
	nextProbe time.Time // the next probe may start then
}

// NewSendRate returns a healthy SendRate that spaces its probes with
// policy's backoff schedule. policy must not change while it is in use.
func NewSendRate(policy *Policy) *SendRate {
	return &SendRate{policy: policy}
}

// Admit asks, at now, for the turn of an attempt. When ok, the attempt may
// start now; its end must be reported with End. Otherwise wait says how
// long until the next turn is due: ask again then, or sooner if another
// attempt ends (the caller is told by End). A wait of 0 with !ok means the
// probe is in flight: ask again when it ends.
func (s *SendRate) Admit(now time.Time) (turn Turn, wait time.Duration, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(now)
	switch s.mode {
	case SendLimited:
		r := s.lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			s.lastHeld = now
			return Turn{}, d, false
		}
		return s.admit(false), 0, true
	case SendProbing:
		if s.probeOut {
			return Turn{}, 0, false
		}
		if d := s.nextProbe.Sub(now); d > 0 {
			return Turn{}, d, false
		}
		s.probeOut = true
		return s.admit(true), 0, true
	}
	s.countHealthy(now)
	return s.admit(false), 0, true
}

// settle lifts a limit that has held nothing back, and seen no failure,
// for quietToHealthy up to now.
func (s *SendRate) settle(now time.Time) {
	if s.mode == SendLimited && now.Sub(s.lastHeld) >= quietToHealthy && now.Sub(s.since) >= quietToHealthy {
		s.toHealthy(now)
	}
}

func (s *SendRate) admit(probe bool) Turn {
	s.seq++
	return Turn{seq: s.seq, probe: probe}
}

// End records how an admitted attempt ended, at now: o is its outcome, or
// 0 when it was not sent. It returns true when the attempt is the first
// success after the API seemed down (the client was probing): batches
// sleeping through a backoff wait may go now, at the rising limit.
// Outcomes other than success, retryable and rate-limited (a fatal
// status, a redirect, a 413) say nothing about the API's load and change
// nothing but the probe's turn.
func (s *SendRate) End(turn Turn, now time.Time, o Outcome) (recovered bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if turn.probe {
		s.probeOut = false
	}
	// An attempt admitted before the last cut was in flight when it was
	// made: its failure is the same news, counted once.
	counted := turn.seq > s.cutSeq
	switch o {
	case OutcomeSuccess:
		s.streak = 0
		switch s.mode {
		case SendProbing:
			s.recover(now)
			return true
		case SendLimited:
			s.raise(now)
		}
	case OutcomeRetryable:
		if counted {
			s.streak++
			s.lower(now, s.policy.probeSpacing(s.streak))
		}
	case OutcomeRateLimited:
		if counted {
			s.lower(now, 0) // the Pause spaces what follows
		}
	}
	return false
}

// lower cuts the limit after a failure at now. spacing is how long the
// probe then waits.
func (s *SendRate) lower(now time.Time, spacing time.Duration) {
	s.cutSeq = s.seq
	s.since, s.atCeiling = now, time.Time{}
	var limit float64
	switch s.mode {
	case SendHealthy:
		s.measure(now)
		limit = s.healthy * rateDecrease
	case SendLimited:
		limit = float64(s.lim.Limit()) * rateDecrease
	case SendProbing:
		s.nextProbe = now.Add(spacing)
		return
	}
	if limit < s.probeRate() {
		s.mode = SendProbing
		s.nextProbe = now.Add(spacing)
		return
	}
	s.limit(now, limit, s.mode == SendHealthy)
}

// recover leaves the probe after a success at now: the limit starts again
// at half the healthy rate, at least the probe's rate, with one turn ready
// (the burst), so that a batch alone goes at once.
func (s *SendRate) recover(now time.Time) {
	s.since, s.lastHeld = now, now
	s.mode = SendLimited
	s.lim = rate.NewLimiter(rate.Limit(min(s.restartRate(), maxLimit)), 1)
}

// raise raises the limit after a success at now, up to the ceiling, which
// rises once the limit has held there for ceilingHold.
func (s *SendRate) raise(now time.Time) {
	limit := float64(s.lim.Limit()) * rateIncrease
	if limit >= s.ceiling {
		limit = s.ceiling
		switch {
		case s.atCeiling.IsZero():
			s.atCeiling = now
		case now.Sub(s.atCeiling) >= ceilingHold:
			s.ceiling *= ceilingRise
			s.atCeiling = now
		}
	}
	s.lim.SetLimitAt(now, rate.Limit(min(limit, maxLimit)))
}

// limit makes the mode SendLimited at limit attempts per second. fresh
// starts an empty bucket: the next attempt waits 1/limit.
func (s *SendRate) limit(now time.Time, limit float64, fresh bool) {
	s.mode = SendLimited
	limit = min(limit, maxLimit)
	if fresh || s.lim == nil {
		s.lim = rate.NewLimiter(rate.Limit(limit), 1)
		s.lim.ReserveN(now, 1)
		return
	}
	s.lim.SetLimitAt(now, rate.Limit(limit))
}

// toHealthy lifts the limit at now, and starts measuring the healthy rate
// afresh.
func (s *SendRate) toHealthy(now time.Time) {
	s.mode = SendHealthy
	s.lim = nil
	s.healthySince, s.healthyStart = now, 0
	s.avg, s.avgAt = 0, now
}

// countHealthy adds an attempt started at now to the healthy rate.
func (s *SendRate) countHealthy(now time.Time) {
	if s.healthySince.IsZero() {
		s.healthySince, s.avgAt = now, now
	}
	s.avg = s.avg*decay(now.Sub(s.avgAt)) + 1/healthyWindow.Seconds()
	s.avgAt = now
	s.healthyStart++
}

// measure sets the healthy rate, the rate of attempts per second while
// healthy, as a trouble begins at now, and the ceiling of the ramp after
// it. Right after a trouble, until a second of healthy traffic says more,
// the rate measured before it holds.
func (s *SendRate) measure(now time.Time) {
	age := now.Sub(s.healthySince)
	switch {
	case s.trusted && age < healthyMinAge:
	case s.healthyStart < 2:
		s.healthy, s.trusted = 0, false
	default:
		// A young average is too low by the weight of the time before it
		// began: 1 − e^(−age/window). A floor of 1 ms keeps a burst of
		// attempts that start and fail in the same instant finite.
		s.healthy = s.avg * decay(now.Sub(s.avgAt)) / (1 - decay(max(age, time.Millisecond)))
		s.trusted = age >= healthyMinAge
	}
	s.ceiling = math.Inf(1)
	if s.trusted {
		s.ceiling = ceilingFactor * s.healthy
	}
}

// decay is the weight left after d of the healthy rate's moving average.
func decay(d time.Duration) float64 {
	return math.Exp(-d.Seconds() / healthyWindow.Seconds())
}

// probeRate is the probe's own rate, one attempt per first spacing: a
// limit below it probes instead. With no spacing it is infinite: every
// failure probes.
func (s *SendRate) probeRate() float64 {
	if d := s.policy.probeSpacing(1); d > 0 {
		return 1 / d.Seconds()
	}
	return math.Inf(1)
}

// restartRate is where the limit starts after a recovery: half the
// healthy rate, at least the probe's rate (at most one attempt per 1 ms).
func (s *SendRate) restartRate() float64 {
	return max(s.healthy*rateDecrease, min(s.probeRate(), 1000))
}

// Probing reports whether the SendRate is probing.
func (s *SendRate) Probing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mode == SendProbing
}

// SendRateState is a snapshot of a SendRate.
type SendRateState struct {
	// Mode is how attempts are admitted now.
	Mode SendMode
	// Limit is attempts per second: the bucket's rate when SendLimited,
	// one over the probe's spacing when SendProbing (0 for no spacing),
	// 0 when SendHealthy.
	Limit float64
}

// State returns the SendRate's mode and limit at now.
func (s *SendRate) State(now time.Time) SendRateState {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.settle(now)
	switch s.mode {
	case SendLimited:
		return SendRateState{Mode: SendLimited, Limit: float64(s.lim.Limit())}
	case SendProbing:
		st := SendRateState{Mode: SendProbing}
		if d := s.policy.probeSpacing(max(s.streak, 1)); d > 0 {
			st.Limit = 1 / d.Seconds()
		}
		return st
	}
	return SendRateState{}
}
