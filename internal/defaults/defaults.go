// Package defaults holds the few defaults and bounds of the root
// package's options (docs/SPEC.md §7) that other packages of this module
// must agree with but cannot read from the root: v3compat's defaults and
// bounds are the root's, package consumer holds the batches it sends to
// the tracking API's limits, and the mock tracking API (analyticstest)
// holds the batches it receives to them. Neither of the last two can
// import the root, which imports consumer and whose tests import
// analyticstest.
package defaults

import "time"

// FlushAt and FlushInterval are the defaults of WithFlushAt and
// WithFlushInterval, and v3compat's DefaultBatchSize and DefaultInterval.
const (
	FlushAt       = 250
	FlushInterval = 5 * time.Second
)

// MaxBatchEvents is the most events a batch holds: Segment's HTTP API
// takes at most 2,500 events a batch request and answers 200 but rejects
// the events past them (segment-docs, HTTP API source, "Common reasons
// events are not accepted", PR #7023; docs/SPEC.md §3). It is the upper
// bound of WithFlushAt and v3compat's BatchSize, the consumer splits a
// batch of more before it is sent, and the mock tracking API rejects the
// events past it as Segment does.
const MaxBatchEvents = 2_500

// MaxWait is the upper bound of an option that sets a single interval,
// wait or timeout.
const MaxWait = 7 * 24 * time.Hour

// MaxBatchBytes is the largest batch body the SDK sends, and the tracking
// API takes, envelope included, before compression (docs/SPEC.md §3).
const MaxBatchBytes = 500_000

// TimeLayout is the wire format of times (docs/SPEC.md §2, §4), a layout
// of package time: RFC 3339 in UTC with milliseconds. The root's encoder
// writes each message's timestamp in it, package consumer each body's
// sentAt.
const TimeLayout = "2006-01-02T15:04:05.000Z"
