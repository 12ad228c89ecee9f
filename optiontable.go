package analytics

import (
	"cmp"
	"fmt"
	"math"
	"reflect"
	"time"

	"github.com/dualpath/analytics-go/internal/defaults"
	"github.com/dualpath/analytics-go/retry"
)

// An optionSpec is one row of the options table: an option of New, its
// environment variable, its default, its bounds and its unit, each said
// once (docs/SPEC.md §7). Its With* function's doc comment is its doc
// line. The table gives defaultConfig its values, validate its bounds and
// OptionsFromEnv its variables; optiontable_test.go holds the With* doc
// comments, the OptionsFromEnv doc and the option and environment tables
// of README.md and docs/*.md to it.
type optionSpec struct {
	name string // With + name sets it; OptionError.Option names it
	env  string // its environment variable, "" for none
	// unit is what a count counts ("events") or what a string is ("URL");
	// for any other option, its Go type as the docs write it.
	unit string
	// field is the field of the config the option sets: an *int, *int64,
	// *time.Duration, *bool or *string (the kinds the environment and the
	// bounds know), or a pointer of another type.
	field func(*config) any
	def   any // the default, of the field's type; nil: the zero value
	// min and max bound a count or a duration; max 0: not bounded.
	min, max int64
	minName  string // the name of min in an error, when it has one
	// maxWhy says, in an error, where max comes from when it is a limit
	// of the tracking API rather than a bound on what is useful.
	maxWhy  string
	example string // a count's value for its environment error; "": the default
	// part is the field of the option's struct that the row sets, for an
	// option of several parts with a variable each (OAuth): the option is
	// name.part in the docs' environment tables.
	part string
}

// The upper bounds of the numeric options, with MaxBatchEvents, FlushAt's,
// and defaults.MaxWait, which bounds a single interval, wait or timeout.
// FlushAt's is a limit of the tracking API: past it, the API answers 200
// but rejects the events; every other is far above any useful setting.
// New refuses a value beyond one, which is surely a mistake (a unit slip,
// a misread environment variable), and with every option bounded no
// arithmetic on options can overflow: the largest product is
// batchesInFlight × limitMaxConcurrentRequests, and every duration is so
// far below the ~292 years a time.Duration holds that adding a few, or one
// to a time, cannot overflow either.
const (
	limitMaxQueueSize = 10_000_000
	// limitMaxQueueBytes is 64 GiB, or on a 32-bit platform as much as
	// leaves room in an int to add one more message to a full queue.
	limitMaxQueueBytes         = min(64<<30, math.MaxInt-MaxMessageBytes)
	limitMaxConcurrentRequests = 1_000
	// limitRetryCount is high enough that a budget, not the count, ends
	// even a long backoff path: at the default 60 s cap, 1,000 retries
	// wait at least 8 h.
	limitRetryCount = 1_000
	// limitBudget bounds a retry path's total duration.
	limitBudget = 30 * 24 * time.Hour
	// limitMinSpoolBytes leaves room for 16 segments of 64 KiB (the
	// spool's smallest), each of which holds two of the largest messages;
	// limitMaxSpoolBytes is 1 TiB.
	limitMinSpoolBytes = 1 << 20
	limitMaxSpoolBytes = 1 << 40
)

// positive is the least positive duration, the min of a duration that
// must be positive.
const positive = int64(time.Nanosecond)

// defaultPolicy is the retry package's defaults, which the table's retry
// options take as theirs.
var defaultPolicy = retry.DefaultPolicy()

