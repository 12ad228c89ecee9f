package analytics

import (
	"context"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// newOrPanic calls New, turning a panic into an error so that a test can
// report it.
func newOrPanic(opts ...Option) (c *Client, err error) {
	defer func() {
		if p := recover(); p != nil {
			c, err = nil, fmt.Errorf("New panicked: %v", p)
		}
	}()
	return New(testWriteKey, opts...)
}

// closeAccepted ends a client a test did not expect New to accept,
// without waiting on anything it queued.
func closeAccepted(c *Client) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.Shutdown(ctx)
}

// A MaxConcurrentRequests that sizes a channel, multiplied by the batches
// in flight, once made New panic (2^61: the product overflows to a
// negative size) or hang later (2^62: it overflows to 0).
func TestHugeMaxConcurrentRequestsIsRefused(t *testing.T) {
	for _, n := range []int64{1 << 61, 1 << 62, math.MaxInt64} {
		if n > math.MaxInt {
			continue // a 32-bit platform cannot even ask for it
		}
		c, err := newOrPanic(WithMaxConcurrentRequests(int(n)))
		if !assert.Error(t, err, "New with MaxConcurrentRequests %d", n) {
			closeAccepted(c)
			continue
		}
		assert.ErrorContains(t, err, "invalid option MaxConcurrentRequests:", "New with MaxConcurrentRequests %d", n)
	}
}

// Every numeric option has an upper bound: New accepts the bound and
// refuses one more, naming the option and the bound.
func TestNumericOptionBounds(t *testing.T) {
	const queueBytes = min(64<<30, math.MaxInt-MaxMessageBytes) // 64 GiB on 64-bit platforms
	const week, month = 7 * 24 * time.Hour, 30 * 24 * time.Hour
	tests := []struct {
		option      string
		at, beyond  Option
		bound       string // as the error prints it
		alsoSetting []Option
	}{
		{"FlushAt", WithFlushAt(10_000), WithFlushAt(10_001), "10000", nil},
		{"MaxQueueSize", WithMaxQueueSize(10_000_000), WithMaxQueueSize(10_000_001), "10000000", nil},
		{"MaxQueueBytes", WithMaxQueueBytes(queueBytes), WithMaxQueueBytes(queueBytes + 1), fmt.Sprint(queueBytes), nil},
		{"MaxConcurrentRequests", WithMaxConcurrentRequests(1_000), WithMaxConcurrentRequests(1_001), "1000", nil},
		{"RetryCount", WithRetryCount(1_000), WithRetryCount(1_001), "1000", nil},
		{"FlushInterval", WithFlushInterval(week), WithFlushInterval(week + 1), week.String(), nil},
		{"BackoffBase", WithBackoffBase(week), WithBackoffBase(week + 1), week.String(), nil},
		{"BackoffCap", WithBackoffCap(week), WithBackoffCap(week + 1), week.String(), nil},
		{"RateLimitRetryAfterCap", WithRateLimitRetryAfterCap(week), WithRateLimitRetryAfterCap(week + 1), week.String(), nil},
		{"RequestTimeout", WithRequestTimeout(week), WithRequestTimeout(week + 1), week.String(), nil},
		{"MaxTotalBackoffDuration", WithMaxTotalBackoffDuration(month), WithMaxTotalBackoffDuration(month + 1), month.String(), nil},
		{"MaxRateLimitDuration", WithMaxRateLimitDuration(month), WithMaxRateLimitDuration(month + 1), month.String(), nil},
		{"CloseTimeout", WithCloseTimeout(week), WithCloseTimeout(week + 1), week.String(), nil},
		{"ProbeInterval", WithProbeInterval(week), WithProbeInterval(week + 1), week.String(), nil},
		// FlushAt is also bounded by MaxQueueSize.
		{"FlushAt", WithFlushAt(100), WithFlushAt(101), "MaxQueueSize 100", []Option{WithMaxQueueSize(100)}},
	}
	for _, tt := range tests {
		c, err := newOrPanic(append(tt.alsoSetting, tt.at)...)
		if assert.NoError(t, err, "%s at its bound", tt.option) {
			assert.NoError(t, c.Close(), "%s at its bound: Close", tt.option)
		}
		c, err = newOrPanic(append(tt.alsoSetting, tt.beyond)...)
		if !assert.Error(t, err, "%s beyond its bound", tt.option) {
			closeAccepted(c)
			continue
		}
		assert.ErrorContains(t, err, "analytics: invalid option "+tt.option+":", "%s beyond its bound", tt.option)
		assert.ErrorContains(t, err, tt.bound, "%s beyond its bound", tt.option)
	}
}

