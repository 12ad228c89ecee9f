package main

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// sample is one scrape: every series' value, at a time since the run
// began.
type sample struct {
	at     time.Duration
	points []point
}

// point is one series' value: a counter's or a gauge's, or a histogram's
// _bucket (with le), _sum or _count, as Prometheus stores them.
type point struct {
	name   string
	labels map[string]string
	value  float64
}

// fromFamilies is the series of a parsed exposition, without the
// exporter's otel_scope_ labels.
func fromFamilies(families map[string]*dto.MetricFamily) sample {
	var s sample
	for name, f := range families {
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				if !scopeLabel(l.GetName()) {
					labels[l.GetName()] = l.GetValue()
				}
			}
			switch {
			case m.Counter != nil:
				s.points = append(s.points, point{name, labels, m.Counter.GetValue()})
			case m.Gauge != nil:
				s.points = append(s.points, point{name, labels, m.Gauge.GetValue()})
			case m.Histogram != nil:
				h := m.Histogram
				for _, b := range h.GetBucket() { // +Inf's included
					s.points = append(s.points, point{name + "_bucket", with(labels, "le", formatLE(b.GetUpperBound())), float64(b.GetCumulativeCount())})
				}
				s.points = append(s.points, point{name + "_sum", labels, h.GetSampleSum()},
					point{name + "_count", labels, float64(h.GetSampleCount())})
			}
		}
	}
	return s
}

// scopeLabel is a label the exporter adds to every series
// (otel_scope_name, ...): the queries never select by it.
func scopeLabel(name string) bool { return strings.HasPrefix(name, "otel_scope_") }

func with(labels map[string]string, name, value string) map[string]string {
	out := map[string]string{name: value}
	for k, v := range labels {
		out[k] = v
	}
	return out
}

func formatLE(b float64) string {
	if math.IsInf(b, 1) {
		return "+Inf"
	}
	return strconv.FormatFloat(b, 'g', -1, 64)
}

// has reports whether s holds a series of that name.
func (s sample) has(name string) bool {
	return slices.ContainsFunc(s.points, func(p point) bool { return p.name == name })
}

// sumBy is sum by (by) (name{match}): the sum of the series of that name
// whose labels hold match, by their value of label by ("" for one sum,
// under the key "").
func (s sample) sumBy(name string, match map[string]string, by string) map[string]float64 {
	sums := map[string]float64{}
	for _, p := range s.points {
		if p.name != name || !holds(p.labels, match) {
			continue
		}
		key := ""
		if by != "" {
			key = p.labels[by]
		}
		sums[key] += p.value
	}
	return sums
}

func holds(labels, match map[string]string) bool {
	for k, v := range match {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// before is the index of the sample a window before sample i (the
// first sample if the run is younger), or -1 for none but i.
func (r *recording) before(i int) int {
	if i == 0 {
		return -1
	}
	from := r.samples[i].at - r.script.window
	j := i - 1
	for j > 0 && r.samples[j-1].at >= from {
		j--
	}
	return j
}

// rateBy is sum by (by) (rate(name{match}[window])) at sample i: the
// increase over the window, per second. Counters never reset within a
// run. NaN before a window's first two scrapes.
func (r *recording) rateBy(i int, name string, match map[string]string, by string) map[string]float64 {
	j := r.before(i)
	if j < 0 {
		return nil
	}
	now, then := r.samples[i].sumBy(name, match, by), r.samples[j].sumBy(name, match, by)
	dt := (r.samples[i].at - r.samples[j].at).Seconds()
	rates := map[string]float64{}
	for k, v := range now {
		rates[k] = (v - then[k]) / dt
	}
	return rates
}

// quantile is histogram_quantile(q, sum by (le) (rate(name_bucket{match}[window])))
// at sample i: NaN while the window holds no event.
func (r *recording) quantile(i int, q float64, name string, match map[string]string) float64 {
	j := r.before(i)
	if j < 0 {
		return math.NaN()
	}
	now, then := r.samples[i].sumBy(name+"_bucket", match, "le"), r.samples[j].sumBy(name+"_bucket", match, "le")
	var buckets []bucket
	for le, v := range now {
		upper := math.Inf(1)
		if le != "+Inf" {
			var err error
			if upper, err = strconv.ParseFloat(le, 64); err != nil {
				return math.NaN()
			}
		}
		buckets = append(buckets, bucket{upper, v - then[le]})
	}
	return bucketQuantile(q, buckets)
}

// bucket is a cumulative histogram bucket: the count of values up to
// upper.
type bucket struct {
	upper, count float64
}

// bucketQuantile is the q-quantile of cumulative buckets, as Prometheus's
// histogram_quantile computes it: linear within the bucket the rank falls
// in, from 0 for the first bucket (whose bound is above 0); the highest
// finite bound if it falls in the +Inf bucket; NaN for no values.
func bucketQuantile(q float64, buckets []bucket) float64 {
	slices.SortFunc(buckets, func(a, b bucket) int { return compare(a.upper, b.upper) })
	if len(buckets) < 2 || !math.IsInf(buckets[len(buckets)-1].upper, 1) {
		return math.NaN()
	}
	total := buckets[len(buckets)-1].count
	if total == 0 || q < 0 || q > 1 {
		return math.NaN()
	}
	rank := q * total
	i, _ := slices.BinarySearchFunc(buckets, rank, func(b bucket, rank float64) int { return compare(b.count, rank) })
	if i == len(buckets)-1 {
		return buckets[len(buckets)-2].upper
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = buckets[i-1].upper, buckets[i-1].count
	}
	in := buckets[i].count - below
	if in == 0 {
		return buckets[i].upper
	}
	return lower + (buckets[i].upper-lower)*(rank-below)/in
}

func compare(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
