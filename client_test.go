package analytics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func batchSizes(reqs []analyticstest.Request) []int {
	sizes := make([]int, len(reqs))
	for i, r := range reqs {
		sizes[i] = len(r.Events)
	}
	return sizes
}

func TestBatchCutAtFlushAt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI(), WithFlushAt(10), WithFlushInterval(time.Hour))
		msgs := tracks("m", 25)
		e.enqueue(msgs...)
		synctest.Wait()
		assert.Equal(t, []int{10, 10}, batchSizes(e.api.Requests()), "batches after 25 events with FlushAt 10")
		e.flush()
		reqs := e.api.Requests()
		assert.Equal(t, []int{10, 10, 5}, batchSizes(reqs), "batches after Flush")
		// Enqueue order within each batch.
		for _, r := range reqs {
			ids := r.MessageIDs()
			for j := 1; j < len(ids); j++ {
				var a, b int
				fmt.Sscanf(ids[j-1], "m%d", &a)
				fmt.Sscanf(ids[j], "m%d", &b)
				if !assert.Equal(t, a+1, b, "batch %v is in Enqueue order", ids) {
					break
				}
			}
		}
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}

func TestBatchCutAtFlushInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI(), WithFlushInterval(5*time.Second))
		e.enqueue(tracks("a", 3)...)
		time.Sleep(5*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Empty(t, e.api.Requests(), "requests before FlushInterval passed")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []int{3}, batchSizes(e.api.Requests()), "batches at FlushInterval")
		// The interval counts from the last cut.
		time.Sleep(2 * time.Second)
		e.enqueue(tracks("b", 2)...)
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		assert.Len(t, e.api.Requests(), 1, "requests 5s after the last cut minus 1ms")
		time.Sleep(time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []int{3, 2}, batchSizes(e.api.Requests()), "batches 5s after the last cut")
		e.close()
	})
}

func TestFlushIntervalCountsFromAnyCut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI(), WithFlushAt(3), WithFlushInterval(5*time.Second))
		time.Sleep(4 * time.Second)
		e.enqueue(tracks("a", 4)...) // FlushAt cuts 3 at 4s; 1 is left
		synctest.Wait()
		time.Sleep(time.Second + 100*time.Millisecond)
		synctest.Wait()
		assert.Equal(t, []int{3}, batchSizes(e.api.Requests()), "batches at 5.1s: the cut at 4s restarts the interval")
		time.Sleep(4 * time.Second)
		synctest.Wait()
		assert.Equal(t, []int{3, 1}, batchSizes(e.api.Requests()), "batches at 9.1s")
		e.close()
	})
}

func TestFlushWaitsForFinalOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Status(503), analyticstest.Status(500))
		e := newEnv(t, api, withExactBackoff())
		msgs := tracks("m", 4)
		e.enqueue(msgs...)
		start := time.Now()
		e.flush()
		assert.Equal(t, int64(4), e.client.Stats().Delivered, "events delivered when Flush returned")
		// Two backoff waits: 250ms + 500ms.
		assert.Equal(t, 750*time.Millisecond, time.Since(start), "Flush returned after the two backoff waits")
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}

func TestFlushReturnsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.RetryAfter(429, "60"))
		e := newEnv(t, api, WithCloseTimeout(0))
		e.enqueue(tracks("m", 1)...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.ErrorIs(t, e.client.Flush(ctx), context.DeadlineExceeded, "Flush")
		// The batch is still in retry, not failed, and Close delivers it.
		st := e.client.Stats()
		assert.Zero(t, st.Delivered, "delivered after Flush timed out")
		assert.Zero(t, st.Failed.Shutdown, "failed after Flush timed out")
		assert.Equal(t, int64(1), st.InFlight, "in flight after Flush timed out")
		e.close()
		ok, failed := e.out.Calls()
		assert.Equal(t, 1, ok, "Success callbacks")
		assert.Zero(t, failed, "Failure callbacks")
	})
}

func TestQueueFullNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalled := newAPI().Rule(func(analyticstest.Request) analyticstest.Answer {
			return analyticstest.Answer{Delay: time.Hour}
		})
		e := newEnv(t, stalled, WithFlushAt(10), WithMaxQueueSize(20), WithMaxConcurrentRequests(1),
			WithRequestTimeout(2*time.Hour))
		start := time.Now()
		accepted := 0
		var err error
		for i := 0; i < 100; i++ {
			if err = e.client.Enqueue(Track{MessageId: fmt.Sprint(i), UserId: "u", Event: "E"}); err != nil {
				break
			}
			accepted++
			synctest.Wait() // let the loop cut a batch when it can
		}
		assert.ErrorIs(t, err, ErrQueueFull, "Enqueue")
		assert.Zero(t, time.Since(start), "time Enqueue blocked")
		// The bound counts events in flight too: one batch of 10 has its
		// request stalled; the next 10 wait in the queue for the one
		// request slot.
		assert.Equal(t, 20, accepted, "events accepted")
		st := e.client.Stats()
		assert.Equal(t, 10, st.QueueDepth, "events queued")
		assert.Equal(t, int64(10), st.InFlight, "events in flight")
		assert.Equal(t, int64(1), st.Rejected.QueueFull, "events refused as queue full")
		// Nothing already queued is touched by the refusal; a Shutdown that
		// runs out of time reports every event as failed.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		assert.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown")
		failures := e.out.Failures()
		assert.Len(t, failures, 20, "failure callbacks")
		neverSent := 0
		for _, f := range failures {
			assert.ErrorIs(t, f.Err, context.DeadlineExceeded, "failure wraps the context's error")
			var be *BatchError
			if assert.ErrorAs(t, f.Err, &be, "failure is a BatchError") && be.Attempts == 0 {
				neverSent++
			}
		}
		assert.Equal(t, 10, neverSent, "events reported as never sent: the 10 queued")
		st = e.client.Stats()
		assert.Equal(t, int64(20), st.Failed.Shutdown, "events failed by Shutdown")
		assert.Zero(t, st.QueueDepth, "events queued after Shutdown")
		assert.Zero(t, st.InFlight, "events in flight after Shutdown")
	})
}

func TestQueueBoundedByBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Without a callback the bound counts the encoded events alone
		// (TestCallbackMessagesCountAgainstMaxQueueBytes has one).
		e := newEnv(t, newAPI(), WithMaxQueueBytes(MaxMessageBytes), WithFlushInterval(time.Hour), WithCallback(nil))
		pad := strings.Repeat("x", 10_000)
		accepted := 0
		for i := 0; i < 10; i++ {
			err := e.client.Enqueue(Track{UserId: "u", Event: "E", Properties: Properties{"pad": pad}})
			if errors.Is(err, ErrQueueFull) {
				break
			}
			require.NoError(t, err, "Enqueue")
			accepted++
		}
		assert.Equal(t, 3, accepted, "events of ~10 KB accepted into a 32,000-byte queue")
		st := e.client.Stats()
		assert.LessOrEqual(t, st.QueueBytes, MaxMessageBytes, "bytes queued")
		assert.Equal(t, 3, st.QueueDepth, "events queued")
		e.close()
		assert.Equal(t, int64(3), e.client.Stats().Delivered, "events delivered")
	})
}

func TestNoBodyOverTheBatchLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI(), WithGzip(false))
		pad := strings.Repeat("y", 31_000)
		var msgs []Message
		for i := range 60 {
			msgs = append(msgs, Track{MessageId: fmt.Sprint(i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}})
		}
		e.enqueue(msgs...)
		e.close()
		reqs := e.api.Requests()
		for _, r := range reqs {
			assert.LessOrEqual(t, len(r.Body), MaxBatchBytes, "bytes of a body sent")
		}
		// 60 × ~31 KB needs at least 4 bodies; each as full as it can be.
		assert.Len(t, reqs, 4, "requests: 16 events of ~31 KB per 500 KB body")
		e.assertDeliveredOnce(msgs)
	})
}

func TestFailingBatchDoesNotWedgeTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Answer{Status: 400, Body: `{"error":"bad"}`})
		e := newEnv(t, api, WithFlushAt(5), WithMaxConcurrentRequests(1))
		first, second := tracks("a", 5), tracks("b", 5)
		e.enqueue(first...)
		synctest.Wait()
		e.enqueue(second...)
		e.close()
		failures := e.out.Failures()
		assert.Len(t, failures, 5, "failures: the 5 of the first batch")
		for _, f := range failures {
			id := MessageID(f.Message)
			assert.True(t, strings.HasPrefix(id, "a"), "failure %s is of the first batch", id)
			assert.ErrorIs(t, f.Err, ErrFatalStatus, "failure %s", id)
			var he *HTTPError
			if assert.ErrorAs(t, f.Err, &he, "failure %s", id) {
				assert.Equal(t, 400, he.StatusCode, "failure %s: status", id)
			}
		}
		e.assertDeliveredOnce(second)
		assert.Len(t, e.api.Requests(), 2, "requests: a fatal status is not retried")
	})
}

func TestCloseWaitsForBatchesInRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Status(503), analyticstest.RetryAfter(429, "20"), analyticstest.Status(502))
		e := newEnv(t, api, withExactBackoff())
		msgs := tracks("m", 3)
		e.enqueue(msgs...)
		start := time.Now()
		e.close()
		// 250ms backoff, 20s Retry-After, 500ms backoff.
		assert.Equal(t, 20750*time.Millisecond, time.Since(start), "Close took the retry waits")
		e.assertDeliveredOnce(msgs)
	})
}

func TestShutdownDeadlineFailsBatchInRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(func(analyticstest.Request) analyticstest.Answer { return analyticstest.RetryAfter(503, "100") })
		e := newEnv(t, api)
		e.enqueue(tracks("m", 2)...)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		assert.ErrorIs(t, e.client.Shutdown(ctx), context.DeadlineExceeded, "Shutdown")
		assert.Equal(t, 5*time.Second, time.Since(start), "Shutdown took its deadline")
		failures := e.out.Failures()
		assert.Len(t, failures, 2, "failures")
		for _, f := range failures {
			assert.ErrorIs(t, f.Err, context.DeadlineExceeded, "failure")
			var be *BatchError
			if assert.ErrorAs(t, f.Err, &be, "failure") {
				assert.Equal(t, 1, be.Attempts, "attempts of a failed batch")
			}
			var he *HTTPError
			if assert.ErrorAs(t, f.Err, &he, "failure: the last attempt's answer") {
				assert.Equal(t, 503, he.StatusCode, "status of the last attempt")
			}
		}
		// Closed already: as in v3, a Close after it returns ErrClosed, and
		// reports nothing again.
		assert.ErrorIs(t, e.client.Close(), ErrClosed, "Close after Shutdown")
		_, failed := e.out.Calls()
		assert.Equal(t, 2, failed, "failures after a second close: none reported again")
	})
}

func TestClosedClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI())
		e.enqueue(tracks("m", 3)...)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- e.client.Close()
			}()
		}
		wg.Wait()
		close(errs)
		// The call that closed the client says how it went; the others,
		// as in v3, return ErrClosed once the same shutdown has ended.
		ok := 0
		for err := range errs {
			if err == nil {
				ok++
			} else {
				assert.ErrorIs(t, err, ErrClosed, "concurrent Close")
			}
		}
		assert.Equal(t, 1, ok, "concurrent Close calls that returned nil (the others ErrClosed)")
		assert.ErrorIs(t, e.client.Enqueue(Track{UserId: "u", Event: "E"}), ErrClosed, "Enqueue after Close")
		assert.ErrorIs(t, e.client.Flush(context.Background()), ErrClosed, "Flush after Close")
		assert.NoError(t, e.client.Shutdown(context.Background()), "Shutdown after Close")
		successes, failures := e.out.Calls()
		assert.Equal(t, 3, successes, "Success callbacks")
		assert.Equal(t, 0, failures, "Failure callbacks")
		assert.Equal(t, int64(1), e.client.Stats().Rejected.Closed, "events refused as closed")
	})
}

func TestEnqueueRacingClose(t *testing.T) {
	api := newAPI()
	e := newEnv(t, api, WithFlushAt(7))
	var enqueuers, warmedUp sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]bool{}
	for g := range 8 {
		enqueuers.Add(1)
		warmedUp.Add(1)
		go func() {
			defer enqueuers.Done()
			for i := 0; ; i++ {
				if i == 250 {
					warmedUp.Done() // Close starts once every goroutine is well under way
				}
				id := fmt.Sprintf("g%d-%d", g, i)
				err := e.client.Enqueue(Track{MessageId: id, UserId: "u", Event: "E"})
				if errors.Is(err, ErrClosed) {
					if i < 250 {
						warmedUp.Done()
					}
					return
				}
				if err != nil {
					assert.ErrorIs(t, err, ErrQueueFull, "Enqueue")
				}
				if err == nil {
					mu.Lock()
					accepted[id] = true
					mu.Unlock()
				}
			}
		}()
	}
	warmedUp.Wait()
	e.close()
	enqueuers.Wait()
	successes, failures := e.out.ByID()
	for id := range accepted {
		if !assert.Equal(t, 1, successes[id]+failures[id], "callbacks for accepted event %s", id) {
			break
		}
	}
	assert.Equal(t, len(accepted), len(successes)+len(failures), "callbacks, one per accepted event")
	assert.GreaterOrEqual(t, len(accepted), 2000, "events accepted before Close")
	st := e.client.Stats()
	assert.Equal(t, int64(len(accepted)), st.Enqueued, "events enqueued")
	assert.Equal(t, int64(len(accepted)), st.Delivered, "events delivered")
}

