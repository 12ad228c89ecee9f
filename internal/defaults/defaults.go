// Package defaults holds the few defaults and bounds of the root
// package's options (docs/SPEC.md §7) that other packages of this module
// must agree with but cannot read from the root: v3compat's defaults and
// bounds are the root's, and the mock tracking API (analyticstest) refuses
// a batch beyond the SDK's own limit. analyticstest cannot import the
// root, whose tests import it.
package defaults

import "time"

// FlushAt and FlushInterval are the defaults of WithFlushAt and
// WithFlushInterval, and v3compat's DefaultBatchSize and DefaultInterval.
const (
	FlushAt       = 250
	FlushInterval = 5 * time.Second
)

// MaxFlushAt is the upper bound of WithFlushAt: more than a batch of
// MaxBatchBytes can hold, an encoded event taking over 50 bytes.
const MaxFlushAt = 10_000

// MaxWait is the upper bound of an option that sets a single interval,
// wait or timeout.
const MaxWait = 7 * 24 * time.Hour

// MaxBatchBytes is the largest batch body the SDK sends, and the tracking
// API takes, envelope included, before compression (docs/SPEC.md §3).
const MaxBatchBytes = 500_000
