// Package retry decides what happens after each upload attempt of a batch:
// whether the attempt succeeded, must be split, failed for good, or is
// retried, and if so on which path and after how long. It implements the
// dual-path retry of the SDK's docs/SPEC.md §5.
//
// It holds the SDK's retry policy in one place: the table of retryable
// statuses ([Classify]), the jittered exponential backoff, and the
// per-batch retry count and duration budgets ([Policy], [Budget]), and the
// client-wide [Gate] that admits each attempt: the rate-limit pause and the
// adaptive send rate. It does no I/O and never reads the clock: the caller
// passes the time in, so every decision can be tested at any instant
// without waiting.
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
// Above both paths, every attempt of every batch of a client takes its turn
// from the Gate's send rate: it does not bind while the API answers, probes
// (one attempt at a time, spaced by the backoff schedule) while it does
// not, and ramps up again after. A batch it holds back spends no retry, only time
// from its backoff budget.
//
// With OAuth 2.0, an upload that carried an access token is classified by
// [ClassifyBearer]: a refusal of the token takes the token path, sent
// again at once with a fresh one, once per batch, spending no retry. A
// token endpoint's answer is classified by [ClassifyTokenAnswer] as an
// upload's, its 429 waiting by X-RateLimit-Reset as well as Retry-After,
// so that a failing token endpoint spends the same budgets.
//
// The package stands on its own: a client of any batch-ingesting HTTP API
// can run its upload loop on it. Per batch: [Policy.NewBudget], then for
// each attempt [Classify] its end and [Budget.Next] for the Decision. Per
// client: one [Gate], whose [Gate.Admit] answers each attempt "go, on this
// [Turn]", "take a request slot" or "wait until then, or until woken",
// whose [Gate.End] takes the attempt's outcome, and whose [Gate.Hold]
// takes a rate-limited answer's wait. The SDK's consumer package runs its
// loop so.
package retry
