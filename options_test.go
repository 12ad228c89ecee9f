package analytics

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/retry"
)

func TestDefaults(t *testing.T) {
	c := defaultConfig()
	want := config{
		endpoint:              "https://api.segment.io",
		flushAt:               250,
		flushInterval:         5 * time.Second,
		maxQueueSize:          10_000,
		maxQueueBytes:         64 << 20,
		maxConcurrentRequests: 8,
		policy:                retry.DefaultPolicy(),
		requestTimeout:        10 * time.Second,
		gzip:                  true,
	}
	assert.Equal(t, want.endpoint, c.endpoint, "Endpoint")
	assert.Equal(t, want.flushAt, c.flushAt, "FlushAt")
	assert.Equal(t, want.flushInterval, c.flushInterval, "FlushInterval")
	assert.Equal(t, want.maxQueueSize, c.maxQueueSize, "MaxQueueSize")
	assert.Equal(t, want.maxQueueBytes, c.maxQueueBytes, "MaxQueueBytes")
	assert.Equal(t, want.maxConcurrentRequests, c.maxConcurrentRequests, "MaxConcurrentRequests")
	assert.Equal(t, want.requestTimeout, c.requestTimeout, "RequestTimeout")
	assert.Equal(t, want.gzip, c.gzip, "Gzip")
	assert.Nil(t, c.httpClient, "HTTPClient")
	assert.Nil(t, c.logger, "Logger")
	assert.Nil(t, c.callback, "Callback")
	assert.Equal(t, 30*time.Second, c.closeTimeout, "CloseTimeout")
	assert.True(t, c.adaptiveSendRate, "AdaptiveSendRate")
	p := c.policy
	assert.Equal(t, 10, p.RetryCount, "RetryCount")
	assert.Equal(t, 500*time.Millisecond, p.BackoffBase, "BackoffBase")
	assert.Equal(t, 60*time.Second, p.BackoffCap, "BackoffCap")
	assert.Equal(t, 12*time.Hour, p.MaxTotalBackoffDuration, "MaxTotalBackoffDuration")
	assert.Equal(t, 12*time.Hour, p.MaxRateLimitDuration, "MaxRateLimitDuration")
	assert.Equal(t, 300*time.Second, p.RateLimitRetryAfterCap, "RateLimitRetryAfterCap")
	assert.Equal(t, 4*time.Second, p.ProbeInterval, "ProbeInterval")
	assert.NoError(t, c.validate(), "the defaults validate")
}

func TestOptionsApply(t *testing.T) {
	client := &http.Client{}
	cb := CallbackFunc(func(Message, error) {})
	opts := []Option{
		WithEndpoint("http://127.0.0.1:9/"), WithFlushAt(7), WithFlushInterval(time.Second),
		WithMaxQueueSize(70), WithMaxQueueBytes(64_000), WithMaxConcurrentRequests(3), WithRetryCount(0),
		WithBackoffBase(0), WithBackoffCap(time.Second), WithMaxTotalBackoffDuration(0),
		WithMaxRateLimitDuration(time.Minute), WithRateLimitRetryAfterCap(2 * time.Second),
		WithRequestTimeout(3 * time.Second), WithGzip(false), WithHTTPClient(client), WithCallback(cb),
		WithAdaptiveSendRate(false), WithProbeInterval(time.Nanosecond),
	}
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	require.NoError(t, c.validate(), "validate")
	p := c.policy
	assert.Equal(t, "http://127.0.0.1:9/", c.endpoint, "Endpoint")
	assert.Equal(t, "http://127.0.0.1:9", c.batchURLBase(), "the base of the batch URL")
	assert.Equal(t, 7, c.flushAt, "FlushAt")
	assert.Equal(t, time.Second, c.flushInterval, "FlushInterval")
	assert.Equal(t, 70, c.maxQueueSize, "MaxQueueSize")
	assert.Equal(t, 64_000, c.maxQueueBytes, "MaxQueueBytes")
	assert.Equal(t, 3, c.maxConcurrentRequests, "MaxConcurrentRequests")
	assert.Zero(t, p.RetryCount, "RetryCount")
	assert.Zero(t, p.BackoffBase, "BackoffBase")
	assert.Equal(t, time.Second, p.BackoffCap, "BackoffCap")
	assert.Zero(t, p.MaxTotalBackoffDuration, "MaxTotalBackoffDuration")
	assert.Equal(t, time.Minute, p.MaxRateLimitDuration, "MaxRateLimitDuration")
	assert.Equal(t, 2*time.Second, p.RateLimitRetryAfterCap, "RateLimitRetryAfterCap")
	assert.Equal(t, 3*time.Second, c.requestTimeout, "RequestTimeout")
	assert.False(t, c.gzip, "Gzip")
	assert.Same(t, client, c.httpClient, "HTTPClient")
	assert.NotNil(t, c.callback, "Callback")
	assert.False(t, c.adaptiveSendRate, "AdaptiveSendRate")
	assert.Equal(t, time.Nanosecond, p.ProbeInterval, "ProbeInterval")
}

