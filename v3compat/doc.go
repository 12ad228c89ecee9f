// Package analytics is a drop-in for code written against
// github.com/segmentio/analytics-go/v3: change that import path to
// github.com/dualpath/analytics-go/v3compat and the code compiles unchanged.
// The package is named analytics, as v3's is, so an import without an alias
// keeps every analytics.X of the code:
//
//	import "github.com/dualpath/analytics-go/v3compat" // was "github.com/segmentio/analytics-go/v3"
//
//	client := analytics.New(writeKey)
//	defer client.Close()
//	client.Enqueue(analytics.Track{UserId: "u1", Event: "Signed Up"})
//
// It has v3's API: the Client interface, New, NewWithConfig and Config
// with its zero-value defaults, DefaultEndpoint, DefaultInterval and
// DefaultBatchSize, Logger and StdLogger, Callback, Message, ConfigError,
// FieldError (a value, as v3 code asserts it: err.(analytics.FieldError)),
// ErrClosed, ErrTooManyRequests and ErrMessageTooBig, ValidateFields, and
// the message, context and helper types. The context and helper types are
// the root package's (aliases). The six message types are the root's
// structs as types of their own, whose Validate returns a FieldError value
// as v3's did; a conversion (root.Track(m), analytics.Track(m)) goes from
// one package's to the other's, and Enqueue takes either.
//
// It is a thin layer over the root package's Client
// (github.com/dualpath/analytics-go): Config becomes the root's options,
// Enqueue is the root's EnqueueContext, Close is the root's Close. Every
// decision about uploads (batching, the queue's bounds, retries, redirects,
// timeouts) is the root's. Enqueue, like v3's, blocks while the queue is
// full: it waits for room, in arrival order, and never polls. The package
// starts no goroutine of its own.
//
// # Deliberate differences from v3
//
// What the root client does better than v3 it does here too, so a program
// that moves to this package behaves as follows where v3 did not:
//
//   - Only a 2xx answer is success. v3 counted any status below 300 as
//     delivered, and a 301, 302 or 303 that net/http followed into a GET as
//     well. Here a 3xx fails with the root's ErrRedirect, unless it is a 307
//     or 308, which keeps the POST.
//   - Retries follow the root's dual-path policy: 408, 410, 429, 460, 5xx
//     other than 501, 505 and 511, and transport errors are retried; other
//     4xx fail at once (v3 retried every failure). A valid Retry-After is
//     honoured, capped, and does not spend a retry (v3 ignored it). Backoff
//     waits are jittered and exponential, from 500 ms to 60 s, 10 retries,
//     each path bounded by a time budget. Config.RetryAfter is not used:
//     NewWithConfig logs that once when it is set. To tune retries, use the
//     root package's options.
//   - Retries survive Close. v3's Close cut the waits of batches waiting
//     to retry and reported them to Callback.Failure: it dropped them. Here
//     Close waits for them up to the root's Close deadline (30 s,
//     DefaultCloseTimeout of the root package), then reports what is left
//     to Callback.Failure with the root's ErrShutdown. A second Close
//     returns ErrClosed, as in v3.
//   - Batches are gzip-compressed (v3 sent plain JSON).
//   - One connection pool: with Transport nil, the client uploads with the
//     root's own http.Client, at most 8 requests at once over at most 8
//     connections that it reuses; v3 used http.DefaultTransport, opened a
//     connection per batch (it never read the answers' bodies) and ran up
//     to 1000 uploads at once. With Transport set, that RoundTripper is
//     used, in an http.Client with the root's redirect rule
//     (CheckRedirect of the root package) and never more than 8 requests
//     at once.
//   - Enqueue refuses, and returns the error of, a message whose JSON is
//     over 32,000 bytes (errors.Is(err, ErrMessageTooBig)) or holds a value
//     JSON cannot (NaN, a channel, a cycle: a *FieldError of the root
//     package, matching its ErrInvalidMessage). v3 accepted both and
//     reported them to Callback.Failure. No callback follows an error of
//     Enqueue.
//   - Callback.Failure gets the root's *BatchError: why the batch stopped
//     (a sentinel such as the root's ErrRetriesExhausted), the number of
//     attempts, and the last *HTTPError or *TransportError.
//   - ErrTooManyRequests is never returned: v3 failed a batch with it when
//     1000 uploads were in flight; here Enqueue waits for room instead.
//   - Config.DefaultContext is merged into the context of every message at
//     Enqueue, each member the message sets winning over the default's
//     (its Extra, member by member). v3 sent it as the batch's context,
//     which the tracking API applies to every message of the batch. The
//     message a Callback gets carries the merged context.
//   - An empty write key is a ConfigError (Field "WriteKey") from
//     NewWithConfig; New returns a client whose Enqueue returns it. v3
//     accepted the key and every upload failed.
//   - NewWithConfig also refuses what the root refuses: an Endpoint that is
//     not an absolute http or https URL, a BatchSize over 10,000, an
//     Interval over 7 days. Zero still means the default.
//   - Logs: Logger.Errorf gets the root's warnings (an attempt failed and
//     will be retried) and errors (events not delivered), Logger.Logf the
//     rest; a record is one line, its message then key=value pairs. Verbose
//     lets debug records through, of which the root writes none, so it
//     adds nothing; v3 logged every message and response with it. By
//     default logs go to os.Stderr, as in v3.
//   - On the wire: timestamps in UTC with milliseconds; a product's SKU
//     under "sku" (v3 wrote "sky"); Integrations.EnableAll sets "All", the
//     key of the Segment spec (v3: "all"); User-Agent analytics-go/<version>;
//     X-Retry-Count on every resend; no messageId on the batch itself. Page
//     and Screen have a Category field.
//   - The queue is bounded by 10,000 events and 64 MiB, counting events
//     being sent or waiting to retry; Enqueue waits while it is full. v3's
//     Enqueue waited on a channel of 100 messages.
//
// To use what v3 lacks (Flush, Shutdown with a deadline, Stats, a
// non-blocking Enqueue, the retry options), move a client to the root
// package: analytics.New(writeKey, opts...) returns a *Client; the
// README's migration section maps each Config field to its option.
package analytics
