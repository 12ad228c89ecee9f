package analytics

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/dualpath/analytics-go/internal/decimal"
)

// OptionsFromEnv reads settings from the environment, with the names and
// units shared by the Segment SDKs, so a deployment tunes the SDK without a
// rebuild:
//
//	ANALYTICS_WRITE_KEY                   read by NewFromEnv only, never shown
//	ANALYTICS_ENDPOINT                    URL
//	ANALYTICS_FLUSH_AT                    events
//	ANALYTICS_FLUSH_INTERVAL              seconds
//	ANALYTICS_RETRY_COUNT                 retries
//	ANALYTICS_BACKOFF_BASE                seconds
//	ANALYTICS_BACKOFF_CAP                 seconds
//	ANALYTICS_MAX_TOTAL_BACKOFF_DURATION  seconds
//	ANALYTICS_MAX_RATE_LIMIT_DURATION     seconds
//	ANALYTICS_RATE_LIMIT_RETRY_AFTER_CAP  seconds
//	ANALYTICS_REQUEST_TIMEOUT             seconds
//	ANALYTICS_CLOSE_TIMEOUT               seconds (0: as long as the budgets allow)
//	ANALYTICS_GZIP                        true or false
//	ANALYTICS_MAX_CONCURRENT_REQUESTS     requests
//	ANALYTICS_MAX_QUEUE_SIZE              events
//	ANALYTICS_MAX_QUEUE_BYTES             bytes
//	ANALYTICS_ADAPTIVE_SEND_RATE          true or false
//	ANALYTICS_PROBE_INTERVAL              seconds
//	ANALYTICS_SPOOL_DIR                   directory (WithSpool; unset: no spool)
//	ANALYTICS_SPOOL_MAX_BYTES             bytes
//	ANALYTICS_SPOOL_SYNC                  seconds (0: fsync before Enqueue returns)
//	ANALYTICS_OAUTH_CLIENT_ID             client id (WithOAuth: OAuth.ClientID; any of the four turns it on)
//	ANALYTICS_OAUTH_KEY_ID                key id (OAuth.KeyID)
//	ANALYTICS_OAUTH_PRIVATE_KEY_FILE      file of the private key in PEM (OAuth.PrivateKeyFile)
//	ANALYTICS_OAUTH_AUTH_SERVER           URL (OAuth.AuthServer; unset: OAuthAuthServer)
//
// Seconds are a decimal number, read exactly: 5, 0.5 or 1e-3 (a digit
// before any point, an optional sign, no unit). Counts are whole numbers.
// Spaces around a value are ignored, and an unset or empty variable leaves
// the default.
//
// Any other variable whose name starts with ANALYTICS_ (in any case) is an
// error, so that a misspelt name cannot pass silently; the error suggests
// the name meant when one is close. So is a malformed value, or a number
// out of range for its type (a count beyond an int, seconds beyond a
// time.Duration, a fraction of a nanosecond). The error lists every
// problem at once, one line each, naming the variable and the form it
// expects; it never shows the value of ANALYTICS_WRITE_KEY, nor of a
// variable it does not know. A well-formed value beyond the option's
// bound is caught by New, naming the option.
//
// Pass the result to New before or after options of your own: later
// options win. NewFromEnv also takes the write key from the environment.
func OptionsFromEnv() ([]Option, error) {
	return optionsFromEnviron(os.Environ())
}

func optionsFromEnviron(environ []string) ([]Option, error) {
	opts, _, problems := readEnv(environ)
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return opts, nil
}

// NewFromEnv returns a client configured by the environment alone: the
// write key from ANALYTICS_WRITE_KEY, every other setting as OptionsFromEnv
// reads it. The environment's options are applied after opts, so a
// variable that is set overrides the program's own setting: the code gives
// the defaults, the deployment tunes them. (For a setting the environment
// must not change, call New with OptionsFromEnv's options before your
// own.)
//
// An unset or empty ANALYTICS_WRITE_KEY is an error naming the variable,
// reported together with every problem OptionsFromEnv finds; the key never
// appears in an error. Then New validates the result, naming the option at
// fault.
func NewFromEnv(opts ...Option) (*Client, error) {
	return newFromEnviron(os.Environ(), opts)
}