func TestInvalidOptionsNameTheOption(t *testing.T) {
	tests := []struct {
		opt    Option
		option string
	}{
		{WithEndpoint(""), "Endpoint"},
		{WithEndpoint("api.segment.io"), "Endpoint"},
		{WithEndpoint("ftp://host"), "Endpoint"},
		{WithEndpoint("http://"), "Endpoint"},
		{WithEndpoint("http://host/?q=1"), "Endpoint"},
		{WithEndpoint("http://host\x7f"), "Endpoint"},
		{WithFlushAt(0), "FlushAt"},
		{WithFlushAt(20_000), "FlushAt"}, // more than MaxQueueSize
		{WithFlushInterval(0), "FlushInterval"},
		{WithFlushInterval(-time.Second), "FlushInterval"},
		{WithMaxQueueSize(0), "MaxQueueSize"},
		{WithMaxQueueBytes(MaxMessageBytes - 1), "MaxQueueBytes"},
		{WithMaxConcurrentRequests(0), "MaxConcurrentRequests"},
		{WithRetryCount(-1), "RetryCount"},
		{WithBackoffBase(-1), "BackoffBase"},
		{WithBackoffCap(0), "BackoffCap"},
		{WithMaxTotalBackoffDuration(-1), "MaxTotalBackoffDuration"},
		{WithMaxRateLimitDuration(-1), "MaxRateLimitDuration"},
		{WithRateLimitRetryAfterCap(0), "RateLimitRetryAfterCap"},
		{WithRequestTimeout(0), "RequestTimeout"},
		{WithCloseTimeout(-time.Nanosecond), "CloseTimeout"},
		{WithProbeInterval(0), "ProbeInterval"},
		{WithProbeInterval(-time.Second), "ProbeInterval"},
		{WithHTTPClient(nil), "HTTPClient"},
	}
	for _, tt := range tests {
		c, err := New(testWriteKey, tt.opt)
		if !assert.Error(t, err, "New with an invalid %s", tt.option) {
			c.Close()
			continue
		}
		assert.ErrorContains(t, err, "invalid option "+tt.option+":", "New with an invalid %s", tt.option)
		assert.NotContains(t, err.Error(), testWriteKey, "the error of New with an invalid %s", tt.option)
	}
	_, err := New("")
	assert.ErrorContains(t, err, "WriteKey", "New with an empty write key")
}

// No endpoint error shows a password: not for an endpoint url.Parse
// refuses, whose error quotes the input, nor for one it reads with the
// userinfo outside the authority, where URL.Redacted does not look.
func TestEndpointErrorHidesThePassword(t *testing.T) {
	for _, endpoint := range []string{
		"http://user:s3cret@host:bad port/",
		"http://user:s3cret\x7f@host/",
		"http://user:s3cret@host\x7f/",
		"http://user:s3cret@ho st/",
		"http://user:s3cr%zzet@host/",
		"http://user:s3/cret@host/", // a "/" in the password ends the authority early
		"http://user:s3cret@host/?q=1",
		"http:user:s3cret@host",
		"http:/user:s3cret@host/",
		"user:s3cret@host",
		"ftp://user:s3cret@host",
	} {
		c, err := New(testWriteKey, WithEndpoint(endpoint))
		if !assert.Error(t, err, "New with endpoint %q", endpoint) {
			c.Close()
			continue
		}
		assert.ErrorContains(t, err, "invalid option Endpoint:", "New with endpoint %q", endpoint)
		for _, part := range []string{"s3", "cret", "%zz"} { // of the password
			assert.NotContains(t, err.Error(), part, "the error of New with endpoint %q", endpoint)
		}
	}
}

func TestZeroMeansZero(t *testing.T) {
	// Zero is valid where it has a meaning.
	c, err := New(testWriteKey, WithRetryCount(0), WithBackoffBase(0), WithMaxTotalBackoffDuration(0), WithMaxRateLimitDuration(0),
		WithCloseTimeout(0))
	require.NoError(t, err, "New")
	assert.NoError(t, c.Close(), "Close")
}

