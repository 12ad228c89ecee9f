package consumer

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/retry"
)

func TestHeadersOnEveryAttempt(t *testing.T) {
	for _, gzipOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gzipOn), func(t *testing.T) {
			r := newRig(t, status(500), retryAfter(429, "1"))
			r.up.gzip = gzipOn
			if err := one(t, r.deliver(context.Background(), 3), 3); err != nil {
				t.Fatalf("delivery failed: %v", err)
			}
			reqs := r.tr.requests()
			if len(reqs) != 3 {
				t.Fatalf("%d requests, want 3", len(reqs))
			}
			wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("wk-secret:"))
			for i, s := range reqs {
				h := s.header
				if h.Get("Content-Type") != "application/json" || h.Get("Authorization") != wantAuth ||
					h.Get("User-Agent") != "analytics-go/test" {
					t.Errorf("attempt %d headers: %v", i, h)
				}
				if got := h.Get("Content-Encoding"); (got == "gzip") != gzipOn {
					t.Errorf("attempt %d: Content-Encoding %q with gzip %v", i, got, gzipOn)
				}
				if gzipOn && bytes.Equal(s.raw, s.body) {
					t.Errorf("attempt %d: body not compressed", i)
				}
				for _, k := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
					if _, ok := h[k]; ok {
						t.Errorf("attempt %d sets %s", i, k)
					}
				}
			}
		})
	}
}

func TestXRetryCountAcrossBothPaths(t *testing.T) {
	r := newRig(t, status(503), retryAfter(429, "2"), dropped(PhaseWritten), retryAfter(503, "1"), status(500))
	if err := one(t, r.deliver(context.Background(), 2), 2); err != nil {
		t.Fatalf("delivery failed: %v", err)
	}
	reqs := r.tr.requests()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	if _, ok := reqs[0].header["X-Retry-Count"]; ok {
		t.Fatal("first attempt carries X-Retry-Count")
	}
	for i := 1; i < len(reqs); i++ {
		if got := reqs[i].header.Get("X-Retry-Count"); got != strconv.Itoa(i) {
			t.Errorf("attempt %d: X-Retry-Count %q, want %d", i+1, got, i)
		}
	}
}

func TestBodyIdenticalOnEveryAttemptButSentAt(t *testing.T) {
	r := newRig(t, status(503), status(502), retryAfter(429, "3"))
	if err := one(t, r.deliver(context.Background(), 5), 5); err != nil {
		t.Fatal(err)
	}
	reqs := r.tr.requests()
	firstAt, _ := time.Parse(TimeLayout, reqs[0].batch.SentAt)
	for i, s := range reqs {
		// Everything up to sentAt is the same bytes.
		head := s.body[:bytes.Index(s.body, []byte(`,"sentAt":`))]
		first := reqs[0].body[:bytes.Index(reqs[0].body, []byte(`,"sentAt":`))]
		if !bytes.Equal(head, first) {
			t.Errorf("attempt %d events differ:\n%s\n%s", i, head, first)
		}
		at, err := time.Parse(TimeLayout, s.batch.SentAt)
		if err != nil {
			t.Fatalf("attempt %d sentAt %q: %v", i, s.batch.SentAt, err)
		}
		if want := s.at.UTC().Truncate(time.Millisecond); !at.Equal(want) {
			t.Errorf("attempt %d sentAt = %v, want the attempt's time %v", i, at, want)
		}
		if i > 0 && !at.After(firstAt) {
			t.Errorf("attempt %d sentAt %v not after first %v", i, at, firstAt)
		}
		if lib := s.batch.Context["library"].(map[string]any); lib["name"] != "analytics-go" {
			t.Errorf("envelope context = %v", s.batch.Context)
		}
		if fmt.Sprint(s.ids()) != "[m0 m1 m2 m3 m4]" {
			t.Errorf("attempt %d messageIds %v", i, s.ids())
		}
	}
}

