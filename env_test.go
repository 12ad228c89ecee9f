package analytics

import (
	"encoding/base64"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// optionsFromLookup reads the known variables through lookup, as
// OptionsFromEnv reads the environment: for tests that give a variable or
// two as a function.
func optionsFromLookup(lookup func(string) (string, bool)) ([]Option, error) {
	var environ []string
	for _, name := range envNames {
		if value, ok := lookup(name); ok {
			environ = append(environ, name+"="+value)
		}
	}
	return optionsFromEnviron(environ)
}

// configFromEnv applies what environ sets to the default config.
func configFromEnv(t *testing.T, environ ...string) config {
	t.Helper()
	opts, err := optionsFromEnviron(environ)
	require.NoError(t, err, "environment %q", environ)
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	return c
}

// envErrorLines returns the lines of the error environ gives, one per
// problem.
func envErrorLines(t *testing.T, environ ...string) []string {
	t.Helper()
	_, err := optionsFromEnviron(environ)
	require.Error(t, err, "environment %q", environ)
	return strings.Split(err.Error(), "\n")
}

// clearAnalyticsEnv unsets every ANALYTICS_ variable for the test, so
// that the tests of the real environment see only what they set.
func clearAnalyticsEnv(t *testing.T) {
	t.Helper()
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(strings.ToUpper(name), envPrefix) {
			t.Setenv(name, "") // restores the value after the test
			require.NoError(t, os.Unsetenv(name))
		}
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
	require.NoError(t, err, "OptionsFromEnv")
	c := defaultConfig()
	for _, o := range opts {
		o(&c)
	}
	p := c.upload.Policy
	assert.Equal(t, "http://127.0.0.1:8080", c.endpoint, "ANALYTICS_ENDPOINT")
	assert.Equal(t, 100, c.flushAt, "ANALYTICS_FLUSH_AT")
	assert.Equal(t, 500*time.Millisecond, c.flushInterval, "ANALYTICS_FLUSH_INTERVAL")
	assert.Zero(t, p.RetryCount, "ANALYTICS_RETRY_COUNT")
	assert.Equal(t, time.Minute, p.MaxTotalBackoffDuration, "ANALYTICS_MAX_TOTAL_BACKOFF_DURATION")
	assert.Equal(t, 120250*time.Millisecond, p.MaxRateLimitDuration, "ANALYTICS_MAX_RATE_LIMIT_DURATION")
	assert.Equal(t, 30*time.Second, p.RateLimitRetryAfterCap, "ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP")
	assert.Equal(t, 2500*time.Millisecond, c.upload.RequestTimeout, "ANALYTICS_REQUEST_TIMEOUT")
	assert.False(t, c.upload.Gzip, "ANALYTICS_GZIP")
	assert.Equal(t, 2, c.upload.MaxConcurrentRequests, "ANALYTICS_MAX_CONCURRENT_REQUESTS")
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

func TestEnvEveryVariable(t *testing.T) {
	tests := []struct {
		name, value string
		got         func(config) any
		want        any
	}{
		{"ANALYTICS_ENDPOINT", "http://127.0.0.1:8080", func(c config) any { return c.endpoint }, "http://127.0.0.1:8080"},
		{"ANALYTICS_FLUSH_AT", "100", func(c config) any { return c.flushAt }, 100},
		{"ANALYTICS_FLUSH_INTERVAL", "0.5", func(c config) any { return c.flushInterval }, 500 * time.Millisecond},
		{"ANALYTICS_RETRY_COUNT", "0", func(c config) any { return c.upload.Policy.RetryCount }, 0},
		{"ANALYTICS_BACKOFF_BASE", "0.25", func(c config) any { return c.upload.Policy.BackoffBase }, 250 * time.Millisecond},
		{"ANALYTICS_BACKOFF_CAP", "30", func(c config) any { return c.upload.Policy.BackoffCap }, 30 * time.Second},
		{"ANALYTICS_MAX_TOTAL_BACKOFF_DURATION", "60", func(c config) any { return c.upload.Policy.MaxTotalBackoffDuration }, time.Minute},
		{"ANALYTICS_MAX_RATE_LIMIT_DURATION", "120.25", func(c config) any { return c.upload.Policy.MaxRateLimitDuration }, 120250 * time.Millisecond},
		{"ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP", "30", func(c config) any { return c.upload.Policy.RateLimitRetryAfterCap }, 30 * time.Second},
		{"ANALYTICS_REQUEST_TIMEOUT", "2.5", func(c config) any { return c.upload.RequestTimeout }, 2500 * time.Millisecond},
		{"ANALYTICS_CLOSE_TIMEOUT", "0", func(c config) any { return c.closeTimeout }, time.Duration(0)},
		{"ANALYTICS_GZIP", "false", func(c config) any { return c.upload.Gzip }, false},
		{"ANALYTICS_MAX_CONCURRENT_REQUESTS", "2", func(c config) any { return c.upload.MaxConcurrentRequests }, 2},
		{"ANALYTICS_MAX_QUEUE_SIZE", "500", func(c config) any { return c.maxQueueSize }, 500},
		{"ANALYTICS_MAX_QUEUE_BYTES", "1000000", func(c config) any { return c.maxQueueBytes }, 1_000_000},
		{"ANALYTICS_ADAPTIVE_SEND_RATE", "false", func(c config) any { return c.upload.AdaptiveSendRate }, false},
		{"ANALYTICS_PROBE_INTERVAL", "1.5", func(c config) any { return c.upload.Policy.ProbeInterval }, 1500 * time.Millisecond},
		{"ANALYTICS_SPOOL_DIR", "/var/spool/analytics", func(c config) any { return c.spoolDir }, "/var/spool/analytics"},
		{"ANALYTICS_SPOOL_MAX_BYTES", "268435456", func(c config) any { return c.spool.MaxBytes }, int64(256 << 20)},
		// Past an int's range on a 32-bit platform: read as the field's
		// int64, not as an int (GOARCH=386 go test -run TestEnvEveryVariable).
		{"ANALYTICS_SPOOL_MAX_BYTES", "4294967296", func(c config) any { return c.spool.MaxBytes }, int64(4 << 30)},
		{"ANALYTICS_SPOOL_SYNC", "0", func(c config) any { return c.spool.Sync }, time.Duration(0)},
		{"ANALYTICS_OAUTH_CLIENT_ID", "app", func(c config) any { return c.oauth.ClientID }, "app"},
		{"ANALYTICS_OAUTH_KEY_ID", "k1", func(c config) any { return c.oauth.KeyID }, "k1"},
		{"ANALYTICS_OAUTH_PRIVATE_KEY_FILE", "/run/secrets/segment.pem", func(c config) any { return c.oauth.PrivateKeyFile }, "/run/secrets/segment.pem"},
		{"ANALYTICS_OAUTH_AUTH_SERVER", OAuthAuthServerEU, func(c config) any { return c.oauth.AuthServer }, OAuthAuthServerEU},
	}
	tested := map[string]bool{envWriteKey: true} // NewFromEnv's tests
	for _, tt := range tests {
		tested[tt.name] = true
		assert.NotEqual(t, tt.want, tt.got(defaultConfig()), "%s: the test value is the default", tt.name)
		c := configFromEnv(t, tt.name+"="+tt.value)
		assert.Equal(t, tt.want, tt.got(c), "%s=%s", tt.name, tt.value)
	}
	for _, name := range envNames {
		assert.True(t, tested[name], "%s has no test", name)
	}
}

func TestEnvSecondsAreExact(t *testing.T) {
	for value, want := range map[string]time.Duration{
		"5":           5 * time.Second,
		"0.5":         500 * time.Millisecond,
		"0.1":         100 * time.Millisecond,
		"1e-3":        time.Millisecond,
		"2.5E1":       25 * time.Second,
		"0.000000001": time.Nanosecond,
		"+5":          5 * time.Second,
		" 7 ":         7 * time.Second,
		"-1":          -time.Second, // New refuses it, naming the option
	} {
		c := configFromEnv(t, "ANALYTICS_REQUEST_TIMEOUT="+value)
		assert.Equal(t, want, c.upload.RequestTimeout, "ANALYTICS_REQUEST_TIMEOUT=%q", value)
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
		assert.ErrorContains(t, err, name, "%s=%q", name, value)
	}
}

// Every malformed value gets a message that shows the expected form.
func TestEnvMessagesShowTheExpectedForm(t *testing.T) {
	tests := []struct{ name, value, want string }{
		{"ANALYTICS_FLUSH_INTERVAL", "5s", `"5s" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_FLUSH_INTERVAL", "500ms", `"500ms" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_BACKOFF_BASE", ".5", `".5" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_BACKOFF_CAP", "5.", `"5." is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_REQUEST_TIMEOUT", "+-5", `"+-5" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_REQUEST_TIMEOUT", "++5", `"++5" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_REQUEST_TIMEOUT", "NaN", `"NaN" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_REQUEST_TIMEOUT", "Inf", `"Inf" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_REQUEST_TIMEOUT", "0x10", `"0x10" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_REQUEST_TIMEOUT", "1_000", `"1_000" is not a number of seconds; write 5 or 0.5`},
		{"ANALYTICS_MAX_RATE_LIMIT_DURATION", "1e-10", `"1e-10" seconds is finer than a nanosecond; write at most 9 digits after the point`},
		{"ANALYTICS_MAX_RATE_LIMIT_DURATION", "1e300", `"1e300" seconds is out of range (a duration is at most about 292 years)`},
		{"ANALYTICS_FLUSH_AT", "ten", `"ten" is not a whole number of events; write e.g. 100`},
		{"ANALYTICS_RETRY_COUNT", "1.5", `"1.5" is not a whole number of retries; write e.g. 3`},
		{"ANALYTICS_MAX_CONCURRENT_REQUESTS", "many", `"many" is not a whole number of requests; write e.g. 8`},
		{"ANALYTICS_MAX_QUEUE_SIZE", "1e4", `"1e4" is not a whole number of events; write e.g. 10000`},
		{"ANALYTICS_MAX_QUEUE_BYTES", "32MiB", `"32MiB" is not a whole number of bytes; write e.g. 67108864`},
		{"ANALYTICS_MAX_QUEUE_BYTES", "-9223372036854775809", `"-9223372036854775809" is out of range`},
		{"ANALYTICS_GZIP", "yes please", `"yes please" is not a boolean; write true or false`},
		{"ANALYTICS_FLUSH_AT", strings.Repeat("9x", 30), `"` + strings.Repeat("9x", 20) + `"… is not a whole number of events; write e.g. 100`},
		{"ANALYTICS_GZIP", "x" + strings.Repeat("é", 30), `"x` + strings.Repeat("é", 19) + `"… is not a boolean; write true or false`},
	}
	for _, tt := range tests {
		lines := envErrorLines(t, tt.name+"="+tt.value)
		assert.Equal(t, []string{"analytics: environment variable " + tt.name + ": " + tt.want}, lines, "%s=%q", tt.name, tt.value)
	}
}

// The value of a variable the SDK does not know may be a secret under a
// misspelt name: it is never shown.
func TestEnvUnknownValueIsNotShown(t *testing.T) {
	_, err := optionsFromEnviron([]string{"ANALYTICS_WRITEKEY=wk_SECRET_typo", "ANALYTICS_KEY=wk_SECRET_other"})
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "SECRET")
}

func TestEnvReportsEveryProblemAtOnce(t *testing.T) {
	lines := envErrorLines(t,
		"PATH=/bin",
		"ANALYTICS_WRITE_KEY=wk_SECRET",
		"ANALYTICS_GZIP=yes",
		"ANALYTICS_FLUSH_INTERVAL=5s",
		"ANALYTICS_FLUSH_AT=100",
		"ANALYTICS_RETRYCOUNT=3",
		"ANALYTICS_FLUSH_AT=ignored, the first wins",
		"ANALYTICS_REQUEST_TIMEOUT=10ms",
		"ANALYTICS_AAA=1",
	)
	// The known variables in the order of the doc, then the unknown by name.
	assert.Equal(t, []string{
		`analytics: environment variable ANALYTICS_FLUSH_INTERVAL: "5s" is not a number of seconds; write 5 or 0.5`,
		`analytics: environment variable ANALYTICS_REQUEST_TIMEOUT: "10ms" is not a number of seconds; write 5 or 0.5`,
		`analytics: environment variable ANALYTICS_GZIP: "yes" is not a boolean; write true or false`,
		`analytics: environment variable ANALYTICS_AAA: unknown name (the doc of analytics.OptionsFromEnv lists the names it reads)`,
		`analytics: environment variable ANALYTICS_RETRYCOUNT: unknown name; did you mean ANALYTICS_RETRY_COUNT?`,
	}, lines)
}

func TestEnvWriteKeyIsKnownButNoOption(t *testing.T) {
	opts, err := optionsFromEnviron([]string{"ANALYTICS_WRITE_KEY=wk_SECRET"})
	require.NoError(t, err)
	assert.Empty(t, opts)
}

func TestEnvUnsetOrEmptyLeavesDefaults(t *testing.T) {
	environ := []string{"HOME=/root", "=C:=C:\\"} // the second as on Windows
	for _, name := range envNames {
		environ = append(environ, name+"=", name+"=ignored, the first wins")
	}
	opts, err := optionsFromEnviron(environ)
	require.NoError(t, err)
	assert.Empty(t, opts)
}

// OptionsFromEnv and NewFromEnv read the process environment.
func TestEnvFromTheProcess(t *testing.T) {
	clearAnalyticsEnv(t)
	t.Setenv("ANALYTICS_FLUSH_AT", "20")
	opts, err := OptionsFromEnv()
	require.NoError(t, err)
	assert.Len(t, opts, 1)

	_, err = NewFromEnv()
	require.Error(t, err, "no write key")
	assert.Equal(t, "analytics: environment variable ANALYTICS_WRITE_KEY: empty or unset; set it to the write key of your source", err.Error())

	t.Setenv("ANALYTICS_WRITE_KEY", testWriteKey)
	c, err := NewFromEnv()
	require.NoError(t, err)
	assert.Equal(t, 20, c.cfg.flushAt)
	require.NoError(t, c.Close())

	t.Setenv("ANALYTICS_FLUSH_INTERVALL", "5")
	_, err = OptionsFromEnv()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did you mean ANALYTICS_FLUSH_INTERVAL?")
	_, err = NewFromEnv()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "did you mean ANALYTICS_FLUSH_INTERVAL?")
}