func TestOptionsFromEnv(t *testing.T) {
	env := map[string]string{
		"ANALYTICS_ENDPOINT":                   "http://127.0.0.1:8080",
		"ANALYTICS_FLUSH_AT":                   "100",
		"ANALYTICS_FLUSH_INTERVAL":             "0.5",
		"ANALYTICS_RETRY_COUNT":                "0",
		"ANALYTICS_MAX_TOTAL_BACKOFF_DURATION": "60",
		"ANALYTICS_MAX_RATE_LIMIT_DURATION":    "120.25",
		"ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP": "30",
		"ANALYTICS_REQUEST_TIMEOUT":            "2.5",
		"ANALYTICS_GZIP":                       "false",
		"ANALYTICS_MAX_CONCURRENT_REQUESTS":    "2",
		"ANALYTICS_MAX_QUEUE_SIZE":             "500",
		"ANALYTICS_MAX_QUEUE_BYTES":            "1000000",
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	opts, err := OptionsFromEnv()
	require.NoError(t, err, "OptionsFromEnv")
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	p := c.policy
	assert.Equal(t, "http://127.0.0.1:8080", c.endpoint, "ANALYTICS_ENDPOINT")
	assert.Equal(t, 100, c.flushAt, "ANALYTICS_FLUSH_AT")
	assert.Equal(t, 500*time.Millisecond, c.flushInterval, "ANALYTICS_FLUSH_INTERVAL")
	assert.Zero(t, p.RetryCount, "ANALYTICS_RETRY_COUNT")
	assert.Equal(t, time.Minute, p.MaxTotalBackoffDuration, "ANALYTICS_MAX_TOTAL_BACKOFF_DURATION")
	assert.Equal(t, 120250*time.Millisecond, p.MaxRateLimitDuration, "ANALYTICS_MAX_RATE_LIMIT_DURATION")
	assert.Equal(t, 30*time.Second, p.RateLimitRetryAfterCap, "ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP")
	assert.Equal(t, 2500*time.Millisecond, c.requestTimeout, "ANALYTICS_REQUEST_TIMEOUT")
	assert.False(t, c.gzip, "ANALYTICS_GZIP")
	assert.Equal(t, 2, c.maxConcurrentRequests, "ANALYTICS_MAX_CONCURRENT_REQUESTS")
	assert.Equal(t, 500, c.maxQueueSize, "ANALYTICS_MAX_QUEUE_SIZE")
	assert.Equal(t, 1_000_000, c.maxQueueBytes, "ANALYTICS_MAX_QUEUE_BYTES")
}

func TestOptionsFromEnvUnsetLeavesDefaults(t *testing.T) {
	for _, k := range []string{"ANALYTICS_ENDPOINT", "ANALYTICS_FLUSH_AT", "ANALYTICS_GZIP"} {
		t.Setenv(k, "")
	}
	opts, err := optionsFromLookup(func(string) (string, bool) { return "", false })
	assert.NoError(t, err, "no variables")
	assert.Empty(t, opts, "options from no variables")
	opts, err = OptionsFromEnv()
	assert.NoError(t, err, "empty variables")
	assert.Empty(t, opts, "options from empty variables")
}

func TestOptionsFromEnvMalformedNamesTheVariable(t *testing.T) {
	bad := map[string]string{
		"ANALYTICS_FLUSH_AT":                   "ten",
		"ANALYTICS_FLUSH_INTERVAL":             "5s",
		"ANALYTICS_RETRY_COUNT":                "1.5",
		"ANALYTICS_MAX_TOTAL_BACKOFF_DURATION": "NaN",
		"ANALYTICS_MAX_RATE_LIMIT_DURATION":    "Inf",
		"ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP": "1e300",
		"ANALYTICS_REQUEST_TIMEOUT":            "soon",
		"ANALYTICS_GZIP":                       "yes please",
		"ANALYTICS_MAX_CONCURRENT_REQUESTS":    "many",
		"ANALYTICS_MAX_QUEUE_SIZE":             "lots",
		"ANALYTICS_MAX_QUEUE_BYTES":            "32MiB",
	}
	for name, value := range bad {
		_, err := optionsFromLookup(func(k string) (string, bool) {
			if k == name {
				return value, true
			}
			return "", false
		})
		assert.ErrorContains(t, err, name, "%s=%q", name, value)
	}
}

func TestOutOfRangeEnvValueIsCaughtByNew(t *testing.T) {
	t.Setenv("ANALYTICS_RETRY_COUNT", "-3")
	opts, err := OptionsFromEnv()
	require.NoError(t, err, "OptionsFromEnv")
	_, err = New(testWriteKey, opts...)
	assert.ErrorContains(t, err, "RetryCount", "New with ANALYTICS_RETRY_COUNT=-3")
}
