package analytics

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/internal/defaults"
	"github.com/dualpath/analytics-go/spool"
)

// DefaultEndpoint is where batches go unless WithEndpoint says otherwise.
const DefaultEndpoint = "https://api.segment.io"

// MaxMessageBytes is the largest encoded message Enqueue accepts.
const MaxMessageBytes = 32_000

// MaxBatchBytes is the largest batch body the SDK sends, 500,000 bytes,
// envelope included, before compression: batches are cut from the queue
// to fit it.
const MaxBatchBytes = defaults.MaxBatchBytes

// MaxBatchEvents is the most events a batch holds, 2,500, and the upper
// bound of WithFlushAt: Segment's HTTP API takes at most 2,500 events in
// a batch request, and past them answers 200 but rejects the events
// (segment-docs, HTTP API source, "Common reasons events are not
// accepted"). Small events fit 500,000 bytes well past it.
const MaxBatchEvents = defaults.MaxBatchEvents

// An Option configures a Client. Options are applied in order by New, which
// then validates the result and names the option at fault.
type Option func(*config)

type config struct {
	endpoint      string
	flushAt       int
	flushInterval time.Duration
	maxQueueSize  int
	maxQueueBytes int
	// upload holds the uploader's settings that options set: Gzip,
	// RequestTimeout, MaxConcurrentRequests, Policy, AdaptiveSendRate and
	// Client (WithHTTPClient; nil: the SDK's own). New fills in the rest.
	upload            consumer.Config
	v3Wire            bool
	httpClientSet     bool
	logger            *slog.Logger
	callback          Callback
	closeTimeout      time.Duration
	closeRetries      bool
	blockingCallbacks bool
	spoolDir          string // "" when the spool is off
	// spool holds the spool's settings that options set: MaxBytes
	// (WithSpoolMaxBytes), Sync (WithSpoolSync) and FS (nil: the operating
	// system's; tests inject faults). New adds the logger.
	spool spool.Options
	oauth OAuth // the zero OAuth: off
}

// DefaultCloseTimeout bounds Close unless WithCloseTimeout says otherwise:
// 30 s, the grace period a container gets by default (Kubernetes, ECS,
// Docker's stop), so that a deferred Close returns before the process is
// killed.
const DefaultCloseTimeout = 30 * time.Second

// WithEndpoint sets the base URL of the tracking API (default
// https://api.segment.io); batches are POSTed to endpoint + "/v1/batch". It
// must be an absolute http or https URL, without a query or fragment. An
// endpoint whose path already ends in /v1/batch (a full URL copied from
// the API's documentation) is taken as its base: the SDK posts to it as
// given, never to .../v1/batch/v1/batch.
func WithEndpoint(endpoint string) Option { return func(c *config) { c.endpoint = endpoint } }

// WithFlushAt sets how many queued events cut a batch, and the most a batch
// holds (default 250). At least 1, at most 2,500 (MaxBatchEvents: the most
// Segment's batch API takes in one request) and at most MaxQueueSize.
func WithFlushAt(events int) Option { return func(c *config) { c.flushAt = events } }

// WithFlushInterval sets how long after the last cut the queued events are
// sent even if fewer than FlushAt (default 5 s). Must be positive, at most
// 7 days.
func WithFlushInterval(d time.Duration) Option { return func(c *config) { c.flushInterval = d } }

// WithMaxQueueSize bounds the events the client holds, queued or in flight
// (being sent or waiting to retry), by count (default 10,000). Beyond it
// Enqueue returns ErrQueueFull. At least 1, at most 10,000,000.
func WithMaxQueueSize(events int) Option { return func(c *config) { c.maxQueueSize = events } }

