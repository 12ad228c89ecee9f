package analytics

import (
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

func TestDefaults(t *testing.T) {
	c := defaultConfig()
	want := config{
		endpoint:              "https://api.segment.io",
		flushAt:               250,
		flushInterval:         5 * time.Second,
		maxQueueSize:          10_000,
		maxQueueBytes:         32 << 20,
		maxConcurrentRequests: 8,
		policy:                retry.DefaultPolicy(),
		requestTimeout:        10 * time.Second,
		gzip:                  true,
	}
	if c.endpoint != want.endpoint || c.flushAt != want.flushAt || c.flushInterval != want.flushInterval ||
		c.maxQueueSize != want.maxQueueSize || c.maxQueueBytes != want.maxQueueBytes ||
		c.maxConcurrentRequests != want.maxConcurrentRequests || c.requestTimeout != want.requestTimeout ||
		c.gzip != want.gzip || c.httpClient != nil || c.logger != nil || c.callback != nil ||
		c.closeTimeout != 30*time.Second {
		t.Fatalf("defaults = %+v", c)
	}
	p := c.policy
	if p.RetryCount != 10 || p.BackoffBase != 500*time.Millisecond || p.BackoffCap != 60*time.Second ||
		p.MaxTotalBackoffDuration != 12*time.Hour || p.MaxRateLimitDuration != 12*time.Hour ||
		p.RateLimitRetryAfterCap != 300*time.Second {
		t.Fatalf("retry defaults = %+v", p)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestOptionsApply(t *testing.T) {
	client := &http.Client{}
	cb := callbackFunc(func(Message, error) {})
	opts := []Option{
		WithEndpoint("http://127.0.0.1:9/"), WithFlushAt(7), WithFlushInterval(time.Second),
		WithMaxQueueSize(70), WithMaxQueueBytes(64_000), WithMaxConcurrentRequests(3), WithRetryCount(0),
		WithBackoffBase(0), WithBackoffCap(time.Second), WithMaxTotalBackoffDuration(0),
		WithMaxRateLimitDuration(time.Minute), WithRateLimitRetryAfterCap(2 * time.Second),
		WithRequestTimeout(3 * time.Second), WithGzip(false), WithHTTPClient(client), WithCallback(cb),
	}
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	if err := c.validate(); err != nil {
		t.Fatalf("validate: %v", err)
	}
	p := c.policy
	if c.endpoint != "http://127.0.0.1:9/" || c.batchURLBase() != "http://127.0.0.1:9" || c.flushAt != 7 ||
		c.flushInterval != time.Second || c.maxQueueSize != 70 || c.maxQueueBytes != 64_000 ||
		c.maxConcurrentRequests != 3 || p.RetryCount != 0 || p.BackoffBase != 0 || p.BackoffCap != time.Second ||
		p.MaxTotalBackoffDuration != 0 || p.MaxRateLimitDuration != time.Minute ||
		p.RateLimitRetryAfterCap != 2*time.Second || c.requestTimeout != 3*time.Second || c.gzip ||
		c.httpClient != client || c.callback == nil {
		t.Fatalf("options not applied: %+v", c)
	}
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
		{WithHTTPClient(nil), "HTTPClient"},
	}
	for _, tt := range tests {
		c, err := New(testWriteKey, tt.opt)
		if err == nil {
			c.Close()
			t.Errorf("option %s: New accepted an invalid value", tt.option)
			continue
		}
		if !strings.Contains(err.Error(), "invalid option "+tt.option+":") {
			t.Errorf("error %q does not name option %s", err, tt.option)
		}
		if strings.Contains(err.Error(), testWriteKey) {
			t.Errorf("error %q contains the write key", err)
		}
	}
	if _, err := New(""); err == nil || !strings.Contains(err.Error(), "WriteKey") {
		t.Errorf("empty write key: %v", err)
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
		if err == nil {
			c.Close()
			t.Errorf("endpoint %q: New accepted it", endpoint)
			continue
		}
		if !strings.Contains(err.Error(), "invalid option Endpoint:") {
			t.Errorf("endpoint %q: error %q does not name the option", endpoint, err)
		}
		if msg := err.Error(); strings.Contains(msg, "s3") || strings.Contains(msg, "cret") || strings.Contains(msg, "%zz") {
			t.Errorf("endpoint %q: error %q shows the password", endpoint, err)
		}
	}
}

func TestZeroMeansZero(t *testing.T) {
	// Zero is valid where it has a meaning.
	c, err := New(testWriteKey, WithRetryCount(0), WithBackoffBase(0), WithMaxTotalBackoffDuration(0), WithMaxRateLimitDuration(0),
		WithCloseTimeout(0))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
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
	if err != nil {
		t.Fatalf("OptionsFromEnv: %v", err)
	}
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	p := c.policy
	if c.endpoint != "http://127.0.0.1:8080" || c.flushAt != 100 || c.flushInterval != 500*time.Millisecond ||
		p.RetryCount != 0 || p.MaxTotalBackoffDuration != time.Minute ||
		p.MaxRateLimitDuration != 120250*time.Millisecond || p.RateLimitRetryAfterCap != 30*time.Second ||
		c.requestTimeout != 2500*time.Millisecond || c.gzip || c.maxConcurrentRequests != 2 ||
		c.maxQueueSize != 500 || c.maxQueueBytes != 1_000_000 {
		t.Fatalf("config from env = %+v", c)
	}
}

func TestOptionsFromEnvUnsetLeavesDefaults(t *testing.T) {
	for _, k := range []string{"ANALYTICS_ENDPOINT", "ANALYTICS_FLUSH_AT", "ANALYTICS_GZIP"} {
		t.Setenv(k, "")
	}
	opts, err := optionsFromLookup(func(string) (string, bool) { return "", false })
	if err != nil || len(opts) != 0 {
		t.Fatalf("no variables: %d options, %v", len(opts), err)
	}
	opts, err = OptionsFromEnv()
	if err != nil || len(opts) != 0 {
		t.Fatalf("empty variables: %d options, %v", len(opts), err)
	}
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
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s=%q: error %v, want one naming the variable", name, value, err)
		}
	}
}

func TestOutOfRangeEnvValueIsCaughtByNew(t *testing.T) {
	t.Setenv("ANALYTICS_RETRY_COUNT", "-3")
	opts, err := OptionsFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(testWriteKey, opts...); err == nil || !strings.Contains(err.Error(), "RetryCount") {
		t.Fatalf("New with ANALYTICS_RETRY_COUNT=-3: %v", err)
	}
}

func TestSecondsToDuration(t *testing.T) {
	for _, tt := range []struct {
		s    float64
		want time.Duration
		ok   bool
	}{
		{0, 0, true}, {1, time.Second, true}, {0.001, time.Millisecond, true}, {43200, 12 * time.Hour, true},
		{math.NaN(), 0, false}, {math.Inf(1), 0, false}, {1e12, 0, false},
	} {
		got, err := SecondsToDuration(tt.s)
		if (err == nil) != tt.ok || tt.ok && got != tt.want {
			t.Errorf("SecondsToDuration(%v) = %v, %v", tt.s, got, err)
		}
	}
}
