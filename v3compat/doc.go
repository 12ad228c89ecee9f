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
// starts goroutines of its own only to report to Callback.Failure a
// message Enqueue accepted and could not send (as v3 did, from its own),
// and for a Close called from a Callback; Close waits for them.
//
// # Where it behaves as v3
//
//   - Close makes one last attempt of each queued batch, stops every retry,
//     reports what is left to Callback.Failure with its last error, and
//     returns: at once against a refused port, within the 10 s request
//     timeout against an API that does not answer (the root's
//     WithCloseRetries(false)). Config.CloseTimeout, which v3 lacks, lets
//     retries run for up to that long instead. Two bounds v3 lacked: at
//     most 8 requests at once, and 30 s in all (the root's
//     DefaultCloseTimeout), after which what is left fails with the
//     root's ErrShutdown.
//   - Every Config v3 accepted gives a client. With an empty write key
//     each event fails with ErrEmptyWriteKey; with an Endpoint that is not
//     an http or https URL with a host (or has a query or fragment), with
//     the *url.Error v3's HTTP client gave; nothing is sent, and
//     NewWithConfig logs it once. A BatchSize over 2,500 is taken as
//     2,500: past 2,500 events a batch request, Segment's API answers 200
//     but rejects the events, which v3 then reported delivered. An
//     Interval over 7 days is taken as 7 days. NewWithConfig refuses what
//     v3 refused: a negative Interval or BatchSize.
//   - Callback.Failure gets v3's errors: the *url.Error of the HTTP client
//     for a request that got no answer, the error that cut reading an
//     error answer's body short, or v3's status error ("503 503 Service
//     Unavailable"), whose Unwrap gives the root's *BatchError. A
//     Callback with a FailureDetail method gets that instead, with the
//     root's *BatchError for every failed upload.
//   - Enqueue accepts a message whose JSON is over 32,000 bytes, or that
//     holds a value JSON cannot (or whose DefaultContext does), and
//     Callback.Failure gets ErrMessageTooBig or encoding/json's error, as
//     in v3.
//   - A Callback may call Enqueue whatever the load: the uploads go on
//     while callbacks wait for room (the root's WithBlockingCallbacks),
//     each waiting callback keeping its batch's messages until it
//     returns. Close called from a Callback begins the close and returns
//     at once (v3's deadlocked); the package has no Flush.
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
//     honoured, capped, does not spend a retry and calls no RetryAfter (v3
//     ignored it). Config.RetryAfter(i) is the wait before each counted
//     retry, i retries before it, as in v3 (i = 0 to 9: at most 11
//     attempts, v3 made 10); with it set, the root's adaptive send rate is
//     off. Unset, backoff waits are jittered and exponential, from 500 ms
//     to 60 s, 10 retries, each path bounded by a time budget. To tune
//     retries further, use the root package's options.
//   - One connection pool: with Transport nil, the client uploads with the
//     root's own http.Client, at most 8 requests at once over at most 8
//     connections that it reuses; v3 used http.DefaultTransport, opened a
//     connection per batch (it never read the answers' bodies) and ran up
//     to 1000 uploads at once. With Transport set, that RoundTripper is
//     used, in an http.Client with the root's redirect rule
//     (CheckRedirect of the root package) and never more than 8 requests
//     at once.
//   - ErrTooManyRequests is never returned: v3 failed a batch with it when
//     1000 uploads were in flight; here Enqueue waits for room instead.
//   - Config.DefaultContext is merged into the context of every message at
//     Enqueue, each member the message sets winning over the default's
//     (its Extra, member by member). v3 sent it as the batch's context,
//     which the tracking API applies to every message of the batch. The
//     message a Callback gets carries the merged context.
//   - Logs: Logger.Errorf gets the root's warnings (an attempt failed and
//     will be retried) and errors (events not delivered), Logger.Logf the
//     rest; a record is one line, its message then key=value pairs.
//     Verbose logs each queued message through Logf as v3 did, "buffer
//     (n/BatchSize) <message>", the message as Enqueue got it (v3's had its
//     messageId and timestamp filled); v3's lines for each flush and
//     answer are not written. By default logs go to os.Stderr, as in v3.
//   - On the wire, the body is v3's (the root's WithV3Wire): plain JSON
//     unless Config.Gzip is set, context.library on the batch only,
//     timestamps as encoding/json writes them, a messageId on the batch,
//     and v3's library, {"name":"analytics-go","version":"3.0.0"}, as every
//     v3 release sent it (Version is this SDK's; the User-Agent names it).
//     What differs: a product's SKU under "sku" (v3 wrote "sky");
//     Integrations.EnableAll sets "All", the key of the Segment spec (v3:
//     "all"); User-Agent analytics-go/<version>; X-Retry-Count on every
//     resend. Page and Screen have a Category field.
//   - The queue is bounded by 10,000 events and 64 MiB, counting events
//     being sent or waiting to retry; Enqueue waits while it is full. v3's
//     Enqueue waited on a channel of 100 messages.
//
// To use what v3 lacks (Flush, Shutdown with a deadline, Stats, a
// non-blocking Enqueue, the retry options), move a client to the root
// package: analytics.New(writeKey, opts...) returns a *Client; the
// migration page, docs/v3.md, maps each Config field to its option.
package analytics