// WithMaxQueueBytes bounds the memory of the events the client holds,
// queued or in flight (default 64 MiB). Each event counts its encoded JSON;
// with a callback set (WithCallback), also an estimate of the message the
// client keeps for it: its strings (the encoded length, less about 120
// bytes every message writes from constants), the message struct, 768
// bytes for a Context, each map by its slots (336 bytes up to 8 members,
// then about 36 bytes a slot) and each boxed value, within a few tenths
// above the measured heap for typical messages. The default holds
// MaxQueueSize events of up to 6.7 KB counted: a burst of MaxQueueSize
// typical events (with a Context and a callback, 2.5 to 3.7 KB) meets
// MaxQueueSize first. At least MaxMessageBytes, so that any valid message
// can be queued: a client that holds nothing accepts one whatever its
// estimate; at most 64 GiB (on a 32-bit platform, 2 GiB less
// MaxMessageBytes). The bound covers the events, not the buffers of
// requests in flight.
func WithMaxQueueBytes(n int) Option { return func(c *config) { c.maxQueueBytes = n } }

// WithMaxConcurrentRequests bounds the requests in flight at once (default
// 8), and so the connections of the SDK's own client. A batch waiting to
// retry holds no request slot. At least 1, at most 1,000.
func WithMaxConcurrentRequests(n int) Option {
	return func(c *config) { c.upload.MaxConcurrentRequests = n }
}

// WithRetryCount sets how many retries a batch may spend on the backoff
// path (default 10): N means N+1 attempts if nothing else happens, 0 means
// no retry; at most 1,000. Rate-limited retries do not count.
func WithRetryCount(n int) Option { return func(c *config) { c.upload.Policy.RetryCount = n } }

// WithBackoffBase sets the first backoff wait's ceiling (default 500 ms):
// retry n waits d/2 + rand[0, d/2) with d = min(BackoffCap,
// BackoffBase·2^(n−1)). 0 retries without waiting; negative is invalid; at
// most 7 days.
func WithBackoffBase(d time.Duration) Option {
	return func(c *config) { c.upload.Policy.BackoffBase = d }
}

// WithBackoffCap caps d in the backoff formula (default 60 s). Must be
// positive, at most 7 days.
func WithBackoffCap(d time.Duration) Option {
	return func(c *config) { c.upload.Policy.BackoffCap = d }
}

// WithBackoffFunc sets the wait before each backoff-path retry: wait(n) for
// retry n (n = 1 for the first), in place of the jittered formula of
// WithBackoffBase and WithBackoffCap (default nil: the formula). A
// negative wait counts as 0. WithRetryCount and WithMaxTotalBackoffDuration
// still bound the path, and rate-limited retries (a valid Retry-After)
// still wait what the server asked. With the adaptive send rate, the
// probe after the k-th failure in a row is spaced wait(k), at most
// ProbeInterval, so wait is called for that too: it must depend on n
// alone, return quickly and be safe for concurrent use.
func WithBackoffFunc(wait func(n int) time.Duration) Option {
	return func(c *config) { c.upload.Policy.Backoff = wait }
}

// WithMaxTotalBackoffDuration bounds one batch's backoff path, measured on
// the monotonic clock from its first backoff-path failure (default 12 h). A
// wait that does not fit fails the batch at once with
// ErrBackoffBudgetExceeded; 0 allows no backoff wait at all. At most 30
// days.
func WithMaxTotalBackoffDuration(d time.Duration) Option {
	return func(c *config) { c.upload.Policy.MaxTotalBackoffDuration = d }
}

// WithMaxRateLimitDuration bounds how long a batch waits on rate limiting
// (default 12 h), measured on the monotonic clock: both from its own first
// rate-limited response and from the start of the client's rate-limit
// episode (the first Retry-After since an attempt was last answered without
// one), since one Retry-After pauses every batch. A wait that does not fit
// fails the batch at once with ErrRateLimitBudgetExceeded, so under
// sustained 429s no event waits on the pause much past this. 0 allows no
// rate-limit wait at all. At most 30 days.
func WithMaxRateLimitDuration(d time.Duration) Option {
	return func(c *config) { c.upload.Policy.MaxRateLimitDuration = d }
}

