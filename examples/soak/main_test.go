package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

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
	if cfg.faults, err = parseMix("503=8,500=2,429=2,drop=4,partial=2,stall=1"); err != nil {
		t.Fatal(err)
	}
	cfg.shutdown = time.Minute
	var out bytes.Buffer
	res, err := run(context.Background(), cfg, &out)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, &out)
	}
	if !res.OK() || !strings.Contains(out.String(), "verdict: OK") {
		t.Fatalf("verdict not OK: %v\n%s", res.problems, &out)
	}
	if res.enqueued < 2000 || res.delivered+res.failed != res.enqueued || !res.checkedServer || res.rssJudged {
		t.Errorf("result %+v", res)
	}
	t.Logf("\n%s", &out)
}

func TestParseMix(t *testing.T) {
	m, err := parseMix(" 503=5, 429=1,drop=0.5,503=1 ")
	if err != nil || m[fault503] != 6 || m[fault429] != 1 || m[faultDrop] != 0.5 {
		t.Errorf("parseMix = %v, %v", m, err)
	}
	for _, bad := range []string{"503", "418=1", "503=x", "503=-1", "503=60,drop=50"} {
		if _, err := parseMix(bad); err == nil {
			t.Errorf("parseMix(%q) = nil error", bad)
		}
	}
	if m, err := parseMix(""); err != nil || m.String() != "no faults" {
		t.Errorf("parseMix(\"\") = %v, %v", m, err)
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
		if got := rssFlat(tc.first, tc.second); got != tc.flat {
			t.Errorf("rssFlat(%d MiB, %d MiB) = %v", tc.first/mb, tc.second/mb, got)
		}
	}
}