func TestOutOfRangeEnvValueIsCaughtByNew(t *testing.T) {
	t.Setenv("ANALYTICS_RETRY_COUNT", "-3")
	opts, err := OptionsFromEnv()
	require.NoError(t, err, "OptionsFromEnv")
	_, err = New(testWriteKey, opts...)
	assert.ErrorContains(t, err, "RetryCount", "New with ANALYTICS_RETRY_COUNT=-3")
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

// NewFromEnv sends with the write key of ANALYTICS_WRITE_KEY.
func TestNewFromEnvUsesTheWriteKey(t *testing.T) {
	api := newAPI()
	c, err := newFromEnviron(
		[]string{"ANALYTICS_WRITE_KEY= " + testWriteKey + "\n", "ANALYTICS_ENDPOINT=http://api.test"},
		[]Option{WithHTTPClient(api.Client(CheckRedirect))},
	)
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	require.NoError(t, c.Close())
	reqs := api.Requests()
	require.Len(t, reqs, 1)
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte(testWriteKey+":"))
	assert.Equal(t, want, reqs[0].Header.Get("Authorization"))
}

// The environment's options come after the code's: a variable that is set
// wins, one that is not leaves the code's setting.
func TestNewFromEnvEnvironmentOverridesCode(t *testing.T) {
	c, err := newFromEnviron(
		[]string{"ANALYTICS_WRITE_KEY=" + testWriteKey, "ANALYTICS_FLUSH_AT=20"},
		[]Option{WithFlushAt(10), WithRetryCount(2)},
	)
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	assert.Equal(t, 20, c.cfg.flushAt, "set in both")
	assert.Equal(t, 2, c.cfg.upload.Policy.RetryCount, "set in code only")
}

