package consumer

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/defaults"
	"github.com/dualpath/analytics-go/retry"
)

func TestHeadersOnEveryAttempt(t *testing.T) {
	for _, gzipOn := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gzipOn), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, status(500), retryAfter(429, "1"))
				r.up.cfg.Gzip = gzipOn
				require.NoError(t, one(t, r.deliver(context.Background(), 3), 3))
				reqs := r.tr.requests()
				require.Len(t, reqs, 3)
				wantAuth := "Basic " + base64.StdEncoding.EncodeToString([]byte("wk-secret:"))
				for i, s := range reqs {
					h := s.header
					assert.Equal(t, "application/json", h.Get("Content-Type"), "attempt %d", i)
					assert.Equal(t, wantAuth, h.Get("Authorization"), "attempt %d", i)
					assert.Equal(t, "analytics-go/test", h.Get("User-Agent"), "attempt %d", i)
					if gzipOn {
						assert.Equal(t, "gzip", h.Get("Content-Encoding"), "attempt %d", i)
						assert.NotEqual(t, s.raw, s.body, "attempt %d: body not compressed", i)
					} else {
						assert.NotContains(t, h, "Content-Encoding", "attempt %d", i)
					}
					for _, k := range []string{"Idempotency-Key", "X-Idempotency-Key"} {
						assert.NotContains(t, h, k, "attempt %d", i)
					}
				}
			})
		})
	}
}

func TestXRetryCountAcrossBothPaths(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, status(503), retryAfter(429, "2"), dropped(PhaseWritten), retryAfter(503, "1"), status(500))
		require.NoError(t, one(t, r.deliver(context.Background(), 2), 2))
		reqs := r.tr.requests()
		require.Len(t, reqs, 6)
		assert.NotContains(t, reqs[0].header, "X-Retry-Count", "the first attempt")
		for i := 1; i < len(reqs); i++ {
			assert.Equal(t, strconv.Itoa(i), reqs[i].header.Get("X-Retry-Count"), "attempt %d", i+1)
		}
	})
}

func TestBodyIdenticalOnEveryAttemptButSentAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, status(503), status(502), retryAfter(429, "3"))
		require.NoError(t, one(t, r.deliver(context.Background(), 5), 5))
		reqs := r.tr.requests()
		require.Len(t, reqs, 4)
		firstAt, err := time.Parse(defaults.TimeLayout, reqs[0].batch.SentAt)
		require.NoError(t, err)
		for i, s := range reqs {
			// Everything up to sentAt is the same bytes.
			head := s.body[:bytes.Index(s.body, []byte(`,"sentAt":`))]
			first := reqs[0].body[:bytes.Index(reqs[0].body, []byte(`,"sentAt":`))]
			assert.Equal(t, string(first), string(head), "attempt %d: the events", i)
			at, err := time.Parse(defaults.TimeLayout, s.batch.SentAt)
			require.NoError(t, err, "attempt %d sentAt %q", i, s.batch.SentAt)
			assert.WithinDuration(t, s.at.UTC().Truncate(time.Millisecond), at, 0, "attempt %d: sentAt is the attempt's time", i)
			if i > 0 {
				assert.True(t, at.After(firstAt), "attempt %d sentAt %v, want after the first's %v", i, at, firstAt)
			}
			lib, ok := s.batch.Context["library"].(map[string]any)
			require.True(t, ok, "attempt %d: envelope context %v has no library", i, s.batch.Context)
			assert.Equal(t, "analytics-go", lib["name"], "attempt %d: the envelope's library", i)
			assert.Equal(t, []string{"m0", "m1", "m2", "m3", "m4"}, s.ids(), "attempt %d: messageIds", i)
		}
	})
}

