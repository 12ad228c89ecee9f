package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestSmoke is the soak's short mode, the one make test runs: 3 seconds
// at 1,000 events/s in small batches, with a harsher fault mix than the
// default and faster retries (so that the close does not wait long); the
// verdict must be OK.
func TestSmoke(t *testing.T) {
	// Deferred first, so it runs last: after run has closed the client and
	// the mock, no goroutine of either may be left.
	defer goleak.VerifyNone(t)

	cfg := defaultConfig()
	cfg.rate = 1000
	cfg.duration = 3 * time.Second
	cfg.report = time.Second
	cfg.timeout = 300 * time.Millisecond
	cfg.flushAt = 25
	cfg.backoffBase = 20 * time.Millisecond
	var err error
	cfg.faults, err = parseMix("503=8,500=2,429=2,drop=4,partial=2,stall=1")
	require.NoError(t, err)
	cfg.shutdown = time.Minute
	var out bytes.Buffer
	res, err := run(context.Background(), cfg, &out)
	require.NoError(t, err, "run; output:\n%s", &out)
	require.True(t, res.OK(), "the verdict: %q; output:\n%s", res.problems, &out)
	require.Contains(t, out.String(), "verdict: OK", "the verdict in the output")
	assert.GreaterOrEqual(t, res.enqueued, int64(2000), "events enqueued")
	assert.Equal(t, res.enqueued, res.delivered+res.failed, "events delivered or failed: every one enqueued")
	assert.True(t, res.checkedServer, "the server's record was checked")
	assert.False(t, res.rssJudged, "RSS judged in a run shorter than %v", minRSSJudge)
	t.Logf("\n%s", &out)
}

func TestParseMix(t *testing.T) {
	m, err := parseMix(" 503=5, 429=1,drop=0.5,503=1 ")
	if assert.NoError(t, err, "parseMix") {
		assert.Equal(t, 6.0, m[fault503], "503s: the sum of both")
		assert.Equal(t, 1.0, m[fault429], "429s")
		assert.Equal(t, 0.5, m[faultDrop], "drops")
	}
	for _, bad := range []string{"503", "418=1", "503=x", "503=-1", "503=60,drop=50"} {
		_, err := parseMix(bad)
		assert.Error(t, err, "parseMix(%q)", bad)
	}
	m, err = parseMix("")
	if assert.NoError(t, err, `parseMix("")`) {
		assert.Equal(t, "no faults", m.String(), `parseMix("")`)
	}
}

func TestRSSFlat(t *testing.T) {
	const mb = 1 << 20
	for _, tc := range []struct {
		first, second int64
		flat          bool
	}{
		{20 * mb, 20 * mb, true},
		{20 * mb, 30 * mb, true}, // within 10% + 8 MiB
		{20 * mb, 31 * mb, false},
		{100 * mb, 90 * mb, true},
	} {
		assert.Equal(t, tc.flat, rssFlat(tc.first, tc.second), "rssFlat(%d MiB, %d MiB)", tc.first/mb, tc.second/mb)
	}
}