func TestNewFromEnvMissingWriteKey(t *testing.T) {
	for _, environ := range [][]string{
		nil,
		{"ANALYTICS_WRITE_KEY="},
		{"ANALYTICS_WRITE_KEY=  \t"},
		{"analytics_write_key=" + testWriteKey},
	} {
		_, err := newFromEnviron(environ, nil)
		require.Error(t, err, "environment %q", environ)
		assert.Contains(t, err.Error(), "analytics: environment variable ANALYTICS_WRITE_KEY: empty or unset", "environment %q", environ)
		assert.NotContains(t, err.Error(), testWriteKey, "environment %q", environ)
	}
}

// Every problem is in the one error, the missing write key first; the key
// itself is never in it.
func TestNewFromEnvReportsEveryProblemAtOnce(t *testing.T) {
	_, err := newFromEnviron([]string{"ANALYTICS_FLUSH_AT=ten", "ANALYTICS_GZIPP=true"}, nil)
	require.Error(t, err)
	assert.Equal(t, []string{
		"analytics: environment variable ANALYTICS_WRITE_KEY: empty or unset; set it to the write key of your source",
		`analytics: environment variable ANALYTICS_FLUSH_AT: "ten" is not a whole number of events; write e.g. 100`,
		"analytics: environment variable ANALYTICS_GZIPP: unknown name; did you mean ANALYTICS_GZIP?",
	}, strings.Split(err.Error(), "\n"))

	_, err = newFromEnviron([]string{"ANALYTICS_WRITE_KEY=" + testWriteKey, "ANALYTICS_FLUSH_AT=ten", "ANALYTICS_GZIPP=true"}, nil)
	require.Error(t, err)
	assert.Len(t, strings.Split(err.Error(), "\n"), 2)
	assert.NotContains(t, err.Error(), testWriteKey)
}