func TestBackoffWaitsAndRetryCount(t *testing.T) {
	for _, n := range []int{0, 1, 3, 10} {
		t.Run(fmt.Sprintf("RetryCount=%d", n), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t).policy(func(p *retry.Policy) { p.RetryCount = n })
				r.tr.rule = func(sent) answer { return status(503) }
				err := one(t, r.deliver(context.Background(), 1), 1)
				assert.Len(t, r.tr.requests(), n+1)
				assert.ErrorIs(t, err, retry.ErrRetriesExhausted)
				var he *HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, 503, he.StatusCode, "the last attempt's status")
				var be *BatchError
				require.ErrorAs(t, err, &be)
				assert.Equal(t, n+1, be.Attempts)
				// Jitter-free waits: 250ms, 500ms, 1s, ... capped at 30s (cap/2).
				var want []time.Duration
				for i := range n {
					want = append(want, min(250*time.Millisecond<<i, 30*time.Second))
				}
				assert.Equal(t, want, r.waits())
				c := r.up.Counters()
				assert.Equal(t, int64(n), c.Retries.Backoff)
				assert.Equal(t, int64(n+1), c.Attempts)
				assert.Equal(t, int64(1), c.BatchesFailed)
			})
		})
	}
}

func TestRateLimitPathWaitsRetryAfterUncounted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// RetryCount 1, yet five rate-limited answers are retried: that
		// path does not spend the count.
		r := newRig(t, retryAfter(429, "7"), retryAfter(503, "1"), retryAfter(429, "999"),
			retryAfter(529, "2"), retryAfter(429, "3"), status(500), status(200))
		r.policy(func(p *retry.Policy) { p.RetryCount = 1; p.RateLimitRetryAfterCap = 60 * time.Second })
		require.NoError(t, one(t, r.deliver(context.Background(), 1), 1))
		want := []time.Duration{7 * time.Second, time.Second, 60 * time.Second, 2 * time.Second, 3 * time.Second, 250 * time.Millisecond}
		assert.Equal(t, want, r.waits())
		c := r.up.Counters()
		assert.Equal(t, int64(5), c.Retries.RateLimit)
		assert.Equal(t, int64(1), c.Retries.Backoff)
		assert.Equal(t, int64(5), c.RateLimitedWaits)
	})
}

func TestInvalidRetryAfterTakesBackoffPath(t *testing.T) {
	// The bubble's clock starts in 2000: the date is in the past.
	for _, v := range []string{"-1", "0", "1.5", "soon", "Sun, 06 Nov 1994 08:49:37 GMT"} {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, retryAfter(429, v)).policy(func(p *retry.Policy) { p.RetryCount = 0 })
				err := one(t, r.deliver(context.Background(), 1), 1)
				assert.ErrorIs(t, err, retry.ErrRetriesExhausted, "with RetryCount 0, want the counted path")
				assert.Len(t, r.tr.requests(), 1)
			})
		})
	}
}

func TestBudgetsEndTheBatch(t *testing.T) {
	t.Run("backoff", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t).policy(func(p *retry.Policy) { p.RetryCount = 100; p.MaxTotalBackoffDuration = 2 * time.Second })
			r.tr.rule = func(sent) answer { return status(500) }
			err := one(t, r.deliver(context.Background(), 1), 1)
			assert.ErrorIs(t, err, retry.ErrBackoffBudgetExceeded)
			// 250ms + 500ms + 1s = 1.75s; the next 2s wait does not fit and is not slept.
			assert.Equal(t, []time.Duration{250 * time.Millisecond, 500 * time.Millisecond, time.Second}, r.waits())
		})
	})
	t.Run("rate limit", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t).policy(func(p *retry.Policy) { p.MaxRateLimitDuration = 10 * time.Second })
			r.tr.rule = func(sent) answer { return retryAfter(429, "4") }
			err := one(t, r.deliver(context.Background(), 1), 1)
			assert.ErrorIs(t, err, retry.ErrRateLimitBudgetExceeded)
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, 4*time.Second, he.RetryAfter)
			// The third wait would end 12s into a 10s budget: it fails at once.
			assert.Equal(t, []time.Duration{4 * time.Second, 4 * time.Second}, r.waits())
		})
	})
}

