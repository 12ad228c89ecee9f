package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/dualpath/analytics-go/internal/jitter"
)

// TestJitterSeam checks the seam the tests of other packages use: Set
// replaces a Policy's jitter, and nil restores math/rand/v2's. That Set
// takes a *Policy and nothing else is checked by the compiler.
func TestJitterSeam(t *testing.T) {
	p := DefaultPolicy()
	jitter.Set(&p, fullJitter)
	assert.Equal(t, time.Second-1, p.jitter(time.Second), "the jitter set")
	assert.Equal(t, 500*time.Millisecond-1, p.ResumeJitter(5*time.Second), "ResumeJitter draws from it")
	// A range of nothing is no jitter: no draw, which would panic in
	// math/rand/v2 and breaks a Func's [0, n) contract.
	jitter.Set(&p, func(n time.Duration) time.Duration {
		t.Errorf("jitter drawn for a range of %v", n)
		return 0
	})
	assert.Zero(t, p.jitter(0), "no range")
	assert.Zero(t, p.jitter(-time.Second), "a negative range")
	assert.Zero(t, p.ResumeJitter(9*time.Nanosecond), "a wait too short to jitter")
	jitter.Set(&p, nil)
	assert.Zero(t, p.jitter(0), "no range, from math/rand/v2")
	for range 100 {
		j := p.jitter(time.Second)
		assert.True(t, j >= 0 && j < time.Second, "math/rand/v2's jitter %v is in [0, 1s)", j)
	}
}
