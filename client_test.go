package analytics

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
)

func batchSizes(reqs []mockapi.Request) []int {
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
		if got := batchSizes(e.api.Requests()); !reflect.DeepEqual(got, []int{10, 10}) {
			t.Fatalf("after 25 events with FlushAt 10: batches %v, want [10 10]", got)
		}
		e.flush()
		reqs := e.api.Requests()
		if got := batchSizes(reqs); !reflect.DeepEqual(got, []int{10, 10, 5}) {
			t.Fatalf("after Flush: batches %v, want [10 10 5]", got)
		}
		// Enqueue order within each batch.
		for _, r := range reqs {
			ids := r.MessageIDs()
			for j := 1; j < len(ids); j++ {
				var a, b int
				fmt.Sscanf(ids[j-1], "m%d", &a)
				fmt.Sscanf(ids[j], "m%d", &b)
				if b != a+1 {
					t.Fatalf("batch %v is not in Enqueue order", ids)
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
		if n := len(e.api.Requests()); n != 0 {
			t.Fatalf("%d requests before FlushInterval passed", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := batchSizes(e.api.Requests()); !reflect.DeepEqual(got, []int{3}) {
			t.Fatalf("at FlushInterval: batches %v, want [3]", got)
		}
		// The interval counts from the last cut.
		time.Sleep(2 * time.Second)
		e.enqueue(tracks("b", 2)...)
		time.Sleep(3*time.Second - time.Millisecond)
		synctest.Wait()
		if n := len(e.api.Requests()); n != 1 {
			t.Fatalf("%d requests 5s after the last cut minus 1ms, want 1", n)
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if got := batchSizes(e.api.Requests()); !reflect.DeepEqual(got, []int{3, 2}) {
			t.Fatalf("batches %v, want [3 2]", got)
		}
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
		if got := batchSizes(e.api.Requests()); !reflect.DeepEqual(got, []int{3}) {
			t.Fatalf("at 5.1s: batches %v, want [3]: the cut at 4s restarts the interval", got)
		}
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if got := batchSizes(e.api.Requests()); !reflect.DeepEqual(got, []int{3, 1}) {
			t.Fatalf("at 9.1s: batches %v, want [3 1]", got)
		}
		e.close()
	})
}

func TestFlushWaitsForFinalOutcomes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.Status(503), mockapi.Status(500))
		e := newEnv(t, api, withExactBackoff())
		msgs := tracks("m", 4)
		e.enqueue(msgs...)
		start := time.Now()
		e.flush()
		if st := e.client.Stats(); st.Delivered != 4 {
			t.Fatalf("Flush returned with %d of 4 delivered", st.Delivered)
		}
		// Two backoff waits: 250ms + 500ms.
		if waited := time.Since(start); waited != 750*time.Millisecond {
			t.Fatalf("Flush returned after %v, want the two backoff waits (750ms)", waited)
		}
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}

func TestFlushReturnsWhenContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.RetryAfter(429, "60"))
		e := newEnv(t, api, WithCloseTimeout(0))
		e.enqueue(tracks("m", 1)...)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := e.client.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Flush = %v, want DeadlineExceeded", err)
		}
		// The batch is still in retry, not failed, and Close delivers it.
		if st := e.client.Stats(); st.Delivered+st.Failed.Shutdown != 0 || st.InFlight != 1 {
			t.Fatalf("stats after Flush timed out: %+v", st)
		}
		e.close()
		if ok, failed := e.out.counts(); ok != 1 || failed != 0 {
			t.Fatalf("callbacks: %d successes, %d failures", ok, failed)
		}
	})
}