func TestFatalStatusesFailAtOnce(t *testing.T) {
	for _, code := range []int{400, 401, 403, 404, 422, 501, 505, 511, 100} {
		t.Run(strconv.Itoa(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, answer{status: code, body: "no such thing", header: map[string][]string{"Retry-After": {"5"}}})
				err := one(t, r.deliver(context.Background(), 2), 2)
				assert.ErrorIs(t, err, retry.ErrFatalStatus)
				assert.Len(t, r.tr.requests(), 1)
				var he *HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, code, he.StatusCode)
				assert.Equal(t, "no such thing", he.Body)
				assert.Zero(t, he.RetryAfter, "Retry-After on a fatal status")
				assert.Empty(t, r.waits(), "waits before a fatal failure")
			})
		})
	}
}

func TestRedirectRule(t *testing.T) {
	moved := func(code int) answer {
		return answer{status: code, header: http.Header{"Location": {"https://elsewhere.test/v1/batch"}}}
	}
	for _, code := range []int{301, 302, 303} {
		t.Run(fmt.Sprintf("%d is not followed", code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, moved(code))
				err := one(t, r.deliver(context.Background(), 1), 1)
				assert.ErrorIs(t, err, retry.ErrRedirect)
				var he *HTTPError
				require.ErrorAs(t, err, &he)
				assert.Equal(t, "https://elsewhere.test/v1/batch", he.Location)
				assert.Len(t, r.tr.requests(), 1)
			})
		})
	}
	for _, code := range []int{307, 308} {
		t.Run(fmt.Sprintf("%d is followed with method and body", code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, moved(code))
				require.NoError(t, one(t, r.deliver(context.Background(), 2), 2))
				reqs := r.tr.requests()
				require.Len(t, reqs, 2)
				assert.Equal(t, http.MethodPost, reqs[1].method, "the followed request's method")
				assert.Equal(t, reqs[0].raw, reqs[1].raw, "the followed request's body")
			})
		})
	}
	t.Run("a user client that follows 301 into a GET", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r := newRig(t, moved(301))
			r.up.cfg.Client = &http.Client{Transport: r.tr} // net/http's default policy follows 301
			err := one(t, r.deliver(context.Background(), 1), 1)
			assert.ErrorIs(t, err, retry.ErrRedirect)
			var he *HTTPError
			require.ErrorAs(t, err, &he)
			assert.Equal(t, http.MethodGet, he.Method)
			assert.Equal(t, 200, he.StatusCode, "what the GET was answered")
			assert.Equal(t, "https://elsewhere.test/v1/batch", he.Location, "the URL the GET went to")
		})
	})
}

func TestTransportErrorsAreRetriedAndReportTheirPhase(t *testing.T) {
	for _, p := range []Phase{PhaseNotConnected, PhaseConnected, PhaseWritten} {
		t.Run(p.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := newRig(t, dropped(p), dropped(p)).policy(func(pol *retry.Policy) { pol.RetryCount = 1 })
				err := one(t, r.deliver(context.Background(), 1), 1)
				assert.ErrorIs(t, err, retry.ErrRetriesExhausted)
				var te *TransportError
				require.ErrorAs(t, err, &te)
				assert.Equal(t, p, te.Phase)
				assert.Equal(t, p == PhaseWritten, te.Written())
				c := r.up.Counters()
				if p.Written() {
					assert.Equal(t, int64(2), c.TransportErrors.Written)
				} else {
					assert.Equal(t, int64(2), c.TransportErrors.NotWritten)
				}
				assert.Len(t, r.tr.requests(), 2)
			})
		})
	}
}