// A value beyond what its type holds is refused by OptionsFromEnv, naming
// the variable; a value that fits but is beyond the option's bound, by New,
// naming the option.
func TestHugeEnvValuesAreRefused(t *testing.T) {
	tests := []struct {
		variable, value string
		option          string // "" when OptionsFromEnv refuses it
	}{
		{"ANALYTICS_MAX_CONCURRENT_REQUESTS", "4611686018427387904", "MaxConcurrentRequests"},
		{"ANALYTICS_MAX_CONCURRENT_REQUESTS", "2305843009213693952", "MaxConcurrentRequests"},
		{"ANALYTICS_MAX_CONCURRENT_REQUESTS", "99999999999999999999", ""},
		{"ANALYTICS_FLUSH_AT", "9223372036854775807", "FlushAt"},
		{"ANALYTICS_RETRY_COUNT", "9223372036854775807", "RetryCount"},
		{"ANALYTICS_MAX_QUEUE_SIZE", "9223372036854775807", "MaxQueueSize"},
		{"ANALYTICS_MAX_QUEUE_BYTES", "9223372036854775807", "MaxQueueBytes"},
		{"ANALYTICS_MAX_QUEUE_BYTES", "-9223372036854775809", ""},
		// 9,223,372,036 s is just within a time.Duration, one more is not.
		{"ANALYTICS_REQUEST_TIMEOUT", "9223372036", "RequestTimeout"},
		{"ANALYTICS_REQUEST_TIMEOUT", "9223372037", ""},
		{"ANALYTICS_FLUSH_INTERVAL", "1e10", ""},
		{"ANALYTICS_FLUSH_INTERVAL", "604800.000000001", "FlushInterval"},
		{"ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP", "9e9", "RateLimitRetryAfterCap"},
		{"ANALYTICS_MAX_TOTAL_BACKOFF_DURATION", "2592001", "MaxTotalBackoffDuration"},
		{"ANALYTICS_MAX_RATE_LIMIT_DURATION", "1e300", ""},
		{"ANALYTICS_MAX_RATE_LIMIT_DURATION", "9e9", "MaxRateLimitDuration"},
		{"ANALYTICS_PROBE_INTERVAL", "0", "ProbeInterval"},
		{"ANALYTICS_PROBE_INTERVAL", "604800.000000001", "ProbeInterval"},
		{"ANALYTICS_PROBE_INTERVAL", "4s", ""},
		{"ANALYTICS_ADAPTIVE_SEND_RATE", "maybe", ""},
	}
	for _, tt := range tests {
		opts, err := optionsFromLookup(func(k string) (string, bool) {
			if k == tt.variable {
				return tt.value, true
			}
			return "", false
		})
		if tt.option == "" {
			assert.ErrorContains(t, err, tt.variable, "%s=%s: OptionsFromEnv", tt.variable, tt.value)
			continue
		}
		if !assert.NoError(t, err, "%s=%s: OptionsFromEnv", tt.variable, tt.value) {
			continue
		}
		c, err := newOrPanic(opts...)
		if !assert.Error(t, err, "%s=%s: New", tt.variable, tt.value) {
			closeAccepted(c)
			continue
		}
		assert.ErrorContains(t, err, "invalid option "+tt.option+":", "%s=%s: New", tt.variable, tt.value)
	}
}
