package retry

import (
	"math"
	"time"

	"golang.org/x/time/rate"
)

// sendMode is how a sendRate admits attempts.
type sendMode int

const (
	// sendHealthy: no limit; every attempt goes at once.
	sendHealthy sendMode = iota
	// sendLimited: a token bucket of limit attempts per second, burst 1:
	// (1 − p) times the ceiling, with p the throttle of the share of
	// attempts that failed over the last 2 minutes.
	sendLimited
	// sendProbing: the API seems down. One attempt at a time, spaced as the
	// backoff schedule says (Policy.probeSpacing), at most an eighth of the
	// healthy rate.
	sendProbing
)

// The rules of the send rate. They are constants, not options: together
// they set how a client behaves in a fleet (see sendRate), and each is
// chosen for that.
const (
	// downAfter: this many retryable failures in a row, with no 2xx
	// between, and the API seems down: the client probes. Fewer leave it
	// to the throttle (see window), which a share of failures of up to a
	// half does not move: an API that answers every other request never
	// fails three in a row.
	downAfter = 3
	// probeShare: while the API is down, a client's probes cost at most
	// this share of its healthy request rate: one per 8/healthy seconds
	// at the most, however short ProbeInterval. With the failures that
	// tell the client the API is down, that keeps a fleet's load during
	// an outage under a quarter of its healthy rate, for a client that
	// sends a request every 250 ms as for one that sends one every 5 s.
	probeShare = 1.0 / 8
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
	// rampTime: after a recovery, the limit rises from the healthy rate
	// to the ceiling over this long, so that a fleet whose clients find
	// the API back in the same second sends less than the ceiling's 2.5
	// times its rate in that second.
	rampTime = 2 * time.Second
	// quietToHealthy: a limit that has held no attempt back for this long,
	// with no failure for as long or the throttle at 0, is lifted.
	quietToHealthy = time.Second
	// healthyWindow is the time constant of the healthy rate's moving
	// average.
	healthyWindow = 10 * time.Second
	// healthyMinAge: a healthy rate measured over less than this sets no
	// ceiling and no probe spacing. Its first milliseconds say little of
	// what a client sends: a client that fails as it starts ramps up
	// without one.
	healthyMinAge = time.Second
	// maxLimit bounds the limit, far above any request rate.
	maxLimit = 1e9
)

// A Turn is an attempt a Gate's send rate admitted, in an Admission. Its
// end must be reported with Gate.End exactly once, whether the attempt was sent or not:
// the turn tells End whether the attempt was the probe, and whether it was
// in flight when the last failure came (its failure is then the same news,
// not counted again in a row). The zero Turn is for an attempt sent without
// asking (Admit returns it with ok false): End counts its outcome in the
// window, never in a run of failures.
type Turn struct {
	seq   uint64 // the admission's number, from 1; 0 for no turn
	probe bool   // the probe of sendProbing
}

