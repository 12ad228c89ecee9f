package retry

import (
	"math"
	"time"
)

// healthyRate measures how many attempts per second a client sends while
// the API answers (the healthy rate of SPEC §5): a moving average of the
// attempts started, with time constant healthyWindow, corrected for its
// age, as a young average is too low. Time is a parameter; it is not safe
// for concurrent use: the SendRate's lock guards it.
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

// restart forgets every attempt counted: counting begins again at now.
func (h *healthyRate) restart(now time.Time) {
	*h = healthyRate{at: now, since: now}
}

// age is how long the rate has been measured at now.
func (h *healthyRate) age(now time.Time) time.Duration {
	return now.Sub(h.since)
}

// rate is the healthy rate at now, as a trouble begins with an attempt just
// counted. The average just after an attempt is high by about half an
// attempt (the failing one was counted as it started): half is taken off.
// A young average is too low by the weight of the time before it began:
// 1 − e^(−age/window). A floor of 1 ms keeps a burst of attempts that
// start and fail in the same instant finite.
func (h *healthyRate) rate(now time.Time) float64 {
	avg := max(h.avg*decay(now.Sub(h.at))-0.5/healthyWindow.Seconds(), 0)
	return avg / (1 - decay(max(h.age(now), time.Millisecond)))
}

// decay is the weight left after d of the healthy rate's moving average.
func decay(d time.Duration) float64 {
	return math.Exp(-d.Seconds() / healthyWindow.Seconds())
}
