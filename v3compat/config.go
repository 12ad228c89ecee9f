package analytics

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/defaults"
)

// DefaultEndpoint is where batches go when Config.Endpoint is empty.
const DefaultEndpoint = root.DefaultEndpoint

// DefaultInterval is how often queued messages are sent when
// Config.Interval is 0: the root's WithFlushInterval default, 5 s.
const DefaultInterval = defaults.FlushInterval

// DefaultBatchSize is the most messages a batch holds when Config.BatchSize
// is 0: the root's WithFlushAt default, 250.
const DefaultBatchSize = defaults.FlushAt

// Version is the version of this SDK (the root package's Version), not
// v3's.
const Version = root.Version

// OAuth is the root package's OAuth: an OAuth app's client id, key id and
// private key, and the auth server, for Config.OAuth.
type OAuth = root.OAuth

// Config configures NewWithConfig. Each field's zero value means its
// default, as in v3. See the package doc for what differs from v3.
type Config struct {
	// Endpoint is the base URL of the tracking API; batches are POSTed to
	// Endpoint + "/v1/batch". Default DefaultEndpoint. It must be an
	// absolute http or https URL.
	Endpoint string

	// Interval is how long after the last batch the queued messages are
	// sent even if fewer than BatchSize. Default DefaultInterval; at most
	// 7 days.
	Interval time.Duration

	// Transport sends the requests. Default: the SDK's own, whose pool
	// holds at most 8 connections. It is used through an http.Client with
	// the SDK's redirect rule, and never closed by the client.
	Transport http.RoundTripper

	// Logger receives the client's logs. Default: os.Stderr.
	Logger Logger

	// Callback receives the outcome of every message Enqueue accepted.
	// Default: none.
	Callback Callback

	// BatchSize is how many queued messages make a batch be sent, and the
	// most a batch holds. Default DefaultBatchSize; a larger one than
	// 2,500, the most events Segment's API takes in a batch request, is
	// taken as 2,500. A batch also stays under 500,000 bytes, whatever
	// BatchSize says.
	BatchSize int

	// Verbose logs each message Enqueue queues to Logger.Logf, as v3 did:
	// "buffer (n/BatchSize) <message>", n being the messages queued
	// before it. It also lets the root client's debug records through.
	Verbose bool

	// DefaultContext is merged into the context of every message at
	// Enqueue; each member the message sets wins. It is read by
	// NewWithConfig and not kept: changing it later changes nothing.
	DefaultContext *Context

	// RetryAfter is the wait before each retry of a failed upload, as in
	// v3: it is called with how many times the batch has been retried (0
	// before the first retry) and returns how long to wait. Default: the
	// root client's jittered exponential backoff. It sets the waits of the
	// counted retries only: an answer with a valid Retry-After is retried
	// after what the server asked, without a call. A batch is retried at
	// most 10 times, as v3 called RetryAfter(0) to RetryAfter(9); v3
	// stopped after the 10th attempt, this client after the 11th. With
	// RetryAfter set, the client-wide adaptive send rate is off, so that
	// every batch waits what RetryAfter says and RetryAfter is called once
	// per retry, as in v3.
	RetryAfter func(int) time.Duration

	// Gzip compresses request bodies with gzip. Default false: plain JSON,
	// as v3 sent, which a test double that decodes the body reads.
	Gzip bool

	// CloseTimeout makes Close wait for retries, up to this long: the
	// root's WithCloseTimeout. 0, the default, closes as v3 did: each
	// queued batch gets one last attempt, retries stop, what fails is
	// reported to Callback.Failure at once, and Close returns (at once
	// against a refused port, within the request timeout of 10 s against
	// an API that does not answer). Waiting delivers what one more retry
	// would (the API briefly down), at the cost of an exit delayed by as
	// much, when the API is out of reach. This field is not v3's.
	CloseTimeout time.Duration

	// OAuth turns OAuth 2.0 on, for a source whose workspace requires it:
	// the root's WithOAuth (docs/oauth.md). The zero value, the default,
	// leaves it off: uploads carry the write key. This field is not v3's.
	OAuth OAuth

	// options are appended to those Config makes, for this package's
	// tests. The field is unexported, as v3's unexported fields were, so
	// code outside the package writes Config with field names.
	options []root.Option
}

// batchSize is the batch size in effect: BatchSize, DefaultBatchSize for
// 0, at most maxBatchSize.
func (c Config) batchSize() int { return min(cmp(c.BatchSize, DefaultBatchSize), maxBatchSize) }

// rootOptions are the root client's options for c, and the logger they
// log to.
func (c Config) rootOptions() ([]root.Option, Logger) {
	logger := c.Logger
	if logger == nil {
		logger = defaultLogger()
	}
	opts := []root.Option{
		root.WithFlushInterval(min(cmp(c.Interval, DefaultInterval), maxInterval)),
		root.WithFlushAt(c.batchSize()),
		root.WithLogger(slog.New(&logHandler{logger: logger, verbose: c.Verbose})),
		root.WithGzip(c.Gzip),
		root.WithV3Wire(true),
		root.WithOAuth(c.OAuth),
	}
	if c.RetryAfter != nil {
		// v3's RetryAfter(i) is the wait after i retries: the root's retry
		// n is the n-th, so it waits RetryAfter(n-1).
		retryAfter := c.RetryAfter
		opts = append(opts, root.WithAdaptiveSendRate(false),
			root.WithBackoffFunc(func(n int) time.Duration { return retryAfter(n - 1) }))
	}
	if c.Endpoint != "" {
		opts = append(opts, root.WithEndpoint(c.Endpoint))
	}
	if c.Transport != nil {
		opts = append(opts, root.WithHTTPClient(&http.Client{Transport: c.Transport, CheckRedirect: root.CheckRedirect}))
	}
	if c.Callback != nil {
		opts = append(opts, root.WithCallback(callback{c.Callback}))
	}
	opts = append(opts, v3Lifecycle(c)...)
	return append(opts, c.options...), logger
}

// cmp returns v, or def when v is zero.
func cmp[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// configError converts an error of the root's New to a ConfigError naming
// the Config field at fault. NewWithConfig handles an empty write key and
// a refused Endpoint itself: neither comes here.
func (c Config) configError(err error) error {
	var oe *root.OptionError
	if !errors.As(err, &oe) {
		return err
	}
	ce := ConfigError{Reason: oe.Reason, Field: oe.Option}
	switch oe.Option {
	case "FlushInterval":
		ce.Field, ce.Value = "Interval", c.Interval
	case "FlushAt":
		ce.Field, ce.Value = "BatchSize", c.BatchSize
	case "OAuth":
		ce.Value = c.OAuth // its GoString shows no key
	}
	return ce
}

// callback passes the root client's outcomes to a v3 Callback.
type callback struct{ cb Callback }

func (c callback) Success(msg root.Message)            { runCallback(c.cb, v3Message(msg), true, nil, nil) }
func (c callback) Failure(msg root.Message, err error) { uploadFailure(c.cb, v3Message(msg), err) }
