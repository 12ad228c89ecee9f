package decimal

import (
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAndScale(t *testing.T) {
	tests := []struct {
		in    string
		scale int64
		want  int64
		err   error
	}{
		{"0", 0, 0, nil},
		{"-0.0e5", 9, 0, nil},
		{"0e999999999999999999999", 0, 0, nil},
		{"12", 0, 12, nil},
		{"1.20", 0, 0, ErrFraction},
		{"1.20", 1, 12, nil},
		{"-3.5", 6, -3500000, nil},
		{"1e-999999999999999999999", 9, 0, ErrFraction},
		{"1e999999999999999999999", 0, 0, ErrRange},
		{"9223372036854775807", 0, 1<<63 - 1, nil},
		{"9223372036854775808", 0, 0, ErrRange},
		{"-9223372036854775808", 0, -1 << 63, nil},
		{"00012.3400", 2, 1234, nil},
		{"1E+2", 0, 100, nil},
		{"25e-1", 1, 25, nil},
	}
	for _, tt := range tests {
		d, ok := Parse(tt.in)
		if !assert.True(t, ok, "Parse(%q) failed", tt.in) {
			continue
		}
		got, err := d.Scaled(tt.scale)
		assert.Equal(t, tt.want, got, "%q scaled by 10^%d", tt.in, tt.scale)
		if tt.err == nil {
			assert.NoError(t, err, "%q scaled by 10^%d", tt.in, tt.scale)
		} else {
			assert.ErrorIs(t, err, tt.err, "%q scaled by 10^%d", tt.in, tt.scale)
		}
	}
}

func TestParseRefusesWhatJSONRefuses(t *testing.T) {
	for _, bad := range []string{
		"", "-", ".5", "1.", "1e", "1e+", "0x10", "1_000", "+1", "1.2.3",
		"NaN", "Inf", "-Inf", " 1", "1 ", "1s", "--1", "1e1.5", "1e--1", "1e+-1", "1e-+1", "1e++1",
	} {
		_, ok := Parse(bad)
		assert.False(t, ok, "Parse(%q) accepted it", bad)
	}
}

func TestNegative(t *testing.T) {
	for in, want := range map[string]bool{
		"-1": true, "-0.001": true, "-1e-999": true,
		"0": false, "-0": false, "-0.0e5": false, "1": false,
	} {
		d, ok := Parse(in)
		require.True(t, ok, "Parse(%q) failed", in)
		assert.Equal(t, want, d.Negative(), "Parse(%q).Negative()", in)
	}
}

// Seconds scaled by 10^9 are a time.Duration, exactly: where a float64
// would round, Scaled refuses.
func TestSecondsToDuration(t *testing.T) {
	tests := []struct {
		seconds string
		want    time.Duration
		err     error
	}{
		{"0", 0, nil},
		{"1", time.Second, nil},
		{"0.001", time.Millisecond, nil},
		{"0.1", 100 * time.Millisecond, nil},
		{"43200", 12 * time.Hour, nil},
		{"1.000000001", time.Second + 1, nil},
		{"9223372036.854775807", 1<<63 - 1, nil},
		{"9223372036.854775808", 0, ErrRange},
		{"1e12", 0, ErrRange},
		{"1e-10", 0, ErrFraction},
	}
	for _, tt := range tests {
		d, ok := Parse(tt.seconds)
		require.True(t, ok, "Parse(%q) failed", tt.seconds)
		ns, err := d.Scaled(9)
		assert.Equal(t, tt.want, time.Duration(ns), "%s seconds", tt.seconds)
		if tt.err == nil {
			assert.NoError(t, err, "%s seconds", tt.seconds)
		} else {
			assert.ErrorIs(t, err, tt.err, "%s seconds", tt.seconds)
		}
	}
}

// FuzzParse: Parse never panics, accepts only numbers, and Scaled agrees
// with exact rational arithmetic.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"0", "-0.0e5", "12", "1.20", "-3.5", "00012.3400", "1e-999999999999999999999",
		"9223372036854775807", "-9223372036854775808", "9223372036.854775808",
		".5", "1.", "+1", "1e+", "NaN", "0x10", "",
	} {
		f.Add(seed, int64(9))
	}
	f.Fuzz(func(t *testing.T, s string, scale int64) {
		scale %= 20
		d, ok := Parse(s)
		if !ok {
			return
		}
		_, exp, _ := strings.Cut(strings.ToLower(s), "e")
		if len(exp) > 4 {
			return // big.Rat would compute 10^exp, or refuse it
		}
		r, isNumber := new(big.Rat).SetString(s)
		require.True(t, isNumber, "Parse accepted %q, which is not a number", s)
		assert.Equal(t, r.Sign() < 0, d.Negative(), "Negative() of %q", s)
		pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(max(scale, -scale)), nil)
		if scale >= 0 {
			r.Mul(r, new(big.Rat).SetInt(pow))
		} else {
			r.Quo(r, new(big.Rat).SetInt(pow))
		}
		got, err := d.Scaled(scale)
		switch {
		case !r.IsInt():
			require.ErrorIs(t, err, ErrFraction, "%q scaled by 10^%d is %v", s, scale, r)
		case !r.Num().IsInt64():
			require.ErrorIs(t, err, ErrRange, "%q scaled by 10^%d is %v", s, scale, r)
		default:
			require.NoError(t, err, "%q scaled by 10^%d", s, scale)
			require.Equal(t, r.Num().Int64(), got, "%q scaled by 10^%d", s, scale)
		}
	})
}