func TestBackoffWaitsAndRetryCount(t *testing.T) {
	for _, n := range []int{0, 1, 3, 10} {
		t.Run(fmt.Sprintf("RetryCount=%d", n), func(t *testing.T) {
			r := newRig(t).policy(func(p *retry.Policy) { p.RetryCount = n })
			r.tr.rule = func(sent) answer { return status(503) }
			err := one(t, r.deliver(context.Background(), 1), 1)
			if got := len(r.tr.requests()); got != n+1 {
				t.Fatalf("%d requests, want %d", got, n+1)
			}
			if !errors.Is(err, retry.ErrRetriesExhausted) {
				t.Fatalf("error %v, want ErrRetriesExhausted", err)
			}
			var he *HTTPError
			if !errors.As(err, &he) || he.StatusCode != 503 {
				t.Fatalf("error %v does not carry the last HTTP 503", err)
			}
			var be *BatchError
			if !errors.As(err, &be) || be.Attempts != n+1 {
				t.Fatalf("error %#v, want BatchError with %d attempts", err, n+1)
			}
			// Jitter-free waits: 250ms, 500ms, 1s, ... capped at 30s (cap/2).
			sleeps := r.clock.Sleeps()
			if len(sleeps) != n {
				t.Fatalf("slept %v, want %d waits", sleeps, n)
			}
			for i, s := range sleeps {
				want := min(250*time.Millisecond<<i, 30*time.Second)
				if s != want {
					t.Errorf("wait %d = %v, want %v", i+1, s, want)
				}
			}
			if c := r.up.Counters(); c.BackoffRetries != int64(n) || c.Attempts != int64(n+1) || c.BatchesFailed != 1 {
				t.Errorf("counters %+v", c)
			}
		})
	}
}

func TestRateLimitPathWaitsRetryAfterUncounted(t *testing.T) {
	// RetryCount 1, yet five rate-limited answers are retried: that path
	// does not spend the count.
	r := newRig(t, retryAfter(429, "7"), retryAfter(503, "1"), retryAfter(429, "999"),
		retryAfter(529, "2"), retryAfter(429, "3"), status(500), status(200))
	r.policy(func(p *retry.Policy) { p.RetryCount = 1; p.RateLimitRetryAfterCap = 60 * time.Second })
	if err := one(t, r.deliver(context.Background(), 1), 1); err != nil {
		t.Fatalf("delivery failed: %v", err)
	}
	want := []time.Duration{7 * time.Second, time.Second, 60 * time.Second, 2 * time.Second, 3 * time.Second, 250 * time.Millisecond}
	if got := r.clock.Sleeps(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("waits = %v, want %v", got, want)
	}
	c := r.up.Counters()
	if c.RateLimitRetries != 5 || c.BackoffRetries != 1 || c.RateLimitedWaits != 5 {
		t.Fatalf("counters %+v", c)
	}
}

func TestInvalidRetryAfterTakesBackoffPath(t *testing.T) {
	for _, v := range []string{"-1", "0", "1.5", "soon", "Wed, 21 Oct 2015 07:28:00 GMT"} {
		t.Run(v, func(t *testing.T) {
			r := newRig(t, retryAfter(429, v)).policy(func(p *retry.Policy) { p.RetryCount = 0 })
			err := one(t, r.deliver(context.Background(), 1), 1)
			if !errors.Is(err, retry.ErrRetriesExhausted) || len(r.tr.requests()) != 1 {
				t.Fatalf("Retry-After %q with RetryCount 0: %v after %d requests; want the counted path", v, err, len(r.tr.requests()))
			}
		})
	}
}