func TestOneRetryAfterPausesEveryUpload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.RetryAfter(429, "30"))
		// The pause ends up to 1s after the server's 30s (the client's
		// jitter), and the send rate then spaces the uploads: more than
		// the 30s Close allows by default after the second it slept.
		e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(4), WithCloseTimeout(0))
		start := time.Now()
		e.enqueue(tracks("first", 1)...)
		synctest.Wait()
		time.Sleep(time.Second)
		e.enqueue(tracks("other", 3)...)
		e.close()
		reqs := e.api.Requests()
		require.Len(t, reqs, 5, "requests")
		for _, r := range reqs[1:] {
			assert.GreaterOrEqual(t, r.At.Sub(start), 30*time.Second, "request %v sent after the 429's Retry-After of 30s", r.MessageIDs())
		}
		st := e.client.Stats()
		assert.Equal(t, int64(1), st.Retries.RateLimit, "rate-limit retries")
		assert.Equal(t, int64(4), st.RateLimitedWaits, "uploads held by the pause")
	})
}

func TestCallbackPanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI()
		e := newEnv(t, api)
		calls := 0
		var mu sync.Mutex
		e.client.cfg.callback = CallbackFunc(func(m Message, err error) {
			mu.Lock()
			calls++
			mu.Unlock()
			panic("user bug")
		})
		e.enqueue(tracks("m", 3)...)
		e.close()
		assert.Equal(t, 3, calls, "callbacks after panics")
		assert.Contains(t, e.logs.String(), "callback panicked", "the log")
		assert.Equal(t, int64(3), e.client.Stats().Delivered, "events delivered")
	})
}

// TestEnqueueKeepsTheMessageOnTheCallersStack: Enqueue of a message with
// its MessageId set (no id to make) and no Callback (nothing to keep)
// allocates nothing, so the caller's Track, passed by value or by
// pointer, and its strings, map and Context are not moved to the heap.
// Calling its methods through the Message interface would cost an
// allocation of its size per event; keeping its map for a callback, two
// more and the map's size.
func TestEnqueueKeepsTheMessageOnTheCallersStack(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	c, err := New("wk", WithEndpoint("http://alloc.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
		WithFlushAt(MaxBatchEvents), WithFlushInterval(time.Hour))
	require.NoError(t, err, "New")
	defer c.Close()
	user := []byte("user-1")
	enqueue := func(kind int) {
		if queued, _, _, _ := c.q.Sizes(); queued >= quietDrain {
			drain(c)
		}
		// As an application builds them: a fresh map and a string made
		// for the call. Neither may have to move to the heap.
		props := Properties{"plan": "pro", "seats": 3}
		userID := string(user)
		var err error
		switch kind {
		case 0:
			err = c.Enqueue(Track{MessageId: "m1", UserId: userID, Event: "E", Properties: props})
		case 1:
			err = c.Enqueue(&Track{MessageId: "m1", UserId: userID, Event: "E", Properties: props})
		case 2:
			err = c.Enqueue(Identify{MessageId: "m1", UserId: userID, Traits: Traits(props)})
		case 3:
			err = c.Enqueue(Page{MessageId: "m1", UserId: userID, Name: "Home",
				Context: &Context{Locale: "en-US", Page: PageInfo{Path: "/"}, Traits: Traits{"plan": "pro"}}})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for range quietDrain { // the queue's storage grown once, before counting
		enqueue(0)
	}
	assert.Zero(t, testing.AllocsPerRun(1000, func() { enqueue(0) }), "allocations per Enqueue(Track)")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { enqueue(1) }), "allocations per Enqueue(*Track)")
	assert.Zero(t, testing.AllocsPerRun(1000, func() { enqueue(2) }), "allocations per Enqueue(Identify)")
	// A Context's struct members that are set go through encoding/json
	// (their box and what it allocates); the nine unset cost nothing, where
	// each of the ten was boxed, set or not (14 allocations here).
	assert.LessOrEqual(t, testing.AllocsPerRun(1000, func() { enqueue(3) }), 4.0, "allocations per Enqueue(Page) with a Context")
}

// concurrency wraps a RoundTripper and records the most requests it had in
// flight at once. It also counts CloseIdleConnections calls.
type concurrency struct {
	next               http.RoundTripper
	mu                 sync.Mutex
	active, peak       int
	closeIdleConnCalls int
}

func (c *concurrency) RoundTrip(r *http.Request) (*http.Response, error) {
	c.mu.Lock()
	c.active++
	c.peak = max(c.peak, c.active)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		c.active--
		c.mu.Unlock()
	}()
	return c.next.RoundTrip(r)
}

func (c *concurrency) CloseIdleConnections() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeIdleConnCalls++
}

func TestConcurrentUploadsAreBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Answer{Delay: 10 * time.Second}))
		rt := &concurrency{next: api}
		e := newEnv(t, api, WithHTTPClient(&http.Client{Transport: rt}), WithFlushAt(10), WithMaxConcurrentRequests(3),
			WithCloseTimeout(0))
		msgs := tracks("m", 100)
		e.enqueue(msgs...)
		e.close()
		assert.Equal(t, 3, rt.peak, "uploads at once: MaxConcurrentRequests")
		e.assertDeliveredOnce(msgs)
		// The SDK never closes idle connections of a client it was given.
		assert.Zero(t, rt.closeIdleConnCalls, "CloseIdleConnections calls on the user's transport")
	})
}

func TestMessageIDAndTotals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Status(400))
		e := newEnv(t, api, WithFlushAt(2), WithMaxConcurrentRequests(1))
		e.enqueue(tracks("bad", 2)...)
		synctest.Wait()
		e.enqueue(Identify{UserId: "u"}, Alias{UserId: "u", PreviousId: "p", MessageId: "al"})
		e.client.Enqueue(Track{})
		e.close()
		e.client.Enqueue(Track{UserId: "u", Event: "E"})
		for _, f := range e.out.Failures() {
			id := MessageID(f.Message)
			assert.True(t, strings.HasPrefix(id, "bad"), "MessageID of a failed event %q is one of the bad batch", id)
		}
		successes := e.out.Successes()
		require.Len(t, successes, 2, "Success callbacks")
		assertUUIDv4(t, MessageID(successes[0]))
		assert.Equal(t, "al", MessageID(successes[1]), "MessageID of a delivered event with its own id")
		assert.Empty(t, MessageID(nil), "MessageID(nil)")
		st := e.client.Stats()
		assert.Equal(t, int64(2), st.Failed.Total(), "failed in total")
		assert.Equal(t, int64(2), st.Rejected.Total(), "rejected in total")
	})
}

func TestShutdownFailuresWrapErrShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI().Default(analyticstest.Answer{Delay: time.Hour}), WithRequestTimeout(2*time.Hour))
		e.enqueue(tracks("m", 1)...)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		assert.ErrorIs(t, e.client.Shutdown(ctx), context.Canceled, "Shutdown")
		f := e.out.Failures()
		require.Len(t, f, 1, "failures")
		assert.ErrorIs(t, f[0].Err, ErrShutdown, "failure")
		assert.ErrorIs(t, f[0].Err, context.Canceled, "failure")
	})
}

// A Shutdown whose context has ended already sends nothing more, however
// soon the loop runs: the events queued fail, none reaches the API (SPEC
// §8). Its context lets the loop run first, as a scheduler may.
func TestShutdownWithAnEndedContextSendsNothing(t *testing.T) {
	for _, spooled := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "spool"}[spooled], func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := []Option{WithFlushAt(100)}
				if spooled {
					opts = append(opts, WithSpool(t.TempDir()))
				}
				api := newAPI()
				e := newEnv(t, api, opts...)
				e.enqueue(tracks("m", 5)...) // under FlushAt: all five stay queued
				synctest.Wait()
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				assert.ErrorIs(t, e.client.Shutdown(loopFirst{ctx}), context.Canceled, "Shutdown")
				assert.Zero(t, len(api.Requests()), "requests sent")
				st := e.client.Stats()
				if spooled {
					assert.Equal(t, int64(5), st.Spool.Left, "Spool.Left: the queued events stay in the spool")
				} else {
					assert.Equal(t, int64(5), st.Failed.Shutdown, "Failed.Shutdown: the queued events fail")
				}
			})
		})
	}
}

// loopFirst is a context whose Done, before it answers, lets every other
// goroutine of the synctest bubble run until they all wait: a Shutdown
// that looked at Done first would find the loop had sent what it could.
type loopFirst struct{ context.Context }

func (c loopFirst) Done() <-chan struct{} {
	synctest.Wait()
	return c.Context.Done()
}

func TestBatchInBackoffDoesNotHoldARequestSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Status(503))
		// Without the send rate, which would hold b back while the API
		// seems down: this is about the request slot alone.
		e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1), withExactBackoff(), WithAdaptiveSendRate(false))
		start := time.Now()
		e.enqueue(tracks("a", 1)...)
		synctest.Wait()
		e.enqueue(tracks("b", 1)...)
		e.close()
		reqs := api.Requests()
		require.Len(t, reqs, 3, "requests")
		// a fails, and while it waits 250ms to retry, b goes out on the one
		// request slot.
		assert.Equal(t, []string{"b0"}, reqs[1].MessageIDs(), "events of the second request")
		assert.Zero(t, reqs[1].At.Sub(start), "time of the second request: at once")
		assert.Equal(t, []string{"a0"}, reqs[2].MessageIDs(), "events of the third request: a0's retry")
		assert.Equal(t, 250*time.Millisecond, reqs[2].At.Sub(start), "time of the third request")
	})
}

