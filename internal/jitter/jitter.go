// Package jitter is the seam through which the tests of the SDK's packages
// make package retry's random waits exact. It lives under internal/ so that
// it is no part of retry's API: a retry.Policy draws its jitter from
// math/rand/v2, and nothing outside this module can change that.
//
// A retry.Policy embeds a Draw, unexported; Set reaches it through the
// method that embedding gives the *retry.Policy, so that it takes a
// *retry.Policy and nothing else, checked when the test compiles.
package jitter

import (
	"math/rand/v2"
	"time"
)

// Func returns a duration in [0, n) for n > 0: uniformly random in use, a
// fixed choice in tests.
type Func func(n time.Duration) time.Duration

// Draw is where a retry.Policy draws its jitter from: math/rand/v2, or the
// Func a test Set. The zero Draw draws from math/rand/v2. It has no
// exported method or field, so that a Policy embedding it shows none.
type Draw struct{ fn Func }

func (d *Draw) set(fn Func) { d.fn = fn }

// N returns a duration in [0, n) for n > 0, drawn from d, and 0 for n <= 0
// without drawing.
func N(d *Draw, n time.Duration) time.Duration {
	switch {
	case n <= 0:
		return 0
	case d.fn != nil:
		return d.fn(n)
	}
	return rand.N(n)
}

// Policy is what embeds a Draw: a *retry.Policy.
type Policy interface{ set(fn Func) }

// Set makes policy draw every jitter of its waits (the backoff's, the
// probe's, ResumeJitter's) from fn; a nil fn restores math/rand/v2. Like
// the Policy's fields, it must not change while the Policy is in use.
func Set(policy Policy, fn Func) { policy.set(fn) }
