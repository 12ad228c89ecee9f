package analytics

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"
)

// OptionsFromEnv reads settings from the environment, with the names and
// units shared by the Segment SDKs, so a deployment tunes the SDK without a
// rebuild:
//
//	ANALYTICS_ENDPOINT                    URL
//	ANALYTICS_FLUSH_AT                    events
//	ANALYTICS_FLUSH_INTERVAL              seconds
//	ANALYTICS_RETRY_COUNT                 retries
//	ANALYTICS_MAX_TOTAL_BACKOFF_DURATION  seconds
//	ANALYTICS_MAX_RATE_LIMIT_DURATION     seconds
//	ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP  seconds
//	ANALYTICS_REQUEST_TIMEOUT             seconds
//	ANALYTICS_GZIP                        true or false
//	ANALYTICS_MAX_CONCURRENT_REQUESTS     requests
//	ANALYTICS_MAX_QUEUE_SIZE              events
//	ANALYTICS_MAX_QUEUE_BYTES             bytes
//
// Durations are in seconds and may have a fraction ("0.5"). An unset or
// empty variable leaves the default. A malformed one is an error naming the
// variable, and so is a number out of range for its type (a count beyond an
// int, seconds beyond a time.Duration); a well-formed value beyond the
// option's bound is caught by New, naming the option. Pass the result to
// New before or after options of your own: later options win.
func OptionsFromEnv() ([]Option, error) {
	return optionsFromLookup(os.LookupEnv)
}

func optionsFromLookup(lookup func(string) (string, bool)) ([]Option, error) {
	var opts []Option
	get := func(name string) (string, bool) {
		v, ok := lookup(name)
		v = strings.TrimSpace(v)
		return v, ok && v != ""
	}
	if v, ok := get("ANALYTICS_ENDPOINT"); ok {
		opts = append(opts, WithEndpoint(v))
	}
	ints := []struct {
		name string
		opt  func(int) Option
	}{
		{"ANALYTICS_FLUSH_AT", WithFlushAt},
		{"ANALYTICS_RETRY_COUNT", WithRetryCount},
		{"ANALYTICS_MAX_CONCURRENT_REQUESTS", WithMaxConcurrentRequests},
		{"ANALYTICS_MAX_QUEUE_SIZE", WithMaxQueueSize},
		{"ANALYTICS_MAX_QUEUE_BYTES", WithMaxQueueBytes},
	}
	for _, e := range ints {
		v, ok := get(e.name)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if errors.Is(err, strconv.ErrRange) {
			return nil, fmt.Errorf("analytics: environment variable %s: %q is out of range", e.name, v)
		}
		if err != nil {
			return nil, fmt.Errorf("analytics: environment variable %s: %q is not a whole number", e.name, v)
		}
		opts = append(opts, e.opt(n))
	}
	durations := []struct {
		name string
		opt  func(time.Duration) Option
	}{
		{"ANALYTICS_FLUSH_INTERVAL", WithFlushInterval},
		{"ANALYTICS_MAX_TOTAL_BACKOFF_DURATION", WithMaxTotalBackoffDuration},
		{"ANALYTICS_MAX_RATE_LIMIT_DURATION", WithMaxRateLimitDuration},
		{"ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP", WithRateLimitRetryAfterCap},
		{"ANALYTICS_REQUEST_TIMEOUT", WithRequestTimeout},
	}
	for _, e := range durations {
		v, ok := get(e.name)
		if !ok {
			continue
		}
		d, err := parseSeconds(v)
		if err != nil {
			return nil, fmt.Errorf("analytics: environment variable %s: %v", e.name, err)
		}
		opts = append(opts, e.opt(d))
	}
	if v, ok := get("ANALYTICS_GZIP"); ok {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return nil, fmt.Errorf("analytics: environment variable ANALYTICS_GZIP: %q is not true or false", v)
		}
		opts = append(opts, WithGzip(on))
	}
	return opts, nil
}

// SecondsToDuration converts a number of seconds, as the cross-SDK settings
// give them (fractions allowed), to a time.Duration. It rejects NaN, ±Inf
// and values too large for a time.Duration rather than wrapping around.
func SecondsToDuration(s float64) (time.Duration, error) {
	if math.IsNaN(s) || math.IsInf(s, 0) {
		return 0, fmt.Errorf("%v is not a number of seconds", s)
	}
	ns := s * float64(time.Second)
	if ns >= math.MaxInt64 || ns <= math.MinInt64 {
		return 0, fmt.Errorf("%v seconds is too long", s)
	}
	return time.Duration(math.Round(ns)), nil
}

func parseSeconds(v string) (time.Duration, error) {
	s, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number of seconds", v)
	}
	return SecondsToDuration(s)
}
