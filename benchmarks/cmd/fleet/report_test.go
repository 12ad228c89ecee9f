package main

import (
	"testing"
	"time"

	"github.com/dualpath/analytics-go/benchmarks/internal/figures"
)

func TestBusiestWindow(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		var out []time.Duration
		for _, x := range xs {
			out = append(out, time.Duration(x)*time.Millisecond)
		}
		return out
	}
	tests := []struct {
		name      string
		at        []time.Duration
		from, to  time.Duration
		wantN     int
		wantStart time.Duration
	}{
		{"none", nil, 0, 10 * time.Second, 0, 0},
		{"one", ms(500), 0, 10 * time.Second, 1, 500 * time.Millisecond},
		{"unsorted; a window excludes its end", ms(2500, 1000, 1999, 2999), 0, 10 * time.Second, 2, 1000 * time.Millisecond},
		{"outside the span is ignored", ms(100, 200, 300, 5000), time.Second, 10 * time.Second, 1, 5000 * time.Millisecond},
		{"the end is exclusive", ms(9999, 10000, 10001), 0, 10 * time.Second, 1, 9999 * time.Millisecond},
		{"the earliest of equal windows", ms(0, 1, 3000, 3001), 0, 10 * time.Second, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, start := busiestWindow(tt.at, tt.from, tt.to, time.Second)
			if n != tt.wantN || (n > 0 && start != tt.wantStart) {
				t.Errorf("busiestWindow = %d from %v, want %d from %v", n, start, tt.wantN, tt.wantStart)
			}
		})
	}
}

func TestNominalHealthy(t *testing.T) {
	tests := []struct {
		cfg  runConfig
		want float64
	}{
		{runConfig{clients: 50, rate: 100, flushAt: 25}, 200},           // FlushAt fills first
		{runConfig{clients: 20, rate: 20}, 4},                           // SDK's FlushAt 250: the 5 s interval cuts 100 events
		{runConfig{clients: 1, rate: 1000, flushAt: 0}, 1000.0 / 250.0}, // SDK's FlushAt fills first
	}
	for _, tt := range tests {
		if got := tt.cfg.nominalHealthy(); got != tt.want {
			t.Errorf("%+v: nominalHealthy = %g, want %g", tt.cfg, got, tt.want)
		}
	}
}

func TestCommas(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 132000: "132,000", -1234567: "-1,234,567"} {
		if got := figures.Thousands(n); got != want {
			t.Errorf("figures.Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}