// sendRate is the client-wide send rate of SPEC §5, a Gate's: every
// attempt of every batch, first or retry, asks it for a turn (admit), and
// its end is reported (end). It decides; it does no I/O and never reads
// the clock: the Gate passes the time in.
//
// It keeps the attempts that ended over the last 2 minutes, and how many
// the API accepted (a 2xx). While at most half of them failed, it does not
// bind (sendHealthy): an API that answers every other request is not
// throttled. Beyond that it throttles as the SRE book's client-side
// throttling does: with p = max(0, (requests − 2·accepts)/(requests + 1))
// over the window, the limit is (1 − p) times the ceiling, 2.5 times the
// client's healthy rate, the moving average of its attempts while healthy
// (sendLimited).
//
// Three retryable failures in a row (a status of the backoff path, a
// transport error, a rate-limited answer), with no 2xx between, or one
// rate-limited answer, and the API seems down: the client probes
// (sendProbing), one attempt at a time, after the k-th backoff-path
// failure in a row spaced the longer of s(k) less a jitter of up to
// s(k)/4 and h plus a jitter of up to h/2, with s(k) = min(d/2,
// ProbeInterval), d the backoff ceiling of retry k, and h 8 over the
// healthy rate (probeShare; at most BackoffCap). Attempts that were in flight together when one failed count
// once in a row. A batch alone in flight therefore waits for the send
// rate beyond its own backoff wait, which is at least s(k), only to keep
// the probes to an eighth of what the client sends when healthy.
//
// A success while probing means the API is back: End reports it, so that
// the Gate wakes the batches sleeping through their backoff. The limit
// is then (1 − p) times the ceiling, with one turn ready, and rises with
// each success as the failures of the outage weigh less in the window
// (after a short outage p is 0 at once); in the first rampTime it rises
// from the healthy rate to the ceiling. After ceilingHold at the ceiling
// while it binds, the ceiling rises by ceilingRise. Once the limit has
// held nothing back for quietToHealthy, with no failure for as long or p
// at 0, it is lifted. The limit never falls below one attempt per longest
// probe spacing.
//
// After a rate-limited answer the wait is the client-wide pause's (see
// Gate): a probe after it goes as soon as the pause ends, or after h.
//
// The Gate's lock guards it.
type sendRate struct {
	policy *Policy
	mode   sendMode
	lim    *rate.Limiter // sendLimited's bucket
	recent window        // the attempts of the last 2 minutes (the throttle's)

	seq    uint64 // turns admitted so far
	cutSeq uint64 // turns admitted before the last failure: theirs count no more in a row

	meter   healthyRate // the attempts started while healthy
	healthy float64     // the healthy rate when the trouble began; 0 unknown
	trusted bool        // healthy was measured over healthyMinAge at least

	ceiling   float64   // the most the limit rises to, for now
	atCeiling time.Time // when the limit reached the ceiling; zero if not there
	lastHeld  time.Time // until when the limit last held an attempt back
	lastFail  time.Time // when the last counted failure came
	recovered time.Time // when the client last found the API back after probing

	run       int       // counted failures since the last success
	streak    int       // of them, those of the backoff path (the probe's spacing)
	probeOut  bool      // the probe is in flight
	nextProbe time.Time // the next probe may start then
}

// admit asks, at now, for the turn of an attempt. When ok, the attempt may
// start now; its end must be reported with end. Otherwise wait says how
// long until the next turn is due: ask again then, or sooner if another
// attempt ends. A wait of 0 with !ok means the probe is in flight: ask
// again when it ends.
func (s *sendRate) admit(now time.Time) (turn Turn, wait time.Duration, ok bool) {
	s.settle(now)
	switch s.mode {
	case sendLimited:
		s.lim.SetLimitAt(now, bucketRate(s.limitAt(now)))
		r := s.lim.ReserveN(now, 1)
		if d := r.DelayFrom(now); d > 0 {
			r.CancelAt(now)
			// Held back until then: the one asked to wait asks again only
			// then, however long that is.
			s.lastHeld = now.Add(d)
			return Turn{}, d, false
		}
		return s.turn(false), 0, true
	case sendProbing:
		if s.probeOut {
			return Turn{}, 0, false
		}
		if d := s.nextProbe.Sub(now); d > 0 {
			return Turn{}, d, false
		}
		s.probeOut = true
		return s.turn(true), 0, true
	}
	s.meter.count(now)
	return s.turn(false), 0, true
}

// settle lifts a limit that has held nothing back for quietToHealthy up
// to now, once the throttle is 0 or no failure came for as long.
func (s *sendRate) settle(now time.Time) {
	if s.mode != sendLimited || now.Sub(s.lastHeld) < quietToHealthy {
		return
	}
	if now.Sub(s.lastFail) >= quietToHealthy || s.recent.throttle(now) == 0 {
		// Lifted: the healthy rate is measured afresh, from now.
		s.mode, s.lim, s.atCeiling = sendHealthy, nil, time.Time{}
		s.meter = healthyRate{at: now, since: now}
	}
}