func TestTooLargeSplitsUntilDelivered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
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
			assert.NoError(t, o.err, "events [%d, %d)", o.lo, o.hi)
			require.Equal(t, covered, o.lo, "reports %v leave a gap", out)
			covered = o.hi
		}
		assert.Equal(t, 10, covered, "reports %v cover", out)
		delivered := map[string]int{}
		for _, s := range r.tr.requests() {
			if len(s.batch.Batch) > 3 {
				assert.Empty(t, s.header.Get("X-Retry-Count"), "a split half carries the X-Retry-Count of its parent")
				continue
			}
			assert.Empty(t, s.header.Get("X-Retry-Count"), "the first attempt of a half")
			for _, id := range s.ids() {
				delivered[id]++
			}
		}
		for i := range 10 {
			id := fmt.Sprintf("m%d", i)
			assert.Equal(t, 1, delivered[id], "deliveries of %s", id)
		}
		assert.NotZero(t, r.up.Counters().Splits, "splits counted")
	})
}

func TestTooLargeSingleEventFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		r.tr.rule = func(sent) answer { return status(413) }
		out := r.deliver(context.Background(), 2)
		require.Len(t, out, 2, "reports %v, want one per half", out)
		for _, o := range out {
			assert.ErrorIs(t, o.err, retry.ErrFatalStatus)
			var he *HTTPError
			require.ErrorAs(t, o.err, &he)
			assert.Equal(t, 413, he.StatusCode)
		}
		// 1 whole + 2 halves; nothing resent whole.
		assert.Len(t, r.tr.requests(), 3)
	})
}

func TestOversizedBodyIsSplitBeforeSending(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		big := bytes.Repeat([]byte("x"), 30_000)
		evs := make([][]byte, 20) // 20 × 30 KB = 600 KB > 500,000
		for i := range evs {
			evs[i] = fmt.Appendf(nil, `{"messageId":"m%d","pad":"%s"}`, i, big)
		}
		for _, o := range r.deliverEvents(context.Background(), evs) {
			assert.NoError(t, o.err, "events [%d, %d)", o.lo, o.hi)
		}
		for _, s := range r.tr.requests() {
			assert.LessOrEqual(t, len(s.body), maxBodyBytes, "a body sent")
		}
		assert.Len(t, r.tr.requests(), 2, "requests, want the two halves")
	})
}

// A batch of more events than Segment takes in a request, 2,500 (past
// them it answers 200 but rejects the events: segment-docs, HTTP API
// source, PR #7023), is split before it is sent, however small its body:
// whoever calls Deliver, no request holds more.
func TestBatchOverTheEventLimitIsSplitBeforeSending(t *testing.T) {
	const segmentBatchEvents = 2_500
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t)
		const n = 4_000 // of about 100 bytes: 400 KB, under the body limit
		out := r.deliver(context.Background(), n)
		covered := 0
		for _, o := range out {
			assert.NoError(t, o.err, "events [%d, %d)", o.lo, o.hi)
			require.Equal(t, covered, o.lo, "reports %v leave a gap", out)
			covered = o.hi
		}
		assert.Equal(t, n, covered, "reports %v cover", out)
		delivered := map[string]int{}
		for i, s := range r.tr.requests() {
			assert.LessOrEqual(t, len(s.batch.Batch), segmentBatchEvents, "events of request %d", i)
			for _, id := range s.ids() {
				delivered[id]++
			}
		}
		assert.Len(t, delivered, n, "events sent")
		for id, n := range delivered {
			assert.Equal(t, 1, n, "requests that carried %s", id)
		}
	})
}