// WithRateLimitRetryAfterCap caps one rate-limit wait, whatever Retry-After
// asked for (default 300 s). Must be positive, at most 7 days.
func WithRateLimitRetryAfterCap(d time.Duration) Option {
	return func(c *config) { c.upload.Policy.RateLimitRetryAfterCap = d }
}

// WithRequestTimeout bounds each attempt, from sending the request to
// reading the response (default 10 s). A timeout is retried on the backoff
// path. Must be positive, at most 7 days.
func WithRequestTimeout(d time.Duration) Option {
	return func(c *config) { c.upload.RequestTimeout = d }
}

// WithGzip turns gzip compression of request bodies on or off (default on).
func WithGzip(on bool) Option { return func(c *config) { c.upload.Gzip = on } }

// WithV3Wire writes request bodies in the shape segmentio/analytics-go v3
// sent (default off), for a receiver, or a test double, written against
// v3's bodies: context.library is on the batch alone, not in each
// message, and is v3's own, {"name":"analytics-go","version":"3.0.0"} as
// every v3 release sent it (the User-Agent still names this SDK and its
// version); a message has a "context" member only when it has a
// Context; every time (each message's timestamp, the caller's or the
// default, and the batch's sentAt) is written as encoding/json writes a
// time.Time, RFC 3339 in the time's own location with as many fraction
// digits as it has (2009-11-10T23:00:00Z), instead of in UTC with
// milliseconds; and the batch carries a "messageId" of its own, a UUID v4
// sent on each of its attempts. Member names are the same either way. It
// leaves compression to WithGzip. See docs/SPEC.md §4.
func WithV3Wire(on bool) Option { return func(c *config) { c.v3Wire = on } }

// WithHTTPClient sends requests with client instead of the SDK's own. Use
// it for a proxy, a custom CA or a custom transport. Leave client.Timeout at
// 0: each attempt has its own deadline (WithRequestTimeout). Give it
// CheckRedirect: analytics.CheckRedirect, or any policy: a redirect that ends
// in a method other than POST fails with ErrRedirect. The SDK never closes
// idle connections of a client it was given.
func WithHTTPClient(client *http.Client) Option {
	return func(c *config) { c.upload.Client, c.httpClientSet = client, true }
}

// CheckRedirect is the SDK's redirect rule, that of its own
// client, for the CheckRedirect field of an http.Client given to
// WithHTTPClient: a 307 or 308 is followed (same method and body), up to 10
// hops; a 301, 302 or 303 is not, since it would turn the POST into a
// bodiless GET, nor is a redirect from https to plain http; the batch then
// fails with ErrRedirect. It is [consumer.CheckRedirect].
func CheckRedirect(req *http.Request, via []*http.Request) error {
	return consumer.CheckRedirect(req, via)
}

// WithLogger sends the SDK's logs to logger: an error for events that
// failed for good (with a hint to check the write key on a 401 or 403, the
// endpoint and the source on a 404), a warning for each failed attempt
// that will be retried, and recovered callback panics. By default, and
// with nil, they go to slog.Default() as it is when New runs. To silence
// them, give slog.New(slog.DiscardHandler).
//
// Whatever the logger, the failure errors and the attempt warnings are
// each throttled, so that an outage does not flood the log: the first 5 of
// each kind are logged, then at most one every 10 s, and a logged record
// carries "suppressed", the number of its kind left out since the last
// one logged. Callback and Stats still count every event. A record whose
// handler panics is dropped: a log call never stops the SDK's work nor
// crashes the program.
func WithLogger(logger *slog.Logger) Option { return func(c *config) { c.logger = logger } }

// WithCallback reports the final outcome of every event to cb. Nil means no
// callback. To call it back, the client keeps each message until its
// outcome, which costs memory: it counts against MaxQueueBytes (see
// WithMaxQueueBytes), so a queue holds fewer events with a callback than
// without one.
func WithCallback(cb Callback) Option { return func(c *config) { c.callback = cb } }