func (s *sendRate) turn(probe bool) Turn {
	s.seq++
	return Turn{seq: s.seq, probe: probe}
}

// end records how an admitted attempt ended, at now: o is its outcome, or
// 0 when it was not sent. It returns true when the attempt is the first
// success after the API seemed down (the client was probing): batches
// sleeping through a backoff wait may go now, at the limit. Outcomes other
// than success, retryable and rate-limited (a fatal status, a redirect, a
// 413) say nothing about the API's load and change nothing but the
// probe's turn.
func (s *sendRate) end(turn Turn, now time.Time, o Outcome) (recovered bool) {
	if turn.probe {
		s.probeOut = false
	}
	switch o {
	case OutcomeSuccess:
		s.recent.add(now, true)
		s.run, s.streak = 0, 0
		switch s.mode {
		case sendProbing:
			// The API is back: the limit starts with one turn ready (the
			// burst), so that a batch alone goes at once.
			s.lastHeld, s.recovered = now, now
			s.limited(now)
			return true
		case sendLimited:
			s.raise(now)
		}
	case OutcomeRetryable, OutcomeRateLimited:
		s.recent.add(now, false)
		// An attempt admitted before the last failure was in flight when
		// it came: its failure is the same news, counted once in a row.
		if turn.seq > s.cutSeq {
			s.fail(now, o)
		}
		if s.mode == sendHealthy && s.recent.throttle(now) > 0 {
			s.limited(now)
		}
	}
	return false
}

// fail takes a counted failure with outcome o at now into account: once
// the API seems down, the client probes.
func (s *sendRate) fail(now time.Time, o Outcome) {
	s.cutSeq = s.seq
	s.run++
	s.lastFail = now
	if s.mode == sendHealthy && s.run == 1 {
		// The trouble begins: what came before it is the healthy rate.
		// Later failures of the run would measure the lull they cause.
		s.measure(now)
	}
	// After a rate-limited answer the pause spaces what follows, but
	// for the eighth of the healthy rate, plus a jitter of up to half of
	// it: clients that fail at the same instant (a fleet's replicas, all
	// of whose batches went at the outage's first second) do not probe,
	// and find the API back, in the same instant.
	spacing := s.leastSpacing()
	spacing += s.policy.jitter(spacing / 2)
	if o == OutcomeRetryable {
		s.streak++
		sk := s.policy.probeSpacing(s.streak)
		// Up to a quarter earlier than s(k), never later: clients whose
		// outage began in the same instant drift apart, and a batch
		// alone still never waits beyond its own backoff.
		sk -= s.policy.jitter(sk / 4)
		spacing = max(sk, spacing)
	}
	// A rate-limited answer is the server saying it is overloaded: the
	// client probes at once.
	if s.mode == sendProbing || s.run >= downAfter || o == OutcomeRateLimited {
		s.mode = sendProbing
		s.lim, s.atCeiling = nil, time.Time{}
		s.nextProbe = now.Add(spacing)
	}
}

// limited makes the mode sendLimited at now, with one turn ready.
func (s *sendRate) limited(now time.Time) {
	s.mode = sendLimited
	s.lim = rate.NewLimiter(bucketRate(s.limitAt(now)), 1)
}

// limitAt is the limit at now, in attempts per second: (1 − p) times the
// ceiling, with p the throttle, at least one attempt per longest probe
// spacing, so that a limited client never waits longer than a probing
// one.
func (s *sendRate) limitAt(now time.Time) float64 {
	limit := (1 - s.recent.throttle(now)) * s.ceiling
	if since := now.Sub(s.recovered); s.trusted && since < rampTime {
		// Right after the recovery the limit rises from the healthy rate
		// to the ceiling: clients that found the API back in the same
		// second (their outage began in the same instant) do not all
		// send at the ceiling at once, with their probe and their ready
		// turn on top.
		limit = min(limit, s.healthy*(1+(ceilingFactor-1)*since.Seconds()/rampTime.Seconds()))
	}
	if d := s.spacing(longestSpacing); d > 0 {
		limit = max(limit, 1/d.Seconds())
	} else {
		limit = math.Inf(1)
	}
	return limit
}