func TestBudgetsEndTheBatch(t *testing.T) {
	t.Run("backoff", func(t *testing.T) {
		r := newRig(t).policy(func(p *retry.Policy) { p.RetryCount = 100; p.MaxTotalBackoffDuration = 2 * time.Second })
		r.tr.rule = func(sent) answer { return status(500) }
		err := one(t, r.deliver(context.Background(), 1), 1)
		if !errors.Is(err, retry.ErrBackoffBudgetExceeded) {
			t.Fatalf("error %v, want ErrBackoffBudgetExceeded", err)
		}
		// 250ms + 500ms + 1s = 1.75s; the next 2s wait does not fit and is not slept.
		if got := r.clock.Sleeps(); fmt.Sprint(got) != "[250ms 500ms 1s]" {
			t.Fatalf("waits = %v", got)
		}
	})
	t.Run("rate limit", func(t *testing.T) {
		r := newRig(t).policy(func(p *retry.Policy) { p.MaxRateLimitDuration = 10 * time.Second })
		r.tr.rule = func(sent) answer { return retryAfter(429, "4") }
		err := one(t, r.deliver(context.Background(), 1), 1)
		if !errors.Is(err, retry.ErrRateLimitBudgetExceeded) {
			t.Fatalf("error %v, want ErrRateLimitBudgetExceeded", err)
		}
		var he *HTTPError
		if !errors.As(err, &he) || he.RetryAfter != 4*time.Second {
			t.Fatalf("error %v does not carry the Retry-After", err)
		}
		if got := r.clock.Sleeps(); fmt.Sprint(got) != "[4s 4s]" {
			t.Fatalf("waits = %v, want [4s 4s] then an immediate failure", got)
		}
	})
}

func TestFatalStatusesFailAtOnce(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 422, 501, 505, 511, 100} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			r := newRig(t, answer{status: code, body: "no such thing", header: map[string][]string{"Retry-After": {"5"}}})
			err := one(t, r.deliver(context.Background(), 2), 2)
			if !errors.Is(err, retry.ErrFatalStatus) || len(r.tr.requests()) != 1 {
				t.Fatalf("status %d: %v after %d requests", code, err, len(r.tr.requests()))
			}
			var he *HTTPError
			if !errors.As(err, &he) || he.StatusCode != code || he.Body != "no such thing" || he.RetryAfter != 0 {
				t.Fatalf("status %d: HTTPError %+v", code, he)
			}
			if len(r.clock.Sleeps()) != 0 {
				t.Fatalf("slept %v before a fatal failure", r.clock.Sleeps())
			}
		})
	}
}

func TestRedirectRule(t *testing.T) {
	moved := func(code int) answer {
		return answer{status: code, header: http.Header{"Location": {"https://elsewhere.test/v1/batch"}}}
	}
	for _, code := range []int{301, 302, 303} {
		t.Run(fmt.Sprintf("%d is not followed", code), func(t *testing.T) {
			r := newRig(t, moved(code))
			err := one(t, r.deliver(context.Background(), 1), 1)
			var he *HTTPError
			if !errors.Is(err, retry.ErrRedirect) || !errors.As(err, &he) || he.Location != "https://elsewhere.test/v1/batch" {
				t.Fatalf("error %v, want ErrRedirect with the Location", err)
			}
			if len(r.tr.requests()) != 1 {
				t.Fatalf("%d requests, want 1", len(r.tr.requests()))
			}
		})
	}
	for _, code := range []int{307, 308} {
		t.Run(fmt.Sprintf("%d is followed with method and body", code), func(t *testing.T) {
			r := newRig(t, moved(code))
			if err := one(t, r.deliver(context.Background(), 2), 2); err != nil {
				t.Fatalf("delivery failed: %v", err)
			}
			reqs := r.tr.requests()
			if len(reqs) != 2 || reqs[1].method != http.MethodPost || !bytes.Equal(reqs[0].raw, reqs[1].raw) {
				t.Fatalf("requests %+v, want the same POST twice", reqs)
			}
		})
	}
	t.Run("a user client that follows 301 into a GET", func(t *testing.T) {
		r := newRig(t, moved(301))
		r.up.client = &http.Client{Transport: r.tr} // net/http's default policy follows 301
		err := one(t, r.deliver(context.Background(), 1), 1)
		var he *HTTPError
		if !errors.Is(err, retry.ErrRedirect) || !errors.As(err, &he) || he.Method != http.MethodGet || he.StatusCode != 200 {
			t.Fatalf("error %v, want ErrRedirect for the 200 answered to a GET", err)
		}
		if he.Location != "https://elsewhere.test/v1/batch" {
			t.Fatalf("Location %q, want the URL the GET went to", he.Location)
		}
	})
}

