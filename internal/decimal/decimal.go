// Package decimal reads decimal number literals exactly, with no float64
// on the way, so that a setting written as 0.1 seconds is 100ms, not 100ms
// ± 1ns, and a huge exponent is refused rather than rounded to infinity.
//
// The SDK reads every seconds or milliseconds setting through it: the
// environment variables of OptionsFromEnv and the config of the e2e
// conformance CLI.
package decimal

import (
	"errors"
	"strconv"
	"strings"
)

// Errors of Decimal.Scaled.
var (
	// ErrFraction: the scaled value is not a whole number.
	ErrFraction = errors.New("not a whole number at this scale")
	// ErrRange: the scaled value does not fit in an int64.
	ErrRange = errors.New("out of range")
)

// A Decimal is a number held exactly: ±digits × 10^exp. The zero value is
// zero.
type Decimal struct {
	neg    bool
	digits string // no leading or trailing zeros; "" is zero
	exp    int64
}

// Parse reads a number in the grammar of a JSON number literal: an
// optional "-", digits (no "+", no leading "." nor trailing "."), an
// optional fraction, an optional exponent ("e" or "E", with an optional
// sign). It reports false for anything else. It does no arithmetic on the
// exponent beyond clamping it, so "1e999999999" costs nothing.
func Parse(s string) (Decimal, bool) {
	var d Decimal
	if strings.HasPrefix(s, "-") {
		d.neg, s = true, s[1:]
	}
	mant, expText, hasExp := strings.Cut(strings.ToLower(s), "e")
	whole, frac, dot := strings.Cut(mant, ".")
	if whole == "" || !allDigits(whole) || !allDigits(frac) || dot && frac == "" {
		return Decimal{}, false
	}
	if hasExp {
		digits := strings.TrimPrefix(strings.TrimPrefix(expText, "+"), "-")
		if len(expText)-len(digits) > 1 || digits == "" || !allDigits(digits) {
			return Decimal{}, false
		}
		// Saturate: past ±2^40 every non-zero value is out of any range
		// we use or finer than a nanosecond. Of a sign and digits,
		// ParseInt fails only out of range, returning ±MaxInt64, which
		// the clamp saturates as any exponent past ±2^40.
		e, _ := strconv.ParseInt(expText, 10, 64)
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

// allDigits reports whether s is all ASCII digits; "" is.
func allDigits(s string) bool { return strings.Trim(s, "0123456789") == "" }

// Negative reports whether d is below zero; zero, even written "-0", is
// not.
func (d Decimal) Negative() bool { return d.neg }

// Scaled returns d × 10^scale as an int64: ErrFraction when that is not a
// whole number, ErrRange when it does not fit. A number of seconds scaled
// by 9 is a number of nanoseconds, a time.Duration.
func (d Decimal) Scaled(scale int64) (int64, error) {
	if d.digits == "" {
		return 0, nil
	}
	e := d.exp + scale
	if e < 0 {
		return 0, ErrFraction
	}
	if int64(len(d.digits))+e > 19 { // int64 has at most 19 digits
		return 0, ErrRange
	}
	text := d.digits + strings.Repeat("0", int(e))
	if d.neg {
		text = "-" + text
	}
	v, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, ErrRange
	}
	return v, nil
}
