package analytics

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

func TestDefaults(t *testing.T) {
	c := defaultConfig()
	want := config{
		endpoint:      "https://api.segment.io",
		flushAt:       250,
		flushInterval: 5 * time.Second,
		maxQueueSize:  10_000,
		maxQueueBytes: 64 << 20,
		upload: consumer.Config{
			MaxConcurrentRequests: 8,
			Policy:                retry.DefaultPolicy(),
			RequestTimeout:        10 * time.Second,
			Gzip:                  true,
		},
	}
	assert.Equal(t, want.endpoint, c.endpoint, "Endpoint")
	assert.Equal(t, want.flushAt, c.flushAt, "FlushAt")
	assert.Equal(t, want.flushInterval, c.flushInterval, "FlushInterval")
	assert.Equal(t, want.maxQueueSize, c.maxQueueSize, "MaxQueueSize")
	assert.Equal(t, want.maxQueueBytes, c.maxQueueBytes, "MaxQueueBytes")
	assert.Equal(t, want.upload.MaxConcurrentRequests, c.upload.MaxConcurrentRequests, "MaxConcurrentRequests")
	assert.Equal(t, want.upload.RequestTimeout, c.upload.RequestTimeout, "RequestTimeout")
	assert.Equal(t, want.upload.Gzip, c.upload.Gzip, "Gzip")
	assert.Nil(t, c.upload.Client, "HTTPClient")
	assert.Nil(t, c.logger, "Logger")
	assert.Nil(t, c.callback, "Callback")
	assert.Equal(t, 30*time.Second, c.closeTimeout, "CloseTimeout")
	assert.True(t, c.upload.AdaptiveSendRate, "AdaptiveSendRate")
	p := c.upload.Policy
	assert.Equal(t, 10, p.RetryCount, "RetryCount")
	assert.Equal(t, 500*time.Millisecond, p.BackoffBase, "BackoffBase")
	assert.Equal(t, 60*time.Second, p.BackoffCap, "BackoffCap")
	assert.Equal(t, 12*time.Hour, p.MaxTotalBackoffDuration, "MaxTotalBackoffDuration")
	assert.Equal(t, 12*time.Hour, p.MaxRateLimitDuration, "MaxRateLimitDuration")
	assert.Equal(t, 300*time.Second, p.RateLimitRetryAfterCap, "RateLimitRetryAfterCap")
	assert.Equal(t, 4*time.Second, p.ProbeInterval, "ProbeInterval")
	assert.NoError(t, c.validate(), "the defaults validate")
	assert.Equal(t, 500_000, MaxBatchBytes, "MaxBatchBytes, as its doc states it")
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
	p := c.upload.Policy
	assert.Equal(t, "http://127.0.0.1:9/", c.endpoint, "Endpoint")
	assert.Equal(t, "http://127.0.0.1:9", c.batchURLBase(), "the base of the batch URL")
	assert.Equal(t, 7, c.flushAt, "FlushAt")
	assert.Equal(t, time.Second, c.flushInterval, "FlushInterval")
	assert.Equal(t, 70, c.maxQueueSize, "MaxQueueSize")
	assert.Equal(t, 64_000, c.maxQueueBytes, "MaxQueueBytes")
	assert.Equal(t, 3, c.upload.MaxConcurrentRequests, "MaxConcurrentRequests")
	assert.Zero(t, p.RetryCount, "RetryCount")
	assert.Zero(t, p.BackoffBase, "BackoffBase")
	assert.Equal(t, time.Second, p.BackoffCap, "BackoffCap")
	assert.Zero(t, p.MaxTotalBackoffDuration, "MaxTotalBackoffDuration")
	assert.Equal(t, time.Minute, p.MaxRateLimitDuration, "MaxRateLimitDuration")
	assert.Equal(t, 2*time.Second, p.RateLimitRetryAfterCap, "RateLimitRetryAfterCap")
	assert.Equal(t, 3*time.Second, c.upload.RequestTimeout, "RequestTimeout")
	assert.False(t, c.upload.Gzip, "Gzip")
	assert.Same(t, client, c.upload.Client, "HTTPClient")
	assert.NotNil(t, c.callback, "Callback")
	assert.False(t, c.upload.AdaptiveSendRate, "AdaptiveSendRate")
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
		{WithFlushAt(2_501), "FlushAt"}, // more than a batch request may hold
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

func TestOptionErrorNamesTheOption(t *testing.T) {
	tests := []struct {
		name   string
		key    string
		opts   []Option
		option string
		text   string
	}{
		{"write key", "", nil, "WriteKey", "analytics: invalid option WriteKey: must not be empty"},
		{"flush at", "k", []Option{WithFlushAt(0)}, "FlushAt", "analytics: invalid option FlushAt: must be at least 1, got 0"},
		// Past 2,500 events a batch request, Segment's API answers 200 but
		// rejects the events (segment-docs, HTTP API source, PR #7023).
		{"flush at over Segment's limit", "k", []Option{WithFlushAt(10_000)}, "FlushAt",
			"analytics: invalid option FlushAt: must be at most 2500 (Segment's documented limit of events per batch request: past it, the API answers 200 but rejects the events), got 10000"},
		{"endpoint", "k", []Option{WithEndpoint("ftp://x")}, "Endpoint", `analytics: invalid option Endpoint: must be an absolute http or https URL, got "ftp://x"`},
		{"http client", "k", []Option{WithHTTPClient(nil)}, "HTTPClient", "analytics: invalid option HTTPClient: must not be nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.key, tt.opts...)
			require.Error(t, err)
			assert.Nil(t, c)
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, tt.option, oe.Option)
			assert.Equal(t, tt.text, err.Error())
		})
	}
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
		{"FlushAt", WithFlushAt(2_500), WithFlushAt(2_501), "2500", nil},
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

// An endpoint that already ends in /v1/batch is taken as the base: the
// batches go to it, not to .../v1/batch/v1/batch.
func TestEndpointEndingInBatchPathIsNormalised(t *testing.T) {
	for _, tt := range []struct{ endpoint, path string }{
		{"http://tracking.test", "/v1/batch"},
		{"http://tracking.test/", "/v1/batch"},
		{"http://tracking.test/v1/batch", "/v1/batch"},
		{"http://tracking.test/v1/batch/", "/v1/batch"},
		{"http://tracking.test/proxy/v1/batch", "/proxy/v1/batch"},
		{"http://tracking.test/proxy/", "/proxy/v1/batch"},
	} {
		api := newAPI()
		e := newEnv(t, api, WithEndpoint(tt.endpoint))
		e.enqueue(tracks("m", 1)...)
		e.close()
		reqs := api.Requests()
		if assert.Len(t, reqs, 1, "requests for endpoint %s", tt.endpoint) {
			assert.Equal(t, tt.path, reqs[0].Path, "the path requested for endpoint %s", tt.endpoint)
		}
	}
}
