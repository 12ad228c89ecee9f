package e2e

import (
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
)

func TestEveryRetryableStatusIsRetried(t *testing.T) {
	t.Parallel()
	for _, status := range []int{408, 410, 429, 460, 500, 502, 503, 504, 508, 529, 599} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			api := mockapi.New().Script(mockapi.Status(status), mockapi.Status(status))
			url := startMock(t, api)
			runCLI(t, url, fast(), tracks("m", 2)...).expect(t, true, 2, 0)
			requests(t, api, 3)
		})
	}
}

func TestEveryFatalStatusFailsAtOnce(t *testing.T) {
	t.Parallel()
	for _, status := range []int{400, 401, 403, 404, 405, 409, 422, 501, 505, 511} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			api := mockapi.New().Default(mockapi.Answer{Status: status, Header: http.Header{"Retry-After": {"1"}}})
			url := startMock(t, api)
			r := runCLI(t, url, fast(), tracks("m", 2)...)
			r.expect(t, false, 0, 2)
			r.expectError(t, "non-retryable status")
			r.expectError(t, "after 1 attempt")
			requests(t, api, 1)
		})
	}
	t.Run("413 with one event", func(t *testing.T) {
		t.Parallel()
		api := mockapi.New().Default(mockapi.Status(413))
		url := startMock(t, api)
		r := runCLI(t, url, fast(), tracks("m", 1)...)
		r.expect(t, false, 0, 1)
		r.expectError(t, "413")
		requests(t, api, 1)
	})
}

func TestRedirectsAreFailures(t *testing.T) {
	t.Parallel()
	for _, status := range []int{300, 301, 302, 303, 304} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			// The Location answers 200 to anything, a GET included: a
			// client that followed it would count a bodiless GET as a
			// delivery.
			api := mockapi.New().Rule(func(r mockapi.Request) mockapi.Answer {
				if r.Path == "/v1/batch" {
					return mockapi.Answer{Status: status, Header: http.Header{"Location": {"/moved"}}}
				}
				return mockapi.Status(200)
			})
			url := startMock(t, api)
			r := runCLI(t, url, fast(), tracks("m", 2)...)
			r.expect(t, false, 0, 2)
			r.expectError(t, "redirect")
			requests(t, api, 1)
		})
	}
}

func TestRetryAfterDeltaSecondsIsHonoured(t *testing.T) {
	t.Parallel()
	for _, status := range []int{429, 503, 529} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			t.Parallel()
			api := mockapi.New().Script(mockapi.RetryAfter(status, "2"))
			url := startMock(t, api)
			// maxRetries 0: only the uncounted rate-limit path can retry.
			runCLI(t, url, fast("maxRetries", 0), tracks("m", 2)...).expect(t, true, 2, 0)
			reqs := requests(t, api, 2)
			within(t, "the wait for Retry-After: 2", gap(reqs[0], reqs[1]), 2*time.Second, 8*time.Second)
		})
	}
}

// httpDate formats t in one of the three HTTP-date forms.
func httpDate(form string, t time.Time) string {
	t = t.UTC()
	switch form {
	case "rfc850":
		return t.Format("Monday, 02-Jan-06 15:04:05 GMT")
	case "asctime":
		return t.Format("Mon Jan _2 15:04:05 2006")
	}
	return t.Format(http.TimeFormat)
}

func TestRetryAfterHTTPDateIsHonoured(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"imf", "rfc850", "asctime"} {
		t.Run(form, func(t *testing.T) {
			t.Parallel()
			var answered atomic.Bool
			api := mockapi.New().Rule(func(mockapi.Request) mockapi.Answer {
				if answered.Swap(true) {
					return mockapi.Status(200)
				}
				// Against the response's own Date (whole seconds), three
				// seconds ahead: the SDK must wait between 2 and 3 seconds.
				now := time.Now().UTC().Truncate(time.Second)
				return mockapi.Answer{Status: 503, Header: http.Header{
					"Date":        {now.Format(http.TimeFormat)},
					"Retry-After": {httpDate(form, now.Add(3*time.Second))},
				}}
			})
			url := startMock(t, api)
			runCLI(t, url, fast("maxRetries", 0), tracks("m", 1)...).expect(t, true, 1, 0)
			reqs := requests(t, api, 2)
			within(t, "the wait for a Retry-After date 3s ahead", gap(reqs[0], reqs[1]), 2*time.Second, 9*time.Second)
		})
	}
}

func TestRetryAfterIsCapped(t *testing.T) {
	t.Parallel()
	api := mockapi.New().Script(mockapi.RetryAfter(429, "3600"))
	url := startMock(t, api)
	runCLI(t, url, fast("maxRetries", 0, "rateLimitRetryAfterCap", 1), tracks("m", 1)...).expect(t, true, 1, 0)
	reqs := requests(t, api, 2)
	within(t, "a Retry-After of an hour capped at 1s", gap(reqs[0], reqs[1]), time.Second, 6*time.Second)
}