func TestQueueFullNeverBlocks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		stalled := newAPI().Rule(func(mockapi.Request) mockapi.Answer {
			return mockapi.Answer{Delay: time.Hour}
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
		if !errors.Is(err, ErrQueueFull) {
			t.Fatalf("Enqueue = %v, want ErrQueueFull", err)
		}
		if time.Since(start) != 0 {
			t.Fatalf("Enqueue blocked for %v", time.Since(start))
		}
		// The bound counts events in flight too: one batch of 10 has its
		// request stalled; the next 10 wait in the queue for the one
		// request slot.
		if st := e.client.Stats(); accepted != 20 || st.QueueDepth != 10 || st.InFlight != 10 || st.Rejected.QueueFull != 1 {
			t.Fatalf("accepted %d; stats %+v", accepted, st)
		}
		// Nothing already queued is touched by the refusal; a Shutdown that
		// runs out of time reports every event as failed.
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := e.client.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
		}
		failures := e.out.failed()
		if len(failures) != 20 {
			t.Fatalf("%d failure callbacks, want 20", len(failures))
		}
		neverSent := 0
		for _, f := range failures {
			var be *BatchError
			if !errors.Is(f.err, context.DeadlineExceeded) || !errors.As(f.err, &be) {
				t.Fatalf("failure %v does not wrap the context's error", f.err)
			}
			if be.Attempts == 0 {
				neverSent++
			}
		}
		if neverSent != 10 {
			t.Fatalf("%d events reported as never sent, want the 10 queued", neverSent)
		}
		if st := e.client.Stats(); st.Failed.Shutdown != 20 || st.QueueDepth != 0 || st.InFlight != 0 {
			t.Fatalf("stats after Shutdown: %+v", st)
		}
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
			if err != nil {
				t.Fatal(err)
			}
			accepted++
		}
		if accepted != 3 {
			t.Fatalf("accepted %d events of ~10 KB into a 32,000-byte queue, want 3", accepted)
		}
		if st := e.client.Stats(); st.QueueBytes > MaxMessageBytes || st.QueueDepth != 3 {
			t.Fatalf("stats %+v", st)
		}
		e.close()
		if st := e.client.Stats(); st.Delivered != 3 {
			t.Fatalf("delivered %d, want 3", st.Delivered)
		}
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
			if len(r.Body) > MaxBatchBytes {
				t.Fatalf("a body of %d bytes was sent", len(r.Body))
			}
		}
		// 60 × ~31 KB needs at least 4 bodies; each as full as it can be.
		if len(reqs) != 4 {
			t.Fatalf("%d requests, want 4 (16 events of ~31 KB per 500 KB body)", len(reqs))
		}
		e.assertDeliveredOnce(msgs)
	})
}

func TestFailingBatchDoesNotWedgeTheNext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.Answer{Status: 400, Body: `{"error":"bad"}`})
		e := newEnv(t, api, WithFlushAt(5), WithMaxConcurrentRequests(1))
		first, second := tracks("a", 5), tracks("b", 5)
		e.enqueue(first...)
		synctest.Wait()
		e.enqueue(second...)
		e.close()
		failures := e.out.failed()
		if len(failures) != 5 {
			t.Fatalf("%d failures, want the 5 of the first batch", len(failures))
		}
		for _, f := range failures {
			var he *HTTPError
			if !strings.HasPrefix(messageID(f.msg), "a") || !errors.Is(f.err, ErrFatalStatus) || !errors.As(f.err, &he) || he.StatusCode != 400 {
				t.Fatalf("failure %s: %v", messageID(f.msg), f.err)
			}
		}
		e.assertDeliveredOnce(second)
		if n := len(e.api.Requests()); n != 2 {
			t.Fatalf("%d requests, want 2: a fatal status is not retried", n)
		}
	})
}

func TestCloseWaitsForBatchesInRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.Status(503), mockapi.RetryAfter(429, "20"), mockapi.Status(502))
		e := newEnv(t, api, withExactBackoff())
		msgs := tracks("m", 3)
		e.enqueue(msgs...)
		start := time.Now()
		e.close()
		// 250ms backoff, 20s Retry-After, 500ms backoff.
		if took := time.Since(start); took != 20750*time.Millisecond {
			t.Fatalf("Close took %v, want 20.75s of retry waits", took)
		}
		e.assertDeliveredOnce(msgs)
	})
}

func TestShutdownDeadlineFailsBatchInRetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(func(mockapi.Request) mockapi.Answer { return mockapi.RetryAfter(503, "100") })
		e := newEnv(t, api)
		e.enqueue(tracks("m", 2)...)
		synctest.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		start := time.Now()
		if err := e.client.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Shutdown = %v, want DeadlineExceeded", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Fatalf("Shutdown took %v, want its 5s deadline", took)
		}
		failures := e.out.failed()
		if len(failures) != 2 {
			t.Fatalf("%d failures, want 2", len(failures))
		}
		for _, f := range failures {
			var be *BatchError
			var he *HTTPError
			if !errors.Is(f.err, context.DeadlineExceeded) || !errors.As(f.err, &be) || be.Attempts != 1 ||
				!errors.As(f.err, &he) || he.StatusCode != 503 {
				t.Fatalf("failure %v, want the deadline, 1 attempt and the last 503", f.err)
			}
		}
		// Closed already: as in v3, a Close after it returns ErrClosed, and
		// reports nothing again.
		if err := e.client.Close(); !errors.Is(err, ErrClosed) {
			t.Fatalf("Close after Shutdown = %v, want ErrClosed", err)
		}
		if _, failed := e.out.counts(); failed != 2 {
			t.Fatalf("a second close reported again: %d failures", failed)
		}
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
			switch {
			case err == nil:
				ok++
			case !errors.Is(err, ErrClosed):
				t.Fatalf("concurrent Close = %v", err)
			}
		}
		if ok != 1 {
			t.Fatalf("%d concurrent Close calls returned nil, want 1 (the others ErrClosed)", ok)
		}
		if err := e.client.Enqueue(Track{UserId: "u", Event: "E"}); !errors.Is(err, ErrClosed) {
			t.Fatalf("Enqueue after Close = %v, want ErrClosed", err)
		}
		if err := e.client.Flush(context.Background()); !errors.Is(err, ErrClosed) {
			t.Fatalf("Flush after Close = %v, want ErrClosed", err)
		}
		if err := e.client.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown after Close = %v", err)
		}
		if ok, failed := e.out.counts(); ok != 3 || failed != 0 {
			t.Fatalf("callbacks %d/%d, want 3 successes", ok, failed)
		}
		if st := e.client.Stats(); st.Rejected.Closed != 1 {
			t.Fatalf("stats %+v", st)
		}
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
				if err != nil && !errors.Is(err, ErrQueueFull) {
					t.Errorf("Enqueue = %v", err)
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
	successes, failures := e.out.ids()
	for id := range accepted {
		if successes[id]+failures[id] != 1 {
			t.Fatalf("accepted event %s got %d callbacks", id, successes[id]+failures[id])
		}
	}
	if len(successes)+len(failures) != len(accepted) || len(accepted) < 2000 {
		t.Fatalf("%d callbacks for %d accepted events", len(successes)+len(failures), len(accepted))
	}
	if st := e.client.Stats(); st.Enqueued != int64(len(accepted)) || st.Delivered != int64(len(accepted)) {
		t.Fatalf("stats %+v for %d accepted events", st, len(accepted))
	}
}

func TestOneRetryAfterPausesEveryUpload(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.RetryAfter(429, "30"))
		e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(4))
		start := time.Now()
		e.enqueue(tracks("first", 1)...)
		synctest.Wait()
		time.Sleep(time.Second)
		e.enqueue(tracks("other", 3)...)
		e.close()
		reqs := e.api.Requests()
		if len(reqs) != 5 {
			t.Fatalf("%d requests, want 5", len(reqs))
		}
		for _, r := range reqs[1:] {
			if r.At.Sub(start) < 30*time.Second {
				t.Fatalf("request %v sent %v after the 429, inside its Retry-After of 30s", r.MessageIDs(), r.At.Sub(start))
			}
		}
		if st := e.client.Stats(); st.Retries.RateLimit != 1 || st.RateLimitedWaits != 4 {
			t.Fatalf("stats %+v: want 1 rate-limit retry and 4 uploads held", st)
		}
	})
}

func TestCallbackPanicIsRecovered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI()
		e := newEnv(t, api)
		calls := 0
		var mu sync.Mutex
		e.client.callback = callbackFunc(func(m Message, err error) {
			mu.Lock()
			calls++
			mu.Unlock()
			panic("user bug")
		})
		e.enqueue(tracks("m", 3)...)
		e.close()
		if calls != 3 {
			t.Fatalf("%d callbacks after panics, want 3", calls)
		}
		if !strings.Contains(e.logs.String(), "callback panicked") {
			t.Fatalf("panic not logged: %s", e.logs.String())
		}
		if st := e.client.Stats(); st.Delivered != 3 {
			t.Fatalf("stats %+v", st)
		}
	})
}

type callbackFunc func(Message, error)