// optionTable is every option of New, those with an environment variable
// first, in the order of OptionsFromEnv's doc and errors. validate checks
// the bounds in this order.
var optionTable = []optionSpec{
	{name: "Endpoint", env: "ANALYTICS_ENDPOINT", unit: "URL",
		field: func(c *config) any { return &c.endpoint }, def: DefaultEndpoint},
	{name: "FlushAt", env: "ANALYTICS_FLUSH_AT", unit: "events",
		field: func(c *config) any { return &c.flushAt }, def: defaults.FlushAt,
		min: 1, max: MaxBatchEvents, example: "100",
		maxWhy: "Segment's documented limit of events per batch request: past it, the API answers 200 but rejects the events"},
	{name: "FlushInterval", env: "ANALYTICS_FLUSH_INTERVAL", unit: "time.Duration",
		field: func(c *config) any { return &c.flushInterval }, def: defaults.FlushInterval,
		min: positive, max: int64(defaults.MaxWait)},
	{name: "RetryCount", env: "ANALYTICS_RETRY_COUNT", unit: "retries",
		field: func(c *config) any { return &c.upload.Policy.RetryCount }, def: defaultPolicy.RetryCount,
		min: 0, max: limitRetryCount, example: "3"},
	{name: "BackoffBase", env: "ANALYTICS_BACKOFF_BASE", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.Policy.BackoffBase }, def: defaultPolicy.BackoffBase,
		min: 0, max: int64(defaults.MaxWait)},
	{name: "BackoffCap", env: "ANALYTICS_BACKOFF_CAP", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.Policy.BackoffCap }, def: defaultPolicy.BackoffCap,
		min: positive, max: int64(defaults.MaxWait)},
	{name: "MaxTotalBackoffDuration", env: "ANALYTICS_MAX_TOTAL_BACKOFF_DURATION", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.Policy.MaxTotalBackoffDuration }, def: defaultPolicy.MaxTotalBackoffDuration,
		min: 0, max: int64(limitBudget)},
	{name: "MaxRateLimitDuration", env: "ANALYTICS_MAX_RATE_LIMIT_DURATION", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.Policy.MaxRateLimitDuration }, def: defaultPolicy.MaxRateLimitDuration,
		min: 0, max: int64(limitBudget)},
	{name: "RateLimitRetryAfterCap", env: "ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.Policy.RateLimitRetryAfterCap }, def: defaultPolicy.RateLimitRetryAfterCap,
		min: positive, max: int64(defaults.MaxWait)},
	{name: "RequestTimeout", env: "ANALYTICS_REQUEST_TIMEOUT", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.RequestTimeout }, def: 10 * time.Second,
		min: positive, max: int64(defaults.MaxWait)},
	{name: "CloseTimeout", env: "ANALYTICS_CLOSE_TIMEOUT", unit: "time.Duration",
		field: func(c *config) any { return &c.closeTimeout }, def: DefaultCloseTimeout,
		min: 0, max: int64(defaults.MaxWait)},
	{name: "Gzip", env: "ANALYTICS_GZIP", unit: "bool",
		field: func(c *config) any { return &c.upload.Gzip }, def: true},
	{name: "MaxConcurrentRequests", env: "ANALYTICS_MAX_CONCURRENT_REQUESTS", unit: "requests",
		field: func(c *config) any { return &c.upload.MaxConcurrentRequests }, def: 8,
		min: 1, max: limitMaxConcurrentRequests},
	{name: "MaxQueueSize", env: "ANALYTICS_MAX_QUEUE_SIZE", unit: "events",
		field: func(c *config) any { return &c.maxQueueSize }, def: 10_000,
		min: 1, max: limitMaxQueueSize},
	{name: "MaxQueueBytes", env: "ANALYTICS_MAX_QUEUE_BYTES", unit: "bytes",
		field: func(c *config) any { return &c.maxQueueBytes }, def: 64 << 20,
		min: MaxMessageBytes, minName: "MaxMessageBytes", max: limitMaxQueueBytes},
	{name: "AdaptiveSendRate", env: "ANALYTICS_ADAPTIVE_SEND_RATE", unit: "bool",
		field: func(c *config) any { return &c.upload.AdaptiveSendRate }, def: true},
	{name: "ProbeInterval", env: "ANALYTICS_PROBE_INTERVAL", unit: "time.Duration",
		field: func(c *config) any { return &c.upload.Policy.ProbeInterval }, def: defaultPolicy.ProbeInterval,
		min: positive, max: int64(defaults.MaxWait)},
	{name: "Spool", env: "ANALYTICS_SPOOL_DIR", unit: "directory",
		field: func(c *config) any { return &c.spoolDir }},
	{name: "SpoolMaxBytes", env: "ANALYTICS_SPOOL_MAX_BYTES", unit: "bytes",
		field: func(c *config) any { return &c.spool.MaxBytes }, def: int64(DefaultSpoolMaxBytes),
		min: limitMinSpoolBytes, max: limitMaxSpoolBytes},
	{name: "SpoolSync", env: "ANALYTICS_SPOOL_SYNC", unit: "time.Duration",
		field: func(c *config) any { return &c.spool.Sync }, def: DefaultSpoolSync,
		min: 0, max: int64(defaults.MaxWait)},
	{name: "OAuth", part: "ClientID", env: "ANALYTICS_OAUTH_CLIENT_ID", unit: "client id",
		field: func(c *config) any { return &c.oauth.ClientID }},
	{name: "OAuth", part: "KeyID", env: "ANALYTICS_OAUTH_KEY_ID", unit: "key id",
		field: func(c *config) any { return &c.oauth.KeyID }},
	{name: "OAuth", part: "PrivateKeyFile", env: "ANALYTICS_OAUTH_PRIVATE_KEY_FILE", unit: "file",
		field: func(c *config) any { return &c.oauth.PrivateKeyFile }},
	{name: "OAuth", part: "AuthServer", env: "ANALYTICS_OAUTH_AUTH_SERVER", unit: "URL",
		field: func(c *config) any { return &c.oauth.AuthServer }},

	{name: "V3Wire", unit: "bool", field: func(c *config) any { return &c.v3Wire }},
	{name: "BackoffFunc", unit: "func(n int) time.Duration", field: func(c *config) any { return &c.upload.Policy.Backoff }},
	{name: "HTTPClient", unit: "*http.Client", field: func(c *config) any { return &c.upload.Client }},
	{name: "Logger", unit: "*slog.Logger", field: func(c *config) any { return &c.logger }},
	{name: "Callback", unit: "Callback", field: func(c *config) any { return &c.callback }},
	{name: "CloseRetries", unit: "bool", field: func(c *config) any { return &c.closeRetries }, def: true},
	{name: "BlockingCallbacks", unit: "bool", field: func(c *config) any { return &c.blockingCallbacks }},
}

