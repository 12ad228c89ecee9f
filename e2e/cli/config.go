package main

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"

	analytics "github.com/dualpath/analytics-go"
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

// configKeys are the config members of SPEC §9, with the units of the
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

var (
	errFraction = errors.New("not a whole number at this scale")
	errRange    = errors.New("out of range")
)

// decimal is a JSON number held exactly: ±digits × 10^exp. digits has no
// leading or trailing zeros; "" is zero.
type decimal struct {
	neg    bool
	digits string
	exp    int64
}

// parseDecimal reads a JSON number literal. It does no arithmetic on the
// exponent beyond clamping it, so "1e999999999" costs nothing.
func parseDecimal(s string) (decimal, bool) {
	var d decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, dot := strings.Cut(mant, ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) || dot && frac == "" {
		return decimal{}, false
	}
	if hasExp {
		digits := strings.TrimLeft(expText, "+-")
		if digits == "" || !allDigits(digits) {
			return decimal{}, false
		}
		e, err := strconv.ParseInt(expText, 10, 64)
		if err != nil {
			// Saturate: past ±2^40 every non-zero value is out of any
			// range we use or finer than a nanosecond.
			e = 1 << 40
			if strings.HasPrefix(expText, "-") {
				e = -e
			}
		}
		d.exp = max(min(e, 1<<40), -1<<40)
	}
	digits := strings.TrimLeft(whole+frac, "0")
	d.exp -= int64(len(frac))
	trimmed := strings.TrimRight(digits, "0")
	d.exp += int64(len(digits) - len(trimmed))
	d.digits = trimmed
	if d.digits == "" {
		d.neg, d.exp = false, 0
	}
	return d, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// scaled returns d × 10^scale as an int64: errFraction when that is not a
// whole number, errRange when it does not fit.
func (d decimal) scaled(scale int64) (int64, error) {
	if d.digits == "" {
		return 0, nil
	}
	e := d.exp + scale
	if e < 0 {
		return 0, errFraction
	}
	if int64(len(d.digits))+e > 19 { // int64 has at most 19 digits
		return 0, errRange
	}
	text := d.digits + strings.Repeat("0", int(e))
	if d.neg {
		text = "-" + text
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, errRange
	}
	return v, nil
}

// parseInt reads an integer config value; 10.0 and 1e1 are 10, 10.5 is bad
// input.
func parseInt(n json.Number, path string) (int, error) {
	d, ok := parseDecimal(n.String())
	if !ok {
		return 0, inputErr(path, "want an integer, got %q", short(n.String()))
	}
	v, err := d.scaled(0)
	switch {
	case errors.Is(err, errFraction):
		return 0, inputErr(path, "want an integer, got %s", short(n.String()))
	case err != nil || int64(int(v)) != v:
		return 0, inputErr(path, "%s is out of range", short(n.String()))
	}
	return int(v), nil
}

// parseDuration reads a duration in unit u exactly, with no float64 on the
// way: 0.1 seconds is 100ms, not 100ms ± 1ns.
func parseDuration(n json.Number, u unit, path string) (time.Duration, error) {
	d, ok := parseDecimal(n.String())
	if !ok {
		return 0, inputErr(path, "want a number of %s, got %q", u, short(n.String()))
	}
	scale := int64(6) // milliseconds to nanoseconds
	if u == second {
		scale = 9
	}
	v, err := d.scaled(scale)
	switch {
	case errors.Is(err, errFraction):
		return 0, inputErr(path, "%s %s is finer than a nanosecond", short(n.String()), u)
	case err != nil:
		return 0, inputErr(path, "%s %s is out of range (a duration is at most about 292 years)", short(n.String()), u)
	}
	return time.Duration(v), nil
}