// bucketRate is limit for the bucket: beyond maxLimit, no limit at all.
func bucketRate(limit float64) rate.Limit {
	if limit >= maxLimit {
		return rate.Inf
	}
	return rate.Limit(limit)
}

// raise follows a success at now while limited: once the limit is at the
// ceiling (the throttle is 0) and has held there for ceilingHold, the
// ceiling rises.
func (s *sendRate) raise(now time.Time) {
	if s.recent.throttle(now) > 0 {
		s.atCeiling = time.Time{}
		return
	}
	switch {
	case s.atCeiling.IsZero():
		s.atCeiling = now
	case now.Sub(s.atCeiling) >= ceilingHold:
		s.ceiling *= ceilingRise
		s.atCeiling = now
	}
}

// measure sets the healthy rate, the rate of attempts per second while
// healthy, as a trouble begins at now, and the ceiling of the limit after
// it. Right after a trouble, until a second of healthy traffic says more,
// the rate measured before it holds.
func (s *sendRate) measure(now time.Time) {
	age := now.Sub(s.meter.since)
	switch {
	case s.trusted && age < healthyMinAge:
	case s.meter.n < 2:
		s.healthy, s.trusted = 0, false
	default:
		s.healthy, s.trusted = s.meter.rate(now), age >= healthyMinAge
	}
	s.ceiling = math.Inf(1)
	if s.trusted {
		s.ceiling = ceilingFactor * s.healthy
	}
}

// longestSpacing is a k at which the probe's spacing is its longest:
// BackoffCap is reached by then from any BackoffBase of 1 ns or more.
const longestSpacing = 64

// spacing is how long the probe waits after the k-th backoff-path failure
// in a row: the policy's s(k) (Policy.probeSpacing), but at least
// 1/(probeShare × the healthy rate) once that rate is known, so that the
// probes of a client that sends little cost the API little.
func (s *sendRate) spacing(k int) time.Duration {
	return max(s.policy.probeSpacing(k), s.leastSpacing())
}

// leastSpacing is the shortest spacing of the probe: 1/(probeShare × the
// healthy rate), or 0 while that rate is not known; at most BackoffCap
// (or ProbeInterval if longer), so that a client that sends little still
// probes as often as a batch of its own would retry.
func (s *sendRate) leastSpacing() time.Duration {
	if !s.trusted || s.healthy <= 0 {
		return 0
	}
	most := max(s.policy.BackoffCap, s.policy.ProbeInterval)
	return time.Duration(min(float64(time.Second)/(probeShare*s.healthy), float64(most)))
}

// limit returns, at now, the attempts per second it admits: the bucket's
// rate when sendLimited (0 when no healthy rate is known, so no ceiling:
// nothing limits), one over the probe's spacing when sendProbing (0 for no
// spacing), 0 when sendHealthy. It lifts a limit due to be lifted first.
func (s *sendRate) limit(now time.Time) float64 {
	s.settle(now)
	switch s.mode {
	case sendLimited:
		if limit := s.limitAt(now); limit < maxLimit {
			return limit
		}
	case sendProbing:
		if d := s.spacing(max(s.streak, 1)); d > 0 {
			return 1 / d.Seconds()
		}
	}
	return 0
}

// The window of the send rate's throttle: the attempts of the last
// windowLength, counted in windowBuckets buckets of time, so that an
// attempt is forgotten between windowLength − windowLength/windowBuckets
// and windowLength after it ended. Two minutes is the SRE book's window:
// long enough that a few answers do not swing the share of failures, short
// enough that an API's state of a few minutes ago does not decide now
// (SPEC §5).
const (
	windowLength  = 2 * time.Minute
	windowBuckets = 12
	bucketWidth   = windowLength / windowBuckets
)