// defaultConfig is the configuration New starts from: every option at its
// default.
func defaultConfig() config {
	var c config
	for i := range optionTable {
		if o := &optionTable[i]; o.def != nil {
			o.set(&c, o.def)
		}
	}
	return c
}

// value is the option's field in c.
func (o *optionSpec) value(c *config) reflect.Value { return reflect.ValueOf(o.field(c)).Elem() }

// set stores v in the option's field of c, converted to the field's type:
// a count is read from the environment as an int64 in the range of its
// field's type (an int, or SpoolMaxBytes' int64).
func (o *optionSpec) set(c *config, v any) {
	f := o.value(c)
	f.Set(reflect.ValueOf(v).Convert(f.Type()))
}

// check returns the OptionError of a value beyond the option's bounds.
func (o *optionSpec) check(c *config) error {
	if o.max == 0 {
		return nil
	}
	f := o.value(c) // a count or a duration
	n, duration := f.Int(), f.Type() == reflect.TypeFor[time.Duration]()
	// show writes n as a value of the field's type: a duration as
	// time.Duration's String does, a count in decimal.
	show := func(n int64) string { return fmt.Sprint(reflect.ValueOf(n).Convert(f.Type()).Interface()) }
	switch {
	case n < o.min && o.min == 0:
		return invalidOption(o.name, "must not be negative, got %s", show(n))
	case n < o.min && duration && o.min == positive:
		return invalidOption(o.name, "must be positive, got %s", show(n))
	case n < o.min && o.minName != "":
		return invalidOption(o.name, "must be at least %s (%s), got %s", show(o.min), o.minName, show(n))
	case n < o.min:
		return invalidOption(o.name, "must be at least %s, got %s", show(o.min), show(n))
	case n > o.max && o.maxWhy != "":
		return invalidOption(o.name, "must be at most %s (%s), got %s", show(o.max), o.maxWhy, show(n))
	case n > o.max:
		return invalidOption(o.name, "must be at most %s, got %s", show(o.max), show(n))
	}
	return nil
}

// fromEnv turns the non-empty value of the option's environment variable
// into an Option that sets the field as the With* function does.
func (o *optionSpec) fromEnv(value string) (Option, error) {
	var v any
	var err error
	switch o.field(new(config)).(type) {
	case *string:
		v = value
	case *bool:
		v, err = envBool(value)
	case *time.Duration:
		v, err = envSeconds(value)
	default: // a count
		v, err = envCount(value, o.value(new(config)).Type().Bits(), o.unit, cmp.Or(o.example, fmt.Sprint(o.def)))
	}
	if err != nil {
		return nil, err
	}
	return func(c *config) { o.set(c, v) }, nil
}