func TestCancelDuringBackoffReportsTheCause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := newRig(t, status(503))
		ctx, cancel := context.WithCancelCause(context.Background())
		shutdown := errors.New("shutdown deadline")
		r.up.cfg.Client.Transport = cancelAfter{r.tr, func() { cancel(shutdown) }}
		err := one(t, r.deliver(ctx, 2), 2)
		assert.ErrorIs(t, err, shutdown)
		var be *BatchError
		require.ErrorAs(t, err, &be)
		assert.Equal(t, 1, be.Attempts)
		var he *HTTPError
		require.ErrorAs(t, err, &he, "the last attempt's error")
		assert.Equal(t, 503, he.StatusCode)
	})
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
	body := newBatchBody(evs, r.up.env, "", time.Now())
	assert.Equal(t, maxBodyBytes-r.up.eventBytes(), body.Len()-len(evs[0]), "the envelope's size, as eventBytes assumes it")
}

// With JSONTimes and BatchMessageID, the envelope's size is the length of
// its longest tail: a sentAt with nine fraction digits and an offset, and
// a messageId; a shorter sentAt leaves room to spare.
func TestV3EnvelopeSizeIsItsLongest(t *testing.T) {
	env := envelope{context: []byte(`{"library":{}}`), jsonTimes: true, batchID: true}
	evs := events(1)
	id := "6ba7b810-9dad-41d1-80b4-00c04fd430c8"
	longest := time.Date(2026, 1, 2, 3, 4, 5, 123_456_789, time.FixedZone("", -7*3600))
	b := newBatchBody(evs, env, id, longest)
	assert.Equal(t, env.size(), b.Len()-len(evs[0]))
	w, err := io.ReadAll(b.Reader())
	require.NoError(t, err)
	assert.Equal(t, `{"batch":[`+string(evs[0])+`],"messageId":"`+id+`","sentAt":"2026-01-02T03:04:05.123456789-07:00","context":{"library":{}}}`, string(w))
	short := newBatchBody(evs, env, id, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	assert.Less(t, short.Len()-len(evs[0]), env.size())
}

func TestErrorTexts(t *testing.T) {
	be := &BatchError{Reason: retry.ErrRetriesExhausted, Attempts: 11, Err: &HTTPError{StatusCode: 503, Body: "busy", RetryAfter: 0}}
	assert.Equal(t, `analytics: retries exhausted after 11 attempts: HTTP 503 Service Unavailable: "busy"`, be.Error())
	be = &BatchError{Reason: context.DeadlineExceeded}
	assert.Equal(t, "analytics: context deadline exceeded (never sent)", be.Error())
	te := &TransportError{Phase: PhaseWritten, Err: errors.New("EOF")}
	assert.Equal(t, "transport error (request written, no response): EOF", te.Error())
}

func TestPhaseIsThatOfTheLastSend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A followed 307 reaches "responding" on its first hop; if the
		// second hop fails before it is written, the request was not
		// written.
		r := newRig(t, answer{status: 307, header: http.Header{"Location": {"http://elsewhere.test/v1/batch"}}}, dropped(PhaseConnected))
		r.policy(func(p *retry.Policy) { p.RetryCount = 0 })
		err := one(t, r.deliver(context.Background(), 1), 1)
		var te *TransportError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, PhaseConnected, te.Phase)
		assert.False(t, te.Written(), "written")
		c := r.up.Counters()
		assert.Equal(t, int64(1), c.TransportErrors.NotWritten)
		assert.Zero(t, c.TransportErrors.Written)
	})
}

func TestBodyReaderAndLenAgree(t *testing.T) {
	ctx := []byte(`{"library":{"name":"analytics-go","version":"t"}}`)
	at := time.Date(2026, 1, 2, 3, 4, 5, 6_000_000, time.UTC)
	for _, n := range []int{0, 1, 2, 7, 250} {
		b := newBatchBody(events(n), envelope{context: ctx}, "", at)
		var want bytes.Buffer
		want.WriteString(`{"batch":[`)
		for i, e := range events(n) {
			if i > 0 {
				want.WriteByte(',')
			}
			want.Write(e)
		}
		want.WriteString(`],"sentAt":"2026-01-02T03:04:05.006Z","context":` + string(ctx) + `}`)
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
		assert.Equal(t, want.String(), string(read), "%d events: Reader", n)
		assert.Equal(t, want.Len(), b.Len(), "%d events: Len", n)
	}
}

