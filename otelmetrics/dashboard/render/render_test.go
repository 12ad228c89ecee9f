package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// The quantile of buckets is histogram_quantile's: linear within the
// bucket the rank falls in, the highest finite bound in the +Inf bucket,
// NaN without values.
func TestBucketQuantile(t *testing.T) {
	inf := math.Inf(1)
	b := []bucket{{2, 20}, {inf, 20}, {1, 10}} // in any order
	assert.InDelta(t, 0.5, bucketQuantile(0.25, b), 1e-9, "rank 5 of the 10 in (0, 1]")
	assert.InDelta(t, 1, bucketQuantile(0.5, b), 1e-9, "rank 10: the first bucket's bound")
	assert.InDelta(t, 1.5, bucketQuantile(0.75, b), 1e-9, "rank 15: halfway through (1, 2]")
	assert.InDelta(t, 2, bucketQuantile(0.9, []bucket{{1, 5}, {2, 5}, {inf, 10}}), 1e-9, "in +Inf: the highest finite bound")
	assert.True(t, math.IsNaN(bucketQuantile(0.5, []bucket{{1, 0}, {inf, 0}})), "no values")
	assert.True(t, math.IsNaN(bucketQuantile(0.5, []bucket{{1, 3}, {2, 4}})), "no +Inf bucket")
}

// A rate is the increase over the window of scrapes, per second; a sum by
// a label sums the series of each value.
func TestRateBy(t *testing.T) {
	counter := func(at time.Duration, a, b float64) sample {
		return sample{at: at, points: []point{
			{"c_total", map[string]string{"reason": "a"}, a},
			{"c_total", map[string]string{"reason": "b"}, b},
		}}
	}
	rec := &recording{script: script{window: 2 * time.Second}, samples: []sample{
		counter(0, 0, 0), counter(time.Second, 10, 1), counter(2*time.Second, 30, 2), counter(3*time.Second, 70, 3),
	}}
	assert.Nil(t, rec.rateBy(0, "c_total", nil, ""), "no rate from one scrape")
	assert.Equal(t, map[string]float64{"": 11}, rec.rateBy(1, "c_total", nil, ""), "11 in 1 s, from the first scrape")
	assert.Equal(t, map[string]float64{"a": 30, "b": 1}, rec.rateBy(3, "c_total", nil, "reason"), "by reason, over the 2 s since the scrape at 1 s")
	assert.Equal(t, map[string]float64{"": 30}, rec.rateBy(3, "c_total", map[string]string{"reason": "a"}, ""), "{reason=\"a\"}")
}

// Each panel of the picture is one of the dashboard's, by its title, and
// reads only series that panel's queries name.
func TestPanelsAreTheDashboards(t *testing.T) {
	data, err := os.ReadFile("../analytics-go.json")
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	require.NoError(t, json.Unmarshal(data, &d))
	exprs := map[string]string{}
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			exprs[p.Title] += tg.Expr + "\n"
		}
	}
	for _, p := range mainPanels {
		e, ok := exprs[p.title]
		if assert.True(t, ok, "the dashboard has a panel %q", p.title) {
			for _, m := range p.metrics {
				assert.Contains(t, e, m+"{", "panel %q queries %s", p.title, m)
			}
		}
	}
}

// A short real run: the client's series scraped, every panel drawn into
// an SVG that is well-formed XML.
func TestRecordAndDraw(t *testing.T) {
	sc := script{
		rate: 100, total: 1500 * time.Millisecond, step: 100 * time.Millisecond, window: 300 * time.Millisecond,
		phases: []phase{{500 * time.Millisecond, time.Second, analyticstest.Status(503), "503"}},
	}
	rec, err := record(context.Background(), sc)
	require.NoError(t, err, "record")
	require.GreaterOrEqual(t, len(rec.samples), 2, "scrapes")
	svg, err := draw(rec, mainPanels)
	require.NoError(t, err, "draw")
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		_, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "the SVG is XML")
	}
	for _, p := range mainPanels {
		assert.Contains(t, string(svg), ">"+p.title+"<", "panel %q drawn", p.title)
	}
	assert.Contains(t, string(svg), "<polyline", "lines drawn")

	// A series the scrapes do not have is an error, not an empty chart.
	_, err = draw(rec, []panel{{title: "renamed", metrics: []string{"analytics_event_delivered"}}})
	assert.ErrorContains(t, err, "no series analytics_event_delivered")
}

// The flags are checked before anything runs.
func TestRunFlags(t *testing.T) {
	var out strings.Builder
	err := run(context.Background(), []string{"-step", "1s", "-window", "1s"}, &out)
	assert.ErrorContains(t, err, "-window (1s) must hold at least two -step (1s)")
}
