// Package retry decides what happens after each upload attempt of a batch:
// whether the attempt succeeded, must be split, failed for good, or is
// retried, and if so on which path and after how long.
//
// It holds the SDK's retry policy in one place: the table of retryable
// statuses ([Classify]), the jittered exponential backoff, and the
// per-batch retry count and duration budgets ([Policy], [Budget]), and the
// client-wide rate-limit pause ([Pause]). It does no I/O and never reads the
// clock: the caller passes the time in, so every decision can be tested at
// any instant without waiting.
//
// The two paths:
//
//   - The rate-limit path is taken by a retryable status that carries a valid
//     Retry-After. The batch waits min(Retry-After, RateLimitRetryAfterCap)
//     without spending its retry count, bounded by MaxRateLimitDuration from
//     the batch's first rate-limited response.
//   - The backoff path is taken by every other retryable outcome, including
//     transport errors. Retry n waits d/2 + rand[0, d/2) with
//     d = min(BackoffCap, BackoffBase·2^(n−1)); it spends one of RetryCount
//     retries and is bounded by MaxTotalBackoffDuration from the batch's first
//     backoff-path failure.
//
// A wait that does not fit in what is left of its budget fails the batch at
// once; nothing sleeps only to fail afterwards.
//
// Every exported name is supported API of this package, for package
// consumer, which runs the loop, and the analytics package, which holds the
// Policy and re-exports the sentinel errors. Nothing else is exported.
package retry