func TestShutdownAfterCloseIgnoresAnEndedContext(t *testing.T) {
	e := newEnv(t, newAPI())
	e.enqueue(tracks("m", 2)...)
	e.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		require.NoError(t, e.client.Shutdown(ctx), "Shutdown after a finished Close")
	}
}

func TestQueueBudgetIsGivenBackOnceEventsEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI(), WithMaxQueueSize(10), WithFlushAt(5))
		// Four rounds of 5 events through a 10-event bound: each round's
		// budget comes back when its events are delivered.
		for round := range 4 {
			e.enqueue(tracks(fmt.Sprintf("r%d-", round), 5)...)
			e.flush()
			st := e.client.Stats()
			assert.Zero(t, st.QueueDepth, "round %d: events queued after Flush", round)
			assert.Zero(t, st.InFlight, "round %d: events in flight after Flush", round)
		}
		e.close()
		st := e.client.Stats()
		assert.Equal(t, int64(20), st.Delivered, "events delivered")
		assert.Zero(t, st.Rejected.QueueFull, "events refused as queue full")
	})
}

// TestCloseWithoutRetriesFailsWaitingBatchesAtOnce: batches waiting
// through a backoff when Close begins fail at once with their last error,
// with no further attempt; one the send rate held back makes its first
// attempt at once; and Close returns without waiting.
func TestCloseWithoutRetriesFailsWaitingBatchesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Status(503)))
		e := newEnv(t, api, WithFlushAt(1), WithCloseRetries(false))
		e.enqueue(tracks("m", 3)...)
		synctest.Wait() // they failed and wait to retry, or the send rate holds one back
		require.NotEmpty(t, api.Requests(), "first attempts before Close")

		start := time.Now()
		e.close()
		assert.Zero(t, time.Since(start), "Close waited for a backoff")
		assert.Len(t, api.Requests(), 3, "requests: one attempt a batch, no retry")
		failed := e.out.Failures()
		require.Len(t, failed, 3, "failures")
		for _, f := range failed {
			assert.ErrorIs(t, f.Err, ErrRetriesStopped, "%v", f)
			var be *BatchError
			require.ErrorAs(t, f.Err, &be, "%v", f)
			assert.Equal(t, 1, be.Attempts, "attempts")
			var he *HTTPError
			require.ErrorAs(t, f.Err, &he, "the last attempt's error: %v", f)
			assert.Equal(t, 503, he.StatusCode)
		}
	})
}

// TestCloseWithoutRetriesSendsQueuedEventsOnce: events still queued when
// Close begins get one attempt, and a failed one is not retried.
func TestCloseWithoutRetriesSendsQueuedEventsOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Status(500)))
		e := newEnv(t, api, WithFlushAt(100), WithFlushInterval(time.Hour), WithCloseRetries(false))
		e.enqueue(tracks("q", 2)...)
		e.close()
		assert.Len(t, api.Requests(), 1, "requests: one batch, one attempt")
		failed := e.out.Failures()
		require.Len(t, failed, 2, "failures")
		for _, f := range failed {
			assert.ErrorIs(t, f.Err, ErrRetriesStopped, "%v", f)
		}
	})
}

// TestCloseWithoutRetriesIgnoresTheRateLimitPause: a Retry-After pause
// does not hold back the last attempt of a queued batch, and the batch
// that was paused fails at once.
func TestCloseWithoutRetriesIgnoresTheRateLimitPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.RetryAfter(429, "300")).Default(analyticstest.Status(200))
		e := newEnv(t, api, WithFlushAt(1), WithFlushInterval(time.Hour), WithCloseRetries(false))
		e.enqueue(tracks("a", 1)...)
		synctest.Wait() // answered 429: the client pauses for 300 s
		require.NoError(t, e.client.Enqueue(Track{MessageId: "b", UserId: "u", Event: "E"}))
		synctest.Wait()
		require.Len(t, api.Requests(), 1, "the second batch waits for the pause")

		start := time.Now()
		e.close()
		assert.Zero(t, time.Since(start), "Close waited for the pause")
		successes, failures := e.out.ByID()
		assert.Equal(t, map[string]int{"b": 1}, successes, "delivered: the queued batch's last attempt")
		assert.Equal(t, map[string]int{"a0": 1}, failures, "failed: the paused batch")
		for _, f := range e.out.Failures() {
			assert.ErrorIs(t, f.Err, ErrRetriesStopped, "%v", f)
		}
	})
}