func (f callbackFunc) Success(m Message)            { f(m, nil) }
func (f callbackFunc) Failure(m Message, err error) { f(m, err) }

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
		api := newAPI().Rule(always(mockapi.Answer{Delay: 10 * time.Second}))
		rt := &concurrency{next: api}
		e := newEnv(t, api, WithHTTPClient(&http.Client{Transport: rt}), WithFlushAt(10), WithMaxConcurrentRequests(3),
			WithCloseTimeout(0))
		msgs := tracks("m", 100)
		e.enqueue(msgs...)
		e.close()
		if rt.peak != 3 {
			t.Fatalf("%d uploads ran at once, want MaxConcurrentRequests (3)", rt.peak)
		}
		e.assertDeliveredOnce(msgs)
		// The SDK never closes idle connections of a client it was given.
		if rt.closeIdleConnCalls != 0 {
			t.Fatalf("CloseIdleConnections called %d times on the user's transport", rt.closeIdleConnCalls)
		}
	})
}

func TestMessageIDAndTotals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.Status(400))
		e := newEnv(t, api, WithFlushAt(2), WithMaxConcurrentRequests(1))
		e.enqueue(tracks("bad", 2)...)
		synctest.Wait()
		e.enqueue(Identify{UserId: "u"}, Alias{UserId: "u", PreviousId: "p", MessageId: "al"})
		e.client.Enqueue(Track{})
		e.close()
		e.client.Enqueue(Track{UserId: "u", Event: "E"})
		for _, f := range e.out.failed() {
			if id := MessageID(f.msg); !strings.HasPrefix(id, "bad") {
				t.Fatalf("MessageID of a failed event = %q", id)
			}
		}
		e.out.mu.Lock()
		ids := []string{MessageID(e.out.successes[0]), MessageID(e.out.successes[1])}
		e.out.mu.Unlock()
		if len(ids[0]) != 36 || ids[1] != "al" {
			t.Fatalf("MessageID of delivered events = %q, want a filled UUID and the given id", ids)
		}
		if MessageID(nil) != "" {
			t.Fatal("MessageID(nil) is not empty")
		}
		st := e.client.Stats()
		if st.Failed.Total() != 2 || st.Rejected.Total() != 2 {
			t.Fatalf("totals: failed %d, rejected %d; stats %+v", st.Failed.Total(), st.Rejected.Total(), st)
		}
	})
}

func TestShutdownFailuresWrapErrShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI().Default(mockapi.Answer{Delay: time.Hour}), WithRequestTimeout(2*time.Hour))
		e.enqueue(tracks("m", 1)...)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := e.client.Shutdown(ctx); !errors.Is(err, context.Canceled) {
			t.Fatalf("Shutdown = %v", err)
		}
		f := e.out.failed()
		if len(f) != 1 || !errors.Is(f[0].err, ErrShutdown) || !errors.Is(f[0].err, context.Canceled) {
			t.Fatalf("failures %+v, want ErrShutdown wrapping context.Canceled", f)
		}
	})
}

func TestBatchInBackoffDoesNotHoldARequestSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(mockapi.Status(503))
		e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1), withExactBackoff())
		start := time.Now()
		e.enqueue(tracks("a", 1)...)
		synctest.Wait()
		e.enqueue(tracks("b", 1)...)
		e.close()
		reqs := api.Requests()
		if len(reqs) != 3 {
			t.Fatalf("%d requests, want 3", len(reqs))
		}
		// a fails, and while it waits 250ms to retry, b goes out on the one
		// request slot.
		if got := reqs[1].MessageIDs()[0]; got != "b0" || reqs[1].At.Sub(start) != 0 {
			t.Fatalf("second request %s at %v, want b0 at once", got, reqs[1].At.Sub(start))
		}
		if got := reqs[2].MessageIDs()[0]; got != "a0" || reqs[2].At.Sub(start) != 250*time.Millisecond {
			t.Fatalf("third request %s at %v, want a0's retry at 250ms", got, reqs[2].At.Sub(start))
		}
	})
}

func TestShutdownAfterCloseIgnoresAnEndedContext(t *testing.T) {
	e := newEnv(t, newAPI())
	e.enqueue(tracks("m", 2)...)
	e.close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for range 100 {
		if err := e.client.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown after a finished Close = %v, want nil", err)
		}
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
			if st := e.client.Stats(); st.QueueDepth != 0 || st.InFlight != 0 {
				t.Fatalf("round %d: %d queued, %d in flight after Flush", round, st.QueueDepth, st.InFlight)
			}
		}
		e.close()
		if st := e.client.Stats(); st.Delivered != 20 || st.Rejected.QueueFull != 0 {
			t.Fatalf("stats %+v, want 20 delivered and none refused", st)
		}
	})
}
