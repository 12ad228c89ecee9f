package retry

import (
	"net/http"
	"strconv"
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
	for o := OutcomeSuccess; o <= OutcomeTokenRefused; o++ {
		assert.NotEqual(t, "unknown", o.String(), "the name of Outcome(%d)", int(o))
		assert.NotEmpty(t, o.String(), "the name of Outcome(%d)", int(o))
	}
	assert.Equal(t, "unknown", Outcome(0).String(), "the name of an out-of-range outcome")
	assert.Equal(t, "unknown", Outcome(99).String(), "the name of an out-of-range outcome")
	assert.Equal(t, "backoff", BackoffPath.String())
	assert.Equal(t, "rate-limit", RateLimitPath.String())
	assert.Equal(t, "token", TokenPath.String())
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

// With a Bearer token, 401, 403, 511 and a 400 that challenges Bearer
// refuse the token; every other status is classified as Classify does.
func TestClassifyBearer(t *testing.T) {
	challenge := http.Header{"Www-Authenticate": {`Bearer error="invalid_request"`}}
	for status := 100; status <= 599; status++ {
		want := Classify(status, http.Header{}, now)
		if status == 401 || status == 403 || status == 511 {
			want = Result{Outcome: OutcomeTokenRefused}
		}
		assert.Equal(t, want, ClassifyBearer(status, http.Header{}, now), "ClassifyBearer(%d)", status)
		assert.Equal(t, want.Outcome == OutcomeTokenRefused, CheckOAuth(status, http.Header{}) != "", "CheckOAuth(%d)", status)
	}
	assert.Equal(t, OutcomeTokenRefused, ClassifyBearer(400, challenge, now).Outcome, "a 400 challenging Bearer")
	assert.Equal(t, OutcomeFatal, ClassifyBearer(400, http.Header{"Www-Authenticate": {`Basic realm="x"`}}, now).Outcome, "a 400 challenging Basic")
	assert.NotEmpty(t, CheckOAuth(400, challenge), "what to check on a 400 challenging Bearer")
}

// A token endpoint's 429 takes its wait from Retry-After, else from
// X-RateLimit-Reset in any of its forms, counted from the answer's Date.
func TestClassifyTokenAnswer(t *testing.T) {
	date := now.Add(-time.Hour) // the server's clock, an hour behind ours
	h := func(kv ...string) http.Header {
		out := http.Header{"Date": {date.Format(http.TimeFormat)}}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	rl := func(d time.Duration) Result { return Result{Outcome: OutcomeRateLimited, RetryAfter: d} }
	tests := []struct {
		name   string
		status int
		header http.Header
		want   Result
	}{
		{"delta-seconds", 429, h("X-RateLimit-Reset", "7"), rl(7 * time.Second)},
		{"Unix seconds", 429, h("X-RateLimit-Reset", strconv.FormatInt(date.Add(20*time.Second).Unix(), 10)), rl(20 * time.Second)},
		{"Unix milliseconds", 429, h("X-RateLimit-Reset", strconv.FormatInt(date.Add(1500*time.Millisecond).UnixMilli(), 10)), rl(1500 * time.Millisecond)},
		{"HTTP-date", 429, h("X-RateLimit-Reset", date.Add(time.Minute).Format(http.TimeFormat)), rl(time.Minute)},
		// Two Date lines say no one clock: the reset counts from now, as a
		// Retry-After's HTTP-date does (retryafter.ServerDate).
		{"Date on two lines", 429, http.Header{
			"Date":              {date.Format(http.TimeFormat), date.Format(http.TimeFormat)},
			"X-Ratelimit-Reset": {strconv.FormatInt(now.Add(20*time.Second).Unix(), 10)},
		}, rl(20 * time.Second)},
		{"Retry-After first", 429, h("Retry-After", "3", "X-RateLimit-Reset", "9"), rl(3 * time.Second)},
		{"a reset in the past", 429, h("X-RateLimit-Reset", strconv.FormatInt(date.Add(-time.Second).Unix(), 10)), Result{Outcome: OutcomeRetryable}},
		{"0", 429, h("X-RateLimit-Reset", "0"), Result{Outcome: OutcomeRetryable}},
		{"garbage", 429, h("X-RateLimit-Reset", "soon"), Result{Outcome: OutcomeRetryable}},
		{"none", 429, h(), Result{Outcome: OutcomeRetryable}},
		{"only on a 429", 503, h("X-RateLimit-Reset", "7"), Result{Outcome: OutcomeRetryable}},
		{"a refusal", 401, h("X-RateLimit-Reset", "7"), Result{Outcome: OutcomeFatal}},
		{"success", 200, h(), Result{Outcome: OutcomeSuccess}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ClassifyTokenAnswer(tt.status, tt.header, now), tt.name)
	}
}

// What to check after a token endpoint's answer: its settings for a
// refusal, its URL for no answer, a 404 or a 5xx, nothing for a wait.
func TestCheckTokenEndpoint(t *testing.T) {
	settings, reach := CheckTokenEndpoint(401), CheckTokenEndpoint(0)
	assert.Contains(t, settings, "the key id")
	assert.Contains(t, reach, "auth server URL")
	for _, status := range []int{400, 401, 403, 415} {
		assert.Equal(t, settings, CheckTokenEndpoint(status), "%d", status)
	}
	for _, status := range []int{0, 404, 500, 503} {
		assert.Equal(t, reach, CheckTokenEndpoint(status), "%d", status)
	}
	assert.Empty(t, CheckTokenEndpoint(429))
	assert.Empty(t, CheckTokenEndpoint(408))
}