func TestInvalidRetryAfterTakesTheCountedPath(t *testing.T) {
	t.Parallel()
	past := time.Now().Add(-time.Hour).UTC()
	future := time.Now().Add(time.Hour).UTC()
	days := []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}
	wrongDay := days[(int(future.Weekday())+1)%7] + future.Format(", 02 Jan 2006 15:04:05 GMT")
	for _, v := range []string{"-1", "0", "1.5", "soon", "+5", httpDate("imf", past), wrongDay} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			api := mockapi.New().Default(mockapi.RetryAfter(429, v))
			url := startMock(t, api)
			// With no retries to spend, the counted path gives up at once;
			// the rate-limit path would have retried.
			r := runCLI(t, url, fast("maxRetries", 0), tracks("m", 1)...)
			r.expect(t, false, 0, 1)
			r.expectError(t, "retries exhausted")
			requests(t, api, 1)
		})
	}
}

func TestMaxRetries(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 4} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			t.Parallel()
			api := mockapi.New().Default(mockapi.Status(500))
			url := startMock(t, api)
			r := runCLI(t, url, fast("maxRetries", n), tracks("m", 1)...)
			r.expect(t, false, 0, 1)
			r.expectError(t, fmt.Sprintf("after %d attempt", n+1))
			requests(t, api, n+1)
		})
	}
}

func TestBackoffBudgetEndsTheBatch(t *testing.T) {
	t.Parallel()
	api := mockapi.New().Default(mockapi.Status(503))
	url := startMock(t, api)
	// Waits of 100-200 ms, 200-400 ms, 400-800 ms...: the third no longer
	// fits in the 0.5 s budget.
	r := runCLI(t, url, map[string]any{"maxRetries": 100, "backoffBase": 200, "backoffCap": 60000, "maxTotalBackoffDuration": 0.5}, tracks("m", 1)...)
	r.expect(t, false, 0, 1)
	r.expectError(t, "backoff budget exceeded")
	if n := len(api.Requests()); n < 2 || n > 4 {
		t.Fatalf("%d requests, want 2 to 4 within a 0.5s budget", n)
	}
}

func TestRateLimitBudgetEndsTheBatch(t *testing.T) {
	t.Parallel()
	api := mockapi.New().Default(mockapi.RetryAfter(429, "1"))
	url := startMock(t, api)
	// The first 1s wait fits in the 1.5s budget; the second does not.
	r := runCLI(t, url, fast("maxRateLimitDuration", 1.5), tracks("m", 1)...)
	r.expect(t, false, 0, 1)
	r.expectError(t, "rate-limit budget exceeded")
	reqs := requests(t, api, 2)
	within(t, "the one rate-limit wait", gap(reqs[0], reqs[1]), time.Second, 6*time.Second)
}

func TestXRetryCountAndMessageIDsAcrossBothPaths(t *testing.T) {
	t.Parallel()
	api := mockapi.New().Script(
		mockapi.Status(503),
		mockapi.RetryAfter(429, "1"),
		mockapi.Answer{Drop: true},
		mockapi.Status(500),
	)
	url := startMock(t, api)
	runCLI(t, url, fast(), tracks("m", 3)...).expect(t, true, 3, 0)
	reqs := requests(t, api, 5)
	for i, r := range reqs {
		want := ""
		if i > 0 {
			want = strconv.Itoa(i)
		}
		if got := r.Header.Get("X-Retry-Count"); got != want {
			t.Errorf("request %d: X-Retry-Count %q, want %q", i+1, got, want)
		}
		if fmt.Sprint(r.MessageIDs()) != "[m-0 m-1 m-2]" {
			t.Errorf("request %d carried %v", i+1, r.MessageIDs())
		}
	}
}

func TestTooLargeSplitsUntilDelivered(t *testing.T) {
	t.Parallel()
	api := mockapi.New().Rule(mockapi.MaxEvents(3, mockapi.Status(413)))
	url := startMock(t, api)
	runCLI(t, url, fast(), tracks("m", 20)...).expect(t, true, 20, 0)
	delivered := api.Delivered()
	if len(delivered) != 20 {
		t.Fatalf("%d distinct events delivered, want 20", len(delivered))
	}
	for id, n := range delivered {
		if n != 1 {
			t.Fatalf("%s delivered %d times", id, n)
		}
	}
	for _, r := range api.Requests() {
		if r.Status == 200 && len(r.Events) > 3 {
			t.Fatalf("a batch of %d events was accepted", len(r.Events))
		}
	}
}

func TestCloseWaitsForBatchesInRetry(t *testing.T) {
	t.Parallel()
	api := mockapi.New().Script(mockapi.Status(503), mockapi.RetryAfter(503, "1"))
	url := startMock(t, api)
	// Default backoff: the first retry waits 250-500 ms; then 1 s.
	r := runCLI(t, url, map[string]any{}, tracks("m", 2)...)
	r.expect(t, true, 2, 0)
	reqs := requests(t, api, 3)
	within(t, "the backoff wait", gap(reqs[0], reqs[1]), 250*time.Millisecond, 6*time.Second)
	within(t, "the Retry-After wait", gap(reqs[1], reqs[2]), time.Second, 6*time.Second)
}
