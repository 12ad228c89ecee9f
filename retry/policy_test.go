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
	jitter.Set(&p, nil)
	for range 100 {
		j := p.jitter(time.Second)
		assert.True(t, j >= 0 && j < time.Second, "math/rand/v2's jitter %v is in [0, 1s)", j)
	}
}