// WithCloseTimeout bounds how long Close waits for delivery (default
// DefaultCloseTimeout, 30 s). When it runs out, Close ends as a Shutdown
// whose context ended does: uploads in progress are cancelled and every
// event not yet delivered is reported to Callback.Failure with an error
// wrapping ErrShutdown and context.DeadlineExceeded. 0 makes Close wait as
// long as the retry budgets allow. Not negative, at most 7 days. Shutdown
// is bounded by its context alone.
func WithCloseTimeout(d time.Duration) Option { return func(c *config) { c.closeTimeout = d } }

// WithCloseRetries sets whether batches go on retrying once Close or
// Shutdown has begun (default on: Close waits for them, up to its
// timeout). Off, a close makes one last attempt of everything, as
// segmentio/analytics-go v3's Close did: each batch still queued, or cut
// and not yet attempted, is sent once, at once (neither a Retry-After
// pause nor the send rate holds it back); a batch waiting to retry fails
// at once; and a batch whose attempt fails from then on fails without a
// retry. Those are reported to Callback.Failure with a *BatchError whose
// Reason is ErrRetriesStopped and whose Err is the last attempt's error
// (with WithSpool they stay in the spool for the next New instead). Close
// then takes about one request's time, at most the request timeout
// (WithRequestTimeout) for each round of MaxConcurrentRequests batches,
// and the close timeout still bounds it. What off trades: events that one
// more retry would have delivered (the API briefly down, a network
// blip) are failed instead.
func WithCloseRetries(on bool) Option { return func(c *config) { c.closeRetries = on } }

// WithBlockingCallbacks lets callbacks block without stopping the uploads
// (default off). By default a batch keeps its place among the batches in
// flight (4 × MaxConcurrentRequests) until its callbacks return, so that
// slow callbacks slow the client down instead of piling up; but callbacks
// that wait for the client itself (an EnqueueContext on a full queue)
// then stop every upload, and with them the room they wait for. On, a
// batch gives its place back once its events have their outcome, before
// its callbacks run: a callback may block, and the client goes on cutting
// and sending batches. What on trades: each batch whose callbacks are
// blocked keeps a goroutine and its messages until they return, beyond
// the queue's bounds, so callbacks that block for ever under a sustained
// load pile up. Flush and Close still wait for every callback, so a
// callback must not call them.
func WithBlockingCallbacks(on bool) Option { return func(c *config) { c.blockingCallbacks = on } }

// WithAdaptiveSendRate turns the client-wide send rate on or off (default
// on). Every attempt, a batch's first or a retry, then takes a turn from one
// send rate per client. It counts the attempts of the last 2 minutes and
// those the API accepted: while at most half failed, it does not bind (an
// API that answers every other request is not throttled); beyond that it
// limits attempts as the SRE book's client-side throttling does, to
// (1 − p) times 2.5 times the client's usual rate, with p = max(0,
// (requests − 2·accepts)/(requests + 1)). Three retryable failures in a
// row (5xx, transport errors), or a 429 with Retry-After, and the API
// seems down: the client probes, one attempt at a time, spaced as the
// backoff schedule says, at most ProbeInterval apart (WithProbeInterval),
// but never more often than an eighth of its usual request rate (plus a
// jitter of its own), so that a client that sends little probes little.
// A batch held back keeps its retries (only its MaxTotalBackoffDuration
// runs), so an outage is bounded by that budget rather than by RetryCount
// times the backoff when many batches wait; new events wait in the queue
// meanwhile. When the API answers 2xx again, batches sleeping through a
// backoff wait go at once, and the backlog leaves at (1 − p) times 2.5
// times the usual rate, not all at once. A Retry-After pause ends a little
// after the server's time, by a jitter of the client's own of up to a
// tenth of the wait (at most 1 s), so that a fleet given the same answer
// does not return in the same instant; the uploads then resume the same
// way. With a single batch in flight, the send rate adds nothing to the
// waits of the backoff schedule and of Retry-After but that jitter, and,
// once the client knows its usual rate, the probe's eighth of it.
//
// Off, a batch waits only for its own backoff and for the rate-limit
// pause, which ends exactly at the server's time, as before the send rate
// existed. Stats().SendRate shows the limit, the attempts held back, and
// whether the client is probing.
func WithAdaptiveSendRate(on bool) Option {
	return func(c *config) { c.upload.AdaptiveSendRate = on }
}