// TestCloseRetriesByDefault: without the option, Close lets a failing
// batch retry (the contrast that shows the option is what stops them).
func TestCloseRetriesByDefault(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(always(analyticstest.Status(503)))
		e := newEnv(t, api, WithFlushAt(1), WithRetryCount(2), withExactBackoff())
		e.enqueue(tracks("m", 1)...)
		e.close()
		assert.Len(t, api.Requests(), 3, "requests: the first attempt and two retries")
		failed := e.out.Failures()
		require.Len(t, failed, 1)
		assert.True(t, errors.Is(failed[0].Err, ErrRetriesExhausted), "%v", failed[0])
	})
}

// slowAPI answers every request 200 after delay, so that a batch holds its
// events' room for that long.
func slowAPI(delay time.Duration) *analyticstest.Server {
	return analyticstest.New().Default(analyticstest.Answer{Delay: delay})
}

// enqueueInBackground runs EnqueueContext on a goroutine of its own and
// returns where its error will arrive; it first lets the call reach its
// wait, so calls started one after another join the line in that order.
func enqueueInBackground(ctx context.Context, c *Client, msg Message) <-chan error {
	errc := make(chan error, 1)
	go func() { errc <- c.EnqueueContext(ctx, msg) }()
	synctest.Wait()
	return errc
}

// pending reports whether errc has nothing yet, once every goroutine of the
// bubble is blocked.
func pending(errc <-chan error) bool {
	synctest.Wait()
	return len(errc) == 0
}

// With the queue full, EnqueueContext waits until a batch ends and gives
// its events' room back, and not longer: no polling interval.
func TestEnqueueContextWaitsForABatchToEnd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, slowAPI(3*time.Second), WithFlushAt(2), WithMaxQueueSize(2))
		defer e.close()
		e.enqueue(tracks("a", 2)...) // FlushAt: the batch goes out and holds the queue for 3 s
		synctest.Wait()
		require.ErrorIs(t, e.client.Enqueue(tracks("b", 1)[0]), ErrQueueFull, "Enqueue into a full queue")

		start := time.Now()
		err := e.client.EnqueueContext(context.Background(), tracks("c", 1)[0])
		require.NoError(t, err, "EnqueueContext")
		assert.Equal(t, 3*time.Second, time.Since(start), "EnqueueContext returned when the batch ended")
		st := e.client.Stats()
		assert.EqualValues(t, 3, st.Enqueued, "Stats().Enqueued")
		assert.EqualValues(t, 1, st.Rejected.QueueFull, "Stats().Rejected.QueueFull: the plain Enqueue only")
		e.flush()
		e.assertDeliveredOnce(append(tracks("a", 2), tracks("c", 1)...))
	})
}

// Several waiting calls get room in the order they arrived.
func TestEnqueueContextServesWaitersInArrivalOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := slowAPI(time.Second)
		var mu sync.Mutex
		var order []string
		api.OnRequest(func(r analyticstest.Request) {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, r.MessageIDs()...)
		})
		e := newEnv(t, api, WithFlushAt(1), WithMaxQueueSize(1), WithMaxConcurrentRequests(1))
		defer e.close()
		e.enqueue(tracks("first", 1)...)
		synctest.Wait()
		waiting := tracks("w", 5)
		var errs []<-chan error
		for _, m := range waiting {
			errs = append(errs, enqueueInBackground(context.Background(), e.client, m))
		}
		for i, errc := range errs {
			require.NoError(t, <-errc, "EnqueueContext of waiter %d", i)
		}
		e.flush()
		assert.Equal(t, []string{"first0", "w0", "w1", "w2", "w3", "w4"}, order,
			"the order events reached the API, one batch at a time")
		e.assertDeliveredOnce(append(tracks("first", 1), waiting...))
	})
}

// When ctx ends first, the error matches both ErrQueueFull and the
// context's error, the event is not queued, and the refusal is counted.
func TestEnqueueContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, slowAPI(time.Hour), WithFlushAt(1), WithMaxQueueSize(1), WithRequestTimeout(2*time.Hour))
		defer e.close()
		e.enqueue(tracks("a", 1)...)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		start := time.Now()
		err := e.client.EnqueueContext(ctx, tracks("b", 1)[0])
		assert.Equal(t, 2*time.Second, time.Since(start), "EnqueueContext returned when its context ended")
		assert.ErrorIs(t, err, ErrQueueFull)
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		assert.EqualError(t, err, "analytics: queue is full: context deadline exceeded")
		st := e.client.Stats()
		assert.EqualValues(t, 1, st.Rejected.QueueFull, "Stats().Rejected.QueueFull")
		assert.EqualValues(t, 1, st.Enqueued, "Stats().Enqueued")

		cancelled, cancel2 := context.WithCancel(context.Background())
		errc := enqueueInBackground(cancelled, e.client, tracks("c", 1)[0])
		cancel2()
		err = <-errc
		assert.ErrorIs(t, err, ErrQueueFull, "a cancelled EnqueueContext")
		assert.ErrorIs(t, err, context.Canceled, "a cancelled EnqueueContext")
		e.flush()
		e.assertDeliveredOnce(tracks("a", 1))
	})
}