// throttleK is K of the throttle: the send rate holds attempts back only
// once the attempts exceed K times those the API accepted, i.e. once more
// than 1 in K fails. With K = 2 an API that accepts half is not throttled.
const throttleK = 2

// throttleProbability returns the SRE book's client-side throttling probability for
// requests attempts of which accepts the API accepted:
// max(0, (requests − K·accepts) / (requests + 1)), with K = 2 (Site
// Reliability Engineering, "Handling Overload"). It is 0 while at least
// half the attempts are accepted, and nears 1 as none are (SPEC §5).
func throttleProbability(requests, accepts int) float64 {
	return max(0, float64(requests-throttleK*accepts)/float64(requests+1))
}

// window counts the attempts that ended in the last windowLength, and how
// many of them the API accepted. Time is a parameter; the zero window is
// empty. It is not safe for concurrent use: the Gate's lock guards it.
type window struct {
	origin  time.Time // the time of bucket 0
	buckets [windowBuckets]bucket
}

// bucket counts the attempts that ended in one bucketWidth of time.
type bucket struct {
	n                 int64 // which bucketWidth since origin; its counts are stale unless current
	requests, accepts int
}

// add counts an attempt that ended at now, accepted or not.
func (w *window) add(now time.Time, accepted bool) {
	if w.origin.IsZero() {
		w.origin = now
	}
	n := w.index(now)
	b := &w.buckets[n%windowBuckets]
	if b.n != n {
		*b = bucket{n: n}
	}
	b.requests++
	if accepted {
		b.accepts++
	}
}

// counts returns the attempts that ended within windowLength of now, and
// how many of them were accepted.
func (w *window) counts(now time.Time) (requests, accepts int) {
	n := w.index(now)
	for _, b := range w.buckets {
		if b.n > n-windowBuckets && b.n <= n {
			requests += b.requests
			accepts += b.accepts
		}
	}
	return requests, accepts
}

// throttle is throttleProbability over the window at now.
func (w *window) throttle(now time.Time) float64 {
	return throttleProbability(w.counts(now))
}

// index is the bucket of now, counted from origin; a time before origin
// counts in bucket 0.
func (w *window) index(now time.Time) int64 {
	return int64(max(now.Sub(w.origin), 0) / bucketWidth)
}

// healthyRate measures how many attempts per second a client sends while
// the API answers (the healthy rate of SPEC §5): a moving average of the
// attempts started, with time constant healthyWindow, corrected for its
// age, as a young average is too low. Time is a parameter; it is not safe
// for concurrent use: the Gate's lock guards it.
type healthyRate struct {
	avg   float64   // the moving average, as of at
	at    time.Time // when the last attempt was counted
	since time.Time // when counting began; zero: not yet
	n     int       // attempts counted since then
}

// count adds an attempt started at now.
func (h *healthyRate) count(now time.Time) {
	if h.since.IsZero() {
		h.since, h.at = now, now
	}
	h.avg = h.avg*decay(now.Sub(h.at)) + 1/healthyWindow.Seconds()
	h.at = now
	h.n++
}

// rate is the healthy rate at now, as a trouble begins with an attempt just
// counted. The average just after an attempt is high by about half an
// attempt (the failing one was counted as it started): half is taken off.
// A young average is too low by the weight of the time before it began:
// 1 − e^(−age/window). A floor of 1 ms keeps a burst of attempts that
// start and fail in the same instant finite.
func (h *healthyRate) rate(now time.Time) float64 {
	avg := max(h.avg*decay(now.Sub(h.at))-0.5/healthyWindow.Seconds(), 0)
	return avg / (1 - decay(max(now.Sub(h.since), time.Millisecond)))
}

// decay is the weight left after d of the healthy rate's moving average.
func decay(d time.Duration) float64 {
	return math.Exp(-d.Seconds() / healthyWindow.Seconds())
}