func TestTransportErrorsAreRetriedAndReportTheirPhase(t *testing.T) {
	for _, p := range []Phase{PhaseNotConnected, PhaseConnected, PhaseWritten} {
		t.Run(p.String(), func(t *testing.T) {
			r := newRig(t, dropped(p), dropped(p)).policy(func(pol *retry.Policy) { pol.RetryCount = 1 })
			err := one(t, r.deliver(context.Background(), 1), 1)
			var te *TransportError
			if !errors.Is(err, retry.ErrRetriesExhausted) || !errors.As(err, &te) {
				t.Fatalf("error %v, want exhausted with a TransportError", err)
			}
			if te.Phase != p || te.Written() != (p == PhaseWritten) {
				t.Fatalf("phase %v written %v, want %v", te.Phase, te.Written(), p)
			}
			c := r.up.Counters()
			if p.Written() && c.TransportErrorsWritten != 2 || !p.Written() && c.TransportErrorsNotWritten != 2 {
				t.Fatalf("counters %+v", c)
			}
			if len(r.tr.requests()) != 2 {
				t.Fatalf("%d requests, want 2", len(r.tr.requests()))
			}
		})
	}
}

func TestTooLargeSplitsUntilDelivered(t *testing.T) {
	r := newRig(t)
	// The server takes at most 3 events per batch.
	r.tr.rule = func(s sent) answer {
		if len(s.batch.Batch) > 3 {
			return status(413)
		}
		return status(200)
	}
	out := r.deliver(context.Background(), 10)
	covered := 0
	for _, o := range out {
		if o.err != nil {
			t.Fatalf("events [%d, %d) failed: %v", o.lo, o.hi, o.err)
		}
		if o.lo != covered {
			t.Fatalf("reports %+v leave a gap", out)
		}
		covered = o.hi
	}
	if covered != 10 {
		t.Fatalf("reports %+v do not cover 10 events", out)
	}
	delivered := map[string]int{}
	for _, s := range r.tr.requests() {
		if len(s.batch.Batch) > 3 {
			if s.header.Get("X-Retry-Count") != "" {
				t.Error("a split half carries the X-Retry-Count of its parent")
			}
			continue
		}
		if s.header.Get("X-Retry-Count") != "" {
			t.Errorf("first attempt of a half carries X-Retry-Count %q", s.header.Get("X-Retry-Count"))
		}
		for _, id := range s.ids() {
			delivered[id]++
		}
	}
	for i := range 10 {
		if delivered[fmt.Sprintf("m%d", i)] != 1 {
			t.Fatalf("delivered = %v, want each of m0..m9 once", delivered)
		}
	}
	if r.up.Counters().Splits == 0 {
		t.Fatal("no split counted")
	}
}

func TestTooLargeSingleEventFails(t *testing.T) {
	r := newRig(t)
	r.tr.rule = func(sent) answer { return status(413) }
	out := r.deliver(context.Background(), 2)
	if len(out) != 2 {
		t.Fatalf("reports %+v, want one per half", out)
	}
	for _, o := range out {
		var he *HTTPError
		if !errors.Is(o.err, retry.ErrFatalStatus) || !errors.As(o.err, &he) || he.StatusCode != 413 {
			t.Fatalf("single event 413: %v", o.err)
		}
	}
	// 1 whole + 2 halves; nothing resent whole.
	if got := len(r.tr.requests()); got != 3 {
		t.Fatalf("%d requests, want 3", got)
	}
}

func TestOversizedBodyIsSplitBeforeSending(t *testing.T) {
	r := newRig(t)
	big := bytes.Repeat([]byte("x"), 30_000)
	evs := make([][]byte, 20) // 20 × 30 KB = 600 KB > 500,000
	for i := range evs {
		evs[i] = fmt.Appendf(nil, `{"messageId":"m%d","pad":"%s"}`, i, big)
	}
	var out []outcome
	slot, err := r.up.Acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r.up.Deliver(context.Background(), slot, evs, func(lo, hi int, err error) { out = append(out, outcome{lo, hi, err}) })
	for _, o := range out {
		if o.err != nil {
			t.Fatal(o.err)
		}
	}
	for _, s := range r.tr.requests() {
		if len(s.body) > MaxBodyBytes {
			t.Fatalf("sent a body of %d bytes", len(s.body))
		}
	}
	if len(r.tr.requests()) != 2 {
		t.Fatalf("%d requests, want the two halves", len(r.tr.requests()))
	}
}

