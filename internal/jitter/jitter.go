// Package jitter is the seam through which the tests of the SDK's packages
// make package retry's random waits exact. It lives under internal/ so that
// it is no part of retry's API: a retry.Policy draws its jitter from
// math/rand/v2, and nothing outside this module can change that.
//
// Package retry installs Set as it initialises, the way gRPC's internal
// package carries hooks its public packages install: retry imports this
// package, so this one cannot name retry's types.
package jitter

import "time"

// Func returns a duration in [0, n) for n > 0: uniformly random in use, a
// fixed choice in tests.
type Func func(n time.Duration) time.Duration

// Set makes policy, a *retry.Policy, draw every jitter of its waits (the
// backoff's, the probe's, ResumeJitter's) from fn; a nil fn restores
// math/rand/v2. Like the Policy's fields, it must not change while the
// Policy is in use. It panics if policy is not a *retry.Policy.
var Set func(policy any, fn Func)
