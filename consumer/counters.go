package consumer

import (
	"time"

	"github.com/dualpath/analytics-go/retry"
)

// Counters is a snapshot of what an Uploader has done since it was made.
// The analytics package's Stats embeds it (as analytics.UploadStats), so
// its fields and JSON members are Stats' own.
type Counters struct {
	// BatchesDelivered and BatchesFailed count batches by final outcome;
	// each half of a split batch counts as a batch.
	BatchesDelivered int64 `json:"batches_delivered"`
	BatchesFailed    int64 `json:"batches_failed"`
	// Splits counts batches split in two after a 413, or before they were
	// sent, over the body limit or of more than 2,500 events.
	Splits int64 `json:"splits"`
	// Attempts counts attempts sent, first attempts and retries: the HTTP
	// requests sent, but for Resends.
	Attempts int64 `json:"attempts"`
	// Retries counts retries by path.
	Retries RetryStats `json:"retries"`
	// Resends counts attempts sent a second time at once, as part of the
	// same attempt (same bytes, same X-Retry-Count), because a reused
	// keep-alive connection closed under them without a byte of answer:
	// the race of a server or proxy closing an idle connection (see
	// Uploader.Deliver). Each attempt is resent at most once; a resend
	// spends no retry and no budget, and is in neither Attempts nor
	// Retries.
	Resends int64 `json:"resends"`
	// RateLimitedWaits counts attempts held back by the client-wide pause
	// that a Retry-After starts, the rate-limited batch's own included.
	RateLimitedWaits int64 `json:"rate_limited_waits"`
	// BytesSent counts request body bytes written, after compression.
	BytesSent int64 `json:"bytes_sent"`
	// TransportErrors counts attempts that got no response, by whether the
	// request had been written.
	TransportErrors TransportErrorStats `json:"transport_errors"`
}

// RetryStats counts retries by path.
type RetryStats struct {
	Backoff   int64 `json:"backoff"`    // counted retries after a failure without Retry-After
	RateLimit int64 `json:"rate_limit"` // uncounted retries after a valid Retry-After
	Token     int64 `json:"token"`      // uncounted resends with a fresh OAuth access token, after a refusal of the last one
}

// TransportErrorStats counts attempts that got no HTTP response, by their
// last send's Phase.
type TransportErrorStats struct {
	NotWritten int64 `json:"not_written"` // the request never left: nothing was sent
	Written    int64 `json:"written"`     // the request was written: the server may have it
}

// Counters returns a snapshot of the Uploader's counters.
func (u *Uploader) Counters() Counters {
	u.statsMu.Lock()
	defer u.statsMu.Unlock()
	return u.stats
}

// count adds n to *c, one of u.stats' counters. They change once per
// batch, attempt or send, never per event: one mutex serves them all.
func (u *Uploader) count(c *int64, n int64) {
	u.statsMu.Lock()
	*c += n
	u.statsMu.Unlock()
}

// SendRate returns a snapshot of the client-wide send rate
// (Config.AdaptiveSendRate): all zero when it is off. The analytics
// package names it analytics.SendRateStats, in Stats.SendRate.
func (u *Uploader) SendRate() retry.GateState { return u.gate.State(time.Now()) }