func newFromEnviron(environ []string, opts []Option) (*Client, error) {
	envOpts, writeKey, problems := readEnv(environ)
	if writeKey == "" {
		missing := envProblem(envWriteKey, "empty or unset; set it to the write key of your source")
		problems = append([]error{missing}, problems...)
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return New(writeKey, append(slices.Clip(opts), envOpts...)...)
}

const (
	envPrefix   = "ANALYTICS_"
	envWriteKey = "ANALYTICS_WRITE_KEY"
)

// envNames are the variables of OptionsFromEnv, in the order of its doc
// and of its errors: the write key, which is never an Option (an Option
// could be printed) and is read by NewFromEnv alone, then those of the
// options table. An option gets a variable by its env in the table;
// optiontable_test.go holds OptionsFromEnv's doc to it.
var envNames = func() []string {
	names := []string{envWriteKey}
	for _, o := range optionTable {
		if o.env != "" {
			names = append(names, o.env)
		}
	}
	return names
}()

// readEnv reads environ, in the form of os.Environ: the options of the
// variables set, the write key, and every problem found. When a name
// appears twice the first value wins, as with os.Getenv.
func readEnv(environ []string) (opts []Option, writeKey string, problems []error) {
	values := map[string]string{}
	var unknown []string
	for _, kv := range environ {
		name, value, _ := strings.Cut(kv, "=")
		// Not ours, or set already: the first value wins.
		if _, seen := values[name]; seen || !strings.HasPrefix(strings.ToUpper(name), envPrefix) {
			continue
		}
		values[name] = strings.TrimSpace(value)
		if !slices.Contains(envNames, name) {
			unknown = append(unknown, name)
		}
	}
	writeKey = values[envWriteKey]
	for i := range optionTable {
		o := &optionTable[i]
		if o.env == "" || values[o.env] == "" {
			continue
		}
		opt, err := o.fromEnv(values[o.env])
		if err != nil {
			problems = append(problems, envProblem(o.env, err.Error()))
			continue
		}
		opts = append(opts, opt)
	}
	slices.Sort(unknown)
	for _, name := range unknown {
		reason := "unknown name (the doc of analytics.OptionsFromEnv lists the names it reads)"
		if known := suggestEnvName(name); known != "" {
			reason = "unknown name; did you mean " + known + "?"
		}
		problems = append(problems, envProblem(name, reason))
	}
	return opts, writeKey, problems
}

func envProblem(name, reason string) error {
	return fmt.Errorf("analytics: environment variable %s: %s", name, reason)
}

// envCount reads a whole number of unit that a signed integer of bits
// bits holds (its field's type: an int is 32 bits on a 32-bit platform,
// SpoolMaxBytes' int64 64 bits everywhere); example is a well-formed value
// to show in the error.
func envCount(v string, bits int, unit, example string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, bits)
	if errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("%s is out of range", quoteValue(v))
	}
	if err != nil {
		return 0, fmt.Errorf("%s is not a whole number of %s; write e.g. %s", quoteValue(v), unit, example)
	}
	return n, nil
}

// envSeconds reads a number of seconds exactly: 0.1 is 100ms, not the
// float64 nearest to it. A leading "+" is allowed, as for counts.
func envSeconds(v string) (time.Duration, error) {
	text := v
	if rest, ok := strings.CutPrefix(v, "+"); ok && rest != "" && rest[0] >= '0' && rest[0] <= '9' {
		text = rest
	}
	d, ok := decimal.Parse(text)
	if !ok {
		return 0, fmt.Errorf("%s is not a number of seconds; write 5 or 0.5", quoteValue(v))
	}
	ns, err := d.Scaled(9)
	switch {
	case errors.Is(err, decimal.ErrFraction):
		return 0, fmt.Errorf("%s seconds is finer than a nanosecond; write at most 9 digits after the point", quoteValue(v))
	case err != nil:
		return 0, fmt.Errorf("%s seconds is out of range (a duration is at most about 292 years)", quoteValue(v))
	}
	return time.Duration(ns), nil
}

func envBool(v string) (bool, error) {
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s is not a boolean; write true or false", quoteValue(v))
	}
	return on, nil
}

// quoteValue quotes a malformed value for an error, cut to 40 bytes.
func quoteValue(v string) string {
	const most = 40
	if len(v) <= most {
		return strconv.Quote(v)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(v[cut]) {
		cut--
	}
	return strconv.Quote(v[:cut]) + "…"
}