func TestCancelDuringBackoffReportsTheCause(t *testing.T) {
	r := newRig(t, status(503))
	ctx, cancel := context.WithCancelCause(context.Background())
	shutdown := errors.New("shutdown deadline")
	r.up.client.Transport = cancelAfter{r.tr, func() { cancel(shutdown) }}
	err := one(t, r.deliver(ctx, 2), 2)
	var be *BatchError
	if !errors.Is(err, shutdown) || !errors.As(err, &be) || be.Attempts != 1 {
		t.Fatalf("error %v, want the cancel cause after 1 attempt", err)
	}
	var he *HTTPError
	if !errors.As(err, &he) || he.StatusCode != 503 {
		t.Fatalf("error %v lost the last attempt's error", err)
	}
}

// cancelAfter cancels a context once its first response is back.
type cancelAfter struct {
	tr     *fakeTransport
	cancel func()
}

func (c cancelAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.tr.RoundTrip(req)
	c.cancel()
	return resp, err
}

func TestEventBytesLeavesRoomForTheEnvelope(t *testing.T) {
	r := newRig(t)
	evs := events(1)
	body := newBatchBody(evs, r.up.context, time.Now())
	if got, want := body.Len()-len(evs[0]), MaxBodyBytes-r.up.EventBytes(); got != want {
		t.Fatalf("envelope is %d bytes, EventBytes assumes %d", got, want)
	}
}