// Close wakes every waiting call, which returns ErrClosed, without waiting
// for the uploads to end; calls after it return ErrClosed at once.
func TestEnqueueContextCloseWakesWaiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, slowAPI(10*time.Second), WithFlushAt(1), WithMaxQueueSize(1))
		e.enqueue(tracks("a", 1)...)
		synctest.Wait()
		var errs []<-chan error
		for _, m := range tracks("w", 3) {
			errs = append(errs, enqueueInBackground(context.Background(), e.client, m))
		}
		for i, errc := range errs {
			require.True(t, pending(errc), "waiter %d returned before Close", i)
		}
		start := time.Now()
		closed := make(chan error, 1)
		go func() { closed <- e.client.Close() }()
		for i, errc := range errs {
			assert.ErrorIs(t, <-errc, ErrClosed, "waiter %d", i)
		}
		assert.Zero(t, time.Since(start), "waiters woken when Close began")
		require.NoError(t, <-closed, "Close")
		assert.ErrorIs(t, e.client.EnqueueContext(context.Background(), tracks("z", 1)[0]), ErrClosed,
			"EnqueueContext after Close")
		st := e.client.Stats()
		assert.EqualValues(t, 4, st.Rejected.Closed, "Stats().Rejected.Closed")
		e.assertDeliveredOnce(tracks("a", 1))
	})
}

// With room, EnqueueContext is Enqueue: it accepts at once, even with a
// context that has ended, and refuses what Enqueue refuses.
func TestEnqueueContextWithRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI())
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.NoError(t, e.client.EnqueueContext(ctx, tracks("a", 1)[0]), "EnqueueContext with room")
		err := e.client.EnqueueContext(context.Background(), Track{UserId: "u"})
		assert.ErrorIs(t, err, ErrInvalidMessage, "an invalid message")
		var fe *FieldError
		assert.True(t, errors.As(err, &fe), "a *FieldError")
		assert.ErrorIs(t, e.client.EnqueueContext(context.Background(), nil), ErrInvalidMessage, "nil")
		e.close()
		e.assertDeliveredOnce(tracks("a", 1))
	})
}

// Close waits at most its timeout, 30 s by default; what is left is
// reported failed with ErrShutdown, and Close says so. 0 waits for every
// outcome.
func TestCloseIsBoundedByDefault(t *testing.T) {
	for _, tt := range []struct {
		name      string
		opts      []Option
		waits     time.Duration
		delivered bool
	}{
		{"default", nil, DefaultCloseTimeout, false},
		{"5s", []Option{WithCloseTimeout(5 * time.Second)}, 5 * time.Second, false},
		{"0", []Option{WithCloseTimeout(0)}, time.Hour, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := newAPI().Default(analyticstest.Answer{Delay: time.Hour})
				e := newEnv(t, api, append(tt.opts, WithRequestTimeout(2*time.Hour))...)
				msgs := tracks("m", 3)
				e.enqueue(msgs...)
				start := time.Now()
				err := e.client.Close()
				assert.Equal(t, tt.waits, time.Since(start), "Close returned after")
				if tt.delivered {
					require.NoError(t, err, "Close")
					e.assertDeliveredOnce(msgs)
					return
				}
				assert.ErrorIs(t, err, ErrShutdown, "Close")
				assert.ErrorIs(t, err, context.DeadlineExceeded, "Close")
				failures := e.out.Failures()
				require.Len(t, failures, 3, "Failure callbacks")
				for _, f := range failures {
					assert.ErrorIs(t, f.Err, ErrShutdown, "a failure")
					assert.ErrorIs(t, f.Err, context.DeadlineExceeded, "a failure")
				}
				assert.EqualValues(t, 3, e.client.Stats().Failed.Shutdown, "Stats().Failed.Shutdown")
			})
		})
	}
}

// As in v3, a second Close returns ErrClosed; Shutdown stays idempotent.
func TestCloseTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI())
		e.enqueue(tracks("m", 2)...)
		require.NoError(t, e.client.Close(), "the first Close")
		assert.ErrorIs(t, e.client.Close(), ErrClosed, "the second Close")
		assert.NoError(t, e.client.Shutdown(context.Background()), "Shutdown after Close")
		e.assertDeliveredOnce(tracks("m", 2))
	})
}