// ANALYTICS_FLUSH_AT is bounded as WithFlushAt is, at Segment's 2,500
// events a batch request, and New's error says so.
func TestOptionErrorThroughNewFromEnv(t *testing.T) {
	_, err := newFromEnviron([]string{"ANALYTICS_WRITE_KEY=k", "ANALYTICS_FLUSH_AT=10000"}, nil)
	var oe *OptionError
	require.True(t, errors.As(err, &oe), "%v", err)
	assert.Equal(t, "FlushAt", oe.Option)
	assert.Equal(t, "must be at most 2500 (Segment's documented limit of events per batch request: past it, the API answers 200 but rejects the events), got 10000", oe.Reason)
	c, err := newFromEnviron([]string{"ANALYTICS_WRITE_KEY=k", "ANALYTICS_FLUSH_AT=2500"}, nil)
	require.NoError(t, err, "ANALYTICS_FLUSH_AT at the bound")
	require.NoError(t, c.Close())
}

// A well-formed value beyond the option's bound is New's error, naming the
// option; the write key is not in it.
func TestNewFromEnvValueOutOfBounds(t *testing.T) {
	_, err := newFromEnviron([]string{"ANALYTICS_WRITE_KEY=" + testWriteKey, "ANALYTICS_BACKOFF_CAP=0"}, nil)
	require.Error(t, err)
	assert.Equal(t, "analytics: invalid option BackoffCap: must be positive, got 0s", err.Error())
}