func TestErrorTexts(t *testing.T) {
	be := &BatchError{Reason: retry.ErrRetriesExhausted, Attempts: 11, Err: &HTTPError{StatusCode: 503, Body: "busy", RetryAfter: 0}}
	if got, want := be.Error(), `analytics: retries exhausted after 11 attempts: HTTP 503 Service Unavailable: "busy"`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	be = &BatchError{Reason: context.DeadlineExceeded}
	if got, want := be.Error(), "analytics: context deadline exceeded (never sent)"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	te := &TransportError{Phase: PhaseWritten, Err: errors.New("EOF")}
	if got, want := te.Error(), "transport error (request written, no response): EOF"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestAppendTimeMatchesTheLayout(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(2026, 11, 29, 12, 34, 56, 789_999_999, time.UTC),
		time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.FixedZone("X", -7200)),
		time.Date(2024, 2, 29, 1, 2, 3, 4_000_000, time.FixedZone("Y", 19800)),
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Now(),
	} {
		want := tm.UTC().Format(TimeLayout)
		if got := string(AppendTime(nil, tm)); got != want {
			t.Errorf("AppendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

func TestPhaseIsThatOfTheLastSend(t *testing.T) {
	// A followed 307 reaches "responding" on its first hop; if the second
	// hop fails before it is written, the request was not written.
	r := newRig(t, answer{status: 307, header: http.Header{"Location": {"http://elsewhere.test/v1/batch"}}}, dropped(PhaseConnected))
	r.policy(func(p *retry.Policy) { p.RetryCount = 0 })
	err := one(t, r.deliver(context.Background(), 1), 1)
	var te *TransportError
	if !errors.As(err, &te) || te.Phase != PhaseConnected || te.Written() {
		t.Fatalf("error %v, want a TransportError of a request not written", err)
	}
	if c := r.up.Counters(); c.TransportErrorsNotWritten != 1 || c.TransportErrorsWritten != 0 {
		t.Fatalf("counters %+v", c)
	}
}

func TestBodyReaderWriterAndLenAgree(t *testing.T) {
	ctx := []byte(`{"library":{"name":"analytics-go","version":"t"}}`)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	for _, n := range []int{0, 1, 2, 7, 250} {
		b := newBatchBody(events(n), ctx, at)
		var want bytes.Buffer
		want.WriteString(`{"batch":[`)
		for i, e := range events(n) {
			if i > 0 {
				want.WriteByte(',')
			}
			want.Write(e)
		}
		want.WriteString(`],"sentAt":"2026-01-02T03:04:05.006Z","context":` + string(ctx) + `}`)
		var written bytes.Buffer
		if _, err := b.WriteTo(&written); err != nil {
			t.Fatal(err)
		}
		// Read in awkward chunk sizes to cross piece boundaries.
		var read []byte
		r := b.Reader()
		buf := make([]byte, 7)
		for {
			k, err := r.Read(buf)
			read = append(read, buf[:k]...)
			if err != nil {
				break
			}
		}
		if written.String() != want.String() || string(read) != want.String() || b.Len() != want.Len() {
			t.Fatalf("%d events:\nwant    %s\nwritten %s\nread    %s\nLen %d, want %d", n, want.String(), written.String(), read, b.Len(), want.Len())
		}
	}
}

func TestRedactorScrubsTheWriteKey(t *testing.T) {
	r := newScrubber("wk-secret").replacer
	basic := base64.StdEncoding.EncodeToString([]byte("wk-secret:"))
	raw := base64.RawStdEncoding.EncodeToString([]byte("wk-secret:"))
	in := "echo: Authorization: Basic " + basic + " raw=" + raw + " key=wk-secret end"
	got := r.Replace(in)
	if strings.Contains(got, "wk-secret") || strings.Contains(got, basic) || strings.Contains(got, raw) {
		t.Fatalf("not scrubbed: %s", got)
	}
	if want := "echo: Authorization: Basic [REDACTED] raw=[REDACTED] key=[REDACTED] end"; got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
}

func TestErrorBodyEchoingTheKeyIsScrubbed(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte("wk-secret:"))
	r := newRig(t, answer{status: 401, body: "bad Authorization: Basic " + basic,
		header: http.Header{"Location": {"https://x.test/?k=wk-secret"}}})
	err := one(t, r.deliver(context.Background(), 1), 1)
	if strings.Contains(err.Error(), basic) || strings.Contains(err.Error(), "wk-secret") || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Fatalf("error %q leaks the write key", err)
	}
}

func TestRedirectDowngradeIsRefused(t *testing.T) {
	req := func(u string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, u, nil)
		r.Response = &http.Response{StatusCode: 307}
		return r
	}
	via := []*http.Request{req("https://api.test/v1/batch")}
	if err := CheckRedirect(req("http://api.test/v1/batch"), via); err != http.ErrUseLastResponse {
		t.Fatalf("https to http: %v, want not followed", err)
	}
	if err := CheckRedirect(req("https://other.test/v1/batch"), via); err != nil {
		t.Fatalf("https to https: %v, want followed", err)
	}
	plain := []*http.Request{req("http://api.test/v1/batch")}
	if err := CheckRedirect(req("http://api.test/v2"), plain); err != nil {
		t.Fatalf("http to http: %v, want followed", err)
	}

	// A user's client keeps its own policy, behind the guard.
	calls := 0
	user := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { calls++; return nil }}
	g := GuardRedirects(user)
	if g == user || g.CheckRedirect(req("http://api.test/v1/batch"), via) != http.ErrUseLastResponse || calls != 0 {
		t.Fatal("the guard did not refuse the downgrade before the user's policy")
	}
	if err := g.CheckRedirect(req("https://api.test/v2"), via); err != nil || calls != 1 {
		t.Fatalf("the user's policy was not applied: %v, %d calls", err, calls)
	}
	if user.CheckRedirect == nil || g.Transport != user.Transport {
		t.Fatal("the user's client was changed, or the copy does not share its transport")
	}
	// No policy: up to 10 redirects followed, as by the SDK's own client.
	d := GuardRedirects(&http.Client{})
	hops := func(n int) []*http.Request {
		v := make([]*http.Request, n)
		for i := range v {
			v[i] = via[0]
		}
		return v
	}
	if d.CheckRedirect(req("https://a.test"), hops(10)) != nil || d.CheckRedirect(req("https://a.test"), hops(11)) == nil {
		t.Fatal("the default policy is not 10 redirects")
	}
	// The SDK's own rule: the same bound.
	if CheckRedirect(req("https://a.test"), hops(10)) != nil || CheckRedirect(req("https://a.test"), hops(11)) == nil {
		t.Fatal("CheckRedirect does not follow exactly 10 redirects")
	}
}