// WithProbeInterval caps the spacing of the send rate's probe (default
// 4 s): while the API is down, one attempt at a time goes out, after the
// k-th failure in a row spaced the shortest backoff wait of retry k
// (BackoffBase·2^(k−1)/2, at most BackoffCap/2), and no more than this
// apart, unless the client sends little when healthy: the probe never
// goes more often than an eighth of the client's usual request rate
// (with a jitter of up to half that; at most BackoffCap), so this is the
// floor of that spacing. It bounds how late a busy client notices that
// the API is back. A shorter interval notices sooner but sends more
// during an outage. Must be positive, at most 7 days. Without the
// adaptive send rate it has no effect.
func WithProbeInterval(d time.Duration) Option {
	return func(c *config) { c.upload.Policy.ProbeInterval = d }
}

// WithSpool keeps every accepted event in an append-only log under dir as
// well as in memory (default off: events live in memory only), so that
// events survive a crash, a kill, a deploy that skips Close, and an outage
// longer than the memory queue holds. Enqueue returns only once the event
// is written to the operating system; a SIGKILL at any later moment loses
// none of it, and a machine crash at most the last WithSpoolSync interval.
// New on a directory with content sends what an earlier client left there
// first, with its messageIds, timestamps and bytes; each of those events
// gets one final callback, a Spooled message. Close and Shutdown leave in
// the directory, for the next New, what they could not deliver, instead
// of failing it. With the spool, Enqueue returns ErrQueueFull only when the
// spool is at WithSpoolMaxBytes: beyond MaxQueueSize and MaxQueueBytes,
// events wait on disk, not in memory, and their callbacks get a Spooled
// message. One client per directory: New fails, naming dir, when another
// client (in this process or another) has it open. dir is created mode
// 0700 if needed, and files are 0600; the write key is never written. An
// empty dir leaves the spool off.
func WithSpool(dir string) Option { return func(c *config) { c.spoolDir = dir } }

// WithSpoolMaxBytes bounds the spool's files (default
// DefaultSpoolMaxBytes, 1 GiB): at the bound, Enqueue returns ErrQueueFull
// and EnqueueContext waits. Space comes back as batches end. At least
// 1 MiB, at most 1 TiB. Without WithSpool it has no effect.
func WithSpoolMaxBytes(n int64) Option { return func(c *config) { c.spool.MaxBytes = n } }

// WithSpoolSync sets how often the spool's writes are forced to the disk
// with fsync (default DefaultSpoolSync, 1 s): a machine crash or power loss
// loses at most the events written in the last interval, and sends again
// at most those whose outcome came in the last interval (the marks of
// finished events are synced on the same cadence). 0 syncs before Enqueue
// returns, which costs a disk flush per call (concurrent calls share one),
// and the marks as each batch ends. Not negative, at most 7 days. A process
// crash loses nothing whatever the interval. Without WithSpool it has no
// effect.
func WithSpoolSync(d time.Duration) Option { return func(c *config) { c.spool.Sync = d } }

