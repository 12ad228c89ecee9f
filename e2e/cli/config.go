package main

import (
	"encoding/json"
	"errors"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/decimal"
)

// unit is how a config value is written in the input.
type unit int

const (
	count       unit = iota // a whole number
	millisecond             // a number of milliseconds, fractions allowed
	second                  // a number of seconds, fractions allowed
	boolean                 // true or false
)

func (u unit) String() string {
	switch u {
	case millisecond:
		return "milliseconds"
	case second:
		return "seconds"
	}
	return ""
}

// configKey is one config member: its unit and the option it sets. One of
// the three option funcs is set, matching the unit.
type configKey struct {
	unit     unit
	count    func(int) analytics.Option
	duration func(time.Duration) analytics.Option
	boolean  func(bool) analytics.Option
}

// configKeys are the config members of docs/SPEC.md §9, with the units of the
// cross-SDK harness.
var configKeys = map[string]configKey{
	"flushAt":                 {unit: count, count: analytics.WithFlushAt},
	"maxRetries":              {unit: count, count: analytics.WithRetryCount},
	"maxConcurrentRequests":   {unit: count, count: analytics.WithMaxConcurrentRequests},
	"flushInterval":           {unit: millisecond, duration: analytics.WithFlushInterval},
	"backoffBase":             {unit: millisecond, duration: analytics.WithBackoffBase},
	"backoffCap":              {unit: millisecond, duration: analytics.WithBackoffCap},
	"timeout":                 {unit: second, duration: analytics.WithRequestTimeout},
	"maxTotalBackoffDuration": {unit: second, duration: analytics.WithMaxTotalBackoffDuration},
	"maxRateLimitDuration":    {unit: second, duration: analytics.WithMaxRateLimitDuration},
	"rateLimitRetryAfterCap":  {unit: second, duration: analytics.WithRateLimitRetryAfterCap},
	"gzip":                    {unit: boolean, boolean: analytics.WithGzip},
}

// settings maps each config key the input set to its value: an int, a
// time.Duration or a bool. Range checks are New's: it names the option.
type settings map[string]any

func decodeSettings(obj map[string]any, path string, w *warnings) (settings, error) {
	s := settings{}
	for _, k := range sortedKeys(obj) {
		p := join(path, k)
		key, known := configKeys[k]
		v := obj[k]
		switch {
		case !known:
			w.unknown("config key", k, path)
			continue
		case v == nil: // null keeps the SDK's default
			continue
		case key.unit == boolean:
			b, ok := v.(bool)
			if !ok {
				return nil, wantErr(p, "a boolean", v)
			}
			s[k] = b
			continue
		}
		n, ok := v.(json.Number)
		if !ok {
			if key.unit == count {
				return nil, wantErr(p, "an integer", v)
			}
			return nil, wantErr(p, "a number of "+key.unit.String(), v)
		}
		var err error
		if key.unit == count {
			s[k], err = parseInt(n, p)
		} else {
			s[k], err = parseDuration(n, key.unit, p)
		}
		if err != nil {
			return nil, err
		}
	}
	return s, nil
}

// options returns the SDK options the settings stand for.
func (s settings) options() []analytics.Option {
	opts := make([]analytics.Option, 0, len(s))
	for _, k := range sortedKeys(s) {
		key := configKeys[k]
		switch v := s[k].(type) {
		case int:
			opts = append(opts, key.count(v))
		case time.Duration:
			opts = append(opts, key.duration(v))
		case bool:
			opts = append(opts, key.boolean(v))
		}
	}
	return opts
}

// parseInt reads an integer config value; 10.0 and 1e1 are 10, 10.5 is bad
// input.
func parseInt(n json.Number, path string) (int, error) {
	d, ok := decimal.Parse(n.String())
	if !ok {
		return 0, inputErr(path, "want an integer, got %q", short(n.String()))
	}
	v, err := d.Scaled(0)
	switch {
	case errors.Is(err, decimal.ErrFraction):
		return 0, inputErr(path, "want an integer, got %s", short(n.String()))
	case err != nil || int64(int(v)) != v:
		return 0, inputErr(path, "%s is out of range", short(n.String()))
	}
	return int(v), nil
}

// parseDuration reads a duration in unit u exactly, with no float64 on the
// way: 0.1 seconds is 100ms, not 100ms ± 1ns.
func parseDuration(n json.Number, u unit, path string) (time.Duration, error) {
	d, ok := decimal.Parse(n.String())
	if !ok {
		return 0, inputErr(path, "want a number of %s, got %q", u, short(n.String()))
	}
	scale := int64(6) // milliseconds to nanoseconds
	if u == second {
		scale = 9
	}
	v, err := d.Scaled(scale)
	switch {
	case errors.Is(err, decimal.ErrFraction):
		return 0, inputErr(path, "%s %s is finer than a nanosecond", short(n.String()), u)
	case err != nil:
		return 0, inputErr(path, "%s %s is out of range (a duration is at most about 292 years)", short(n.String()), u)
	}
	return time.Duration(v), nil
}