func TestRedactorScrubsTheWriteKey(t *testing.T) {
	r := newScrubber("wk-secret").replacer
	basic := base64.StdEncoding.EncodeToString([]byte("wk-secret:"))
	raw := base64.RawStdEncoding.EncodeToString([]byte("wk-secret:"))
	in := "echo: Authorization: Basic " + basic + " raw=" + raw + " key=wk-secret end"
	got := r.Replace(in)
	assert.NotContains(t, got, "wk-secret")
	assert.NotContains(t, got, basic)
	assert.NotContains(t, got, raw)
	assert.Equal(t, "echo: Authorization: Basic [REDACTED] raw=[REDACTED] key=[REDACTED] end", got)
}

func TestErrorBodyEchoingTheKeyIsScrubbed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		basic := base64.StdEncoding.EncodeToString([]byte("wk-secret:"))
		r := newRig(t, answer{status: 401, body: "bad Authorization: Basic " + basic,
			header: http.Header{"Location": {"https://x.test/?k=wk-secret"}}})
		err := one(t, r.deliver(context.Background(), 1), 1)
		require.Error(t, err)
		assert.NotContains(t, err.Error(), basic)
		assert.NotContains(t, err.Error(), "wk-secret")
		assert.Contains(t, err.Error(), "[REDACTED]")
	})
}

func TestRedirectDowngradeIsRefused(t *testing.T) {
	req := func(u string) *http.Request {
		r, _ := http.NewRequest(http.MethodPost, u, nil)
		r.Response = &http.Response{StatusCode: 307}
		return r
	}
	// A redirect is refused with http.ErrUseLastResponse itself: net/http
	// compares with ==.
	via := []*http.Request{req("https://api.test/v1/batch")}
	assert.Same(t, http.ErrUseLastResponse, CheckRedirect(req("http://api.test/v1/batch"), via), "https to http")
	assert.NoError(t, CheckRedirect(req("https://other.test/v1/batch"), via), "https to https")
	plain := []*http.Request{req("http://api.test/v1/batch")}
	assert.NoError(t, CheckRedirect(req("http://api.test/v2"), plain), "http to http")

	// A user's client keeps its own policy, behind the guard.
	calls := 0
	user := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { calls++; return nil }}
	g := GuardRedirects(user)
	assert.NotSame(t, user, g, "the guard is a copy")
	assert.Same(t, http.ErrUseLastResponse, g.CheckRedirect(req("http://api.test/v1/batch"), via), "the guard on a downgrade")
	assert.Zero(t, calls, "the user's policy was asked about a downgrade")
	assert.NoError(t, g.CheckRedirect(req("https://api.test/v2"), via), "the guard on https to https")
	assert.Equal(t, 1, calls, "the user's policy applied")
	assert.NotNil(t, user.CheckRedirect, "the user's client keeps its policy")
	assert.Equal(t, user.Transport, g.Transport, "the copy shares the user's transport")
	// No policy: up to 10 redirects followed, as by the SDK's own client.
	d := GuardRedirects(&http.Client{})
	hops := func(n int) []*http.Request {
		v := make([]*http.Request, n)
		for i := range v {
			v[i] = via[0]
		}
		return v
	}
	assert.NoError(t, d.CheckRedirect(req("https://a.test"), hops(10)), "the default policy: the 10th redirect")
	assert.Error(t, d.CheckRedirect(req("https://a.test"), hops(11)), "the default policy: the 11th redirect")
	// The SDK's own rule: the same bound.
	assert.NoError(t, CheckRedirect(req("https://a.test"), hops(10)), "CheckRedirect: the 10th redirect")
	assert.Error(t, CheckRedirect(req("https://a.test"), hops(11)), "CheckRedirect: the 11th redirect")
}