// WithOAuth authenticates uploads with OAuth 2.0 (default off: with the
// write key's Basic credentials), for a source whose workspace requires
// it: the client signs a JWT with o's private key, gets an access token
// from o's AuthServer (OAuthAuthServer, or OAuthAuthServerEU for the EU
// region; the token is valid in its region only), and every upload
// carries Authorization: Bearer <token> and the write key in its body.
// One token serves every upload: it is fetched before the first one, by
// one upload at a time while the others wait, refreshed past half its
// life, and dropped when an upload is refused for it (a 401, 403 or 511,
// or a 400 that challenges Bearer), which is then sent again at once, once,
// spending no retry. A token request that fails spends the waiting
// batches' budgets as a failed upload does (a 429 with X-RateLimit-Reset
// or Retry-After on the rate-limit path), and its errors say what to check.
// New refuses an OAuth without ClientID, KeyID or a private key, with a
// key that is not RSA (of at least 2048 bits) in PEM, or an AuthServer
// that is not an http(s) URL. The key and the tokens are kept in memory
// only, and never logged nor put in an error. See docs/oauth.md.
func WithOAuth(o OAuth) Option { return func(c *config) { c.oauth = o } }

// DefaultSpoolMaxBytes and DefaultSpoolSync are the spool's defaults.
const (
	DefaultSpoolMaxBytes = 1 << 30
	DefaultSpoolSync     = time.Second
)

// validate checks the configuration and names the option at fault: the
// endpoint, then each bound of the options table, in its order, then the
// bounds that join two options and the HTTP client. The write key is
// checked by New and never appears in the error.
func (c *config) validate() error {
	if err := validateEndpoint(c.endpoint); err != nil {
		return invalidOption("Endpoint", "%v", err)
	}
	for i := range optionTable {
		if err := optionTable[i].check(c); err != nil {
			return err
		}
	}
	if c.flushAt > c.maxQueueSize {
		return invalidOption("FlushAt", "%d is more than MaxQueueSize %d, so no batch would ever fill", c.flushAt, c.maxQueueSize)
	}
	if c.httpClientSet && c.upload.Client == nil {
		return invalidOption("HTTPClient", "must not be nil")
	}
	return nil
}

func validateEndpoint(endpoint string) error {
	u, err := url.Parse(endpoint)
	if err != nil {
		return fmt.Errorf("not a URL: %s", whyNotURL(endpoint))
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("must be an absolute http or https URL, got %q", redactEndpoint(endpoint))
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("must not have a query or fragment, got %q", redactEndpoint(endpoint))
	}
	return nil
}

// whyNotURL says why url.Parse refuses endpoint without showing a
// password: url.Error quotes the input, and its reason may quote a piece
// of it (a port, an escape), so both come from parsing the redacted
// endpoint instead. If that one parses, the fault was in what redaction
// masked: the userinfo.
func whyNotURL(endpoint string) string {
	shown := redactEndpoint(endpoint)
	var uerr *url.Error
	if _, err := url.Parse(shown); errors.As(err, &uerr) {
		return fmt.Sprintf("%v, in %q", uerr.Err, shown)
	}
	return fmt.Sprintf("invalid userinfo, in %q", shown)
}

// redactEndpoint masks whatever in endpoint could be a password: from
// after its first ":" (and any slashes) to its last "@", or from the start
// when no ":" comes before that "@". A password follows the first ":" of
// the userinfo, which the "@" ends, so it is inside the mask however
// malformed the rest is. url.URL.Redacted masks only a password the URL
// parses as one, and shows "http:user:pw@host" whole.
func redactEndpoint(endpoint string) string {
	at := strings.LastIndex(endpoint, "@")
	if at < 0 {
		return endpoint
	}
	start := strings.Index(endpoint[:at], ":") + 1 // 0 when there is none
	for start < at && endpoint[start] == '/' {
		start++
	}
	return endpoint[:start] + "xxxxx" + endpoint[at:]
}

// batchURLBase is the endpoint without a trailing slash, and without a
// final /v1/batch, which the uploader adds.
func (c *config) batchURLBase() string {
	base := strings.TrimRight(c.endpoint, "/")
	return strings.TrimRight(strings.TrimSuffix(base, consumer.BatchPath), "/")
}
