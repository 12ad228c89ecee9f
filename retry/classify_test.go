package retry

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func TestClassifyStatusTable(t *testing.T) {
	retryable := map[int]bool{408: true, 410: true, 429: true, 460: true}
	for s := 500; s <= 599; s++ {
		retryable[s] = s != 501 && s != 505 && s != 511
	}
	for status := 100; status <= 599; status++ {
		var want Outcome
		switch {
		case status >= 200 && status <= 299:
			want = OutcomeSuccess
		case status == 413:
			want = OutcomeTooLarge
		case status >= 300 && status <= 399:
			want = OutcomeRedirect
		case retryable[status]:
			want = OutcomeRetryable
		default:
			want = OutcomeFatal
		}
		assert.Equal(t, want, Classify(status, http.Header{}, now).Outcome, "Classify(%d)", status)
		assert.Equal(t, retryable[status], isRetryableStatus(status), "isRetryableStatus(%d)", status)
	}
}

func TestClassifyRetryAfter(t *testing.T) {
	h := func(v string) http.Header { return http.Header{"Retry-After": {v}} }
	tests := []struct {
		name   string
		status int
		header http.Header
		want   Result
	}{
		{"429 with delta-seconds", 429, h("7"), Result{Outcome: OutcomeRateLimited, RetryAfter: 7 * time.Second}},
		{"503 with delta-seconds", 503, h("2"), Result{Outcome: OutcomeRateLimited, RetryAfter: 2 * time.Second}},
		{"529 with delta-seconds", 529, h("3"), Result{Outcome: OutcomeRateLimited, RetryAfter: 3 * time.Second}},
		{"408 with delta-seconds", 408, h("1"), Result{Outcome: OutcomeRateLimited, RetryAfter: time.Second}},
		{"503 with HTTP-date", 503, h(now.Add(90 * time.Second).Format(http.TimeFormat)), Result{Outcome: OutcomeRateLimited, RetryAfter: 90 * time.Second}},
		{"429 with 0", 429, h("0"), Result{Outcome: OutcomeRetryable}},
		{"429 with -1", 429, h("-1"), Result{Outcome: OutcomeRetryable}},
		{"429 with 1.5", 429, h("1.5"), Result{Outcome: OutcomeRetryable}},
		{"429 with garbage", 429, h("soon"), Result{Outcome: OutcomeRetryable}},
		{"429 with a past date", 429, h(now.Add(-time.Minute).Format(http.TimeFormat)), Result{Outcome: OutcomeRetryable}},
		{"400 ignores Retry-After", 400, h("5"), Result{Outcome: OutcomeFatal}},
		{"501 ignores Retry-After", 501, h("5"), Result{Outcome: OutcomeFatal}},
		{"413 ignores Retry-After", 413, h("5"), Result{Outcome: OutcomeTooLarge}},
		{"301 ignores Retry-After", 301, h("5"), Result{Outcome: OutcomeRedirect}},
		{"200 ignores Retry-After", 200, h("5"), Result{Outcome: OutcomeSuccess}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, Classify(tt.status, tt.header, now), "Classify(%d, %v)", tt.status, tt.header)
		})
	}
}

func TestOutcomeAndPathNames(t *testing.T) {
	for o := OutcomeSuccess; o <= OutcomeFatal; o++ {
		assert.NotEqual(t, "unknown", o.String(), "the name of Outcome(%d)", int(o))
		assert.NotEmpty(t, o.String(), "the name of Outcome(%d)", int(o))
	}
	assert.Equal(t, "unknown", Outcome(0).String(), "the name of an out-of-range outcome")
	assert.Equal(t, "unknown", Outcome(99).String(), "the name of an out-of-range outcome")
	assert.Equal(t, "backoff", BackoffPath.String())
	assert.Equal(t, "rate-limit", RateLimitPath.String())
	assert.Equal(t, "none", Path(0).String())
}

func TestMayFollowRedirect(t *testing.T) {
	for status := 100; status <= 599; status++ {
		assert.Equal(t, status == 307 || status == 308, MayFollowRedirect(status), "MayFollowRedirect(%d)", status)
	}
}

func TestRejectsEndpoint(t *testing.T) {
	for status := 100; status <= 599; status++ {
		want := status == 404
		assert.Equal(t, want, RejectsEndpoint(status), "RejectsEndpoint(%d)", status)
		if want {
			assert.Equal(t, OutcomeFatal, Classify(status, http.Header{}, now).Outcome, "a wrong endpoint is fatal: %d", status)
		}
	}
}

func TestRejectsCredentials(t *testing.T) {
	for status := 100; status <= 599; status++ {
		want := status == 401 || status == 403
		assert.Equal(t, want, RejectsCredentials(status), "RejectsCredentials(%d)", status)
		if want {
			assert.Equal(t, OutcomeFatal, Classify(status, http.Header{}, now).Outcome, "a refused write key is fatal: %d", status)
		}
	}
}
