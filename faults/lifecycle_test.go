package faults

// Concurrency and lifecycle properties, black-box, over TLS: Enqueue racing
// Close and Shutdown, Close from several goroutines, callbacks that panic.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	analytics "github.com/dualpath/analytics-go"
)

// enqueuers runs g goroutines that enqueue events g<i>-<n> until Enqueue
// returns ErrClosed, then 20 more each, which must all return ErrClosed too.
// warm is done once each has had 50 events accepted.
type enqueuers struct {
	mu       sync.Mutex
	accepted []string
	closed   []string
	full     int
	errs     []error
	wg       sync.WaitGroup
	warm     sync.WaitGroup
}

func startEnqueuers(c *analytics.Client, g int) *enqueuers {
	q := &enqueuers{}
	q.wg.Add(g)
	q.warm.Add(g)
	for i := range g {
		go func() {
			defer q.wg.Done()
			var accepted, closed []string
			var errs []error
			full, warm, after := 0, false, -1
			for n := 0; n < 200_000 && after != 0; n++ {
				if after > 0 {
					after--
				}
				id := fmt.Sprintf("g%d-%d", i, n)
				err := c.Enqueue(analytics.Track{MessageId: id, UserId: "u", Event: "E"})
				switch {
				case err == nil:
					accepted = append(accepted, id)
					if after >= 0 {
						errs = append(errs, fmt.Errorf("%s accepted after an ErrClosed", id))
					}
				case errors.Is(err, analytics.ErrClosed):
					closed = append(closed, id)
					if after < 0 {
						after = 20
					}
				case errors.Is(err, analytics.ErrQueueFull):
					full++
				default:
					errs = append(errs, fmt.Errorf("%s: %w", id, err))
				}
				if !warm && len(accepted) >= 50 {
					warm = true
					q.warm.Done()
				}
			}
			if !warm {
				q.warm.Done()
			}
			q.mu.Lock()
			q.accepted = append(q.accepted, accepted...)
			q.closed = append(q.closed, closed...)
			q.full += full
			q.errs = append(q.errs, errs...)
			q.mu.Unlock()
		}()
	}
	return q
}

// closers calls each of fns at once from its own goroutine. After each
// returns, the number of callbacks made so far must be final (every
// callback has returned), and Enqueue and Flush must say ErrClosed.
func closers(t *testing.T, e *env, fns ...func() error) []error {
	t.Helper()
	errs := make([]error, len(fns))
	after := make([][2]int, len(fns))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, f := range fns {
		wg.Go(func() {
			<-start
			errs[i] = f()
			ok, failed := e.out.calls()
			after[i] = [2]int{ok, failed}
			if err := e.client.Enqueue(analytics.Track{MessageId: "late", UserId: "u", Event: "E"}); !errors.Is(err, analytics.ErrClosed) {
				t.Errorf("Enqueue after Close returned = %v, want ErrClosed", err)
			}
			if err := e.client.Flush(context.Background()); !errors.Is(err, analytics.ErrClosed) {
				t.Errorf("Flush after Close returned = %v, want ErrClosed", err)
			}
		})
	}
	close(start)
	wg.Wait()
	ok, failed := e.out.calls()
	for i, a := range after {
		if a != [2]int{ok, failed} {
			t.Errorf("closer %d returned with %v callbacks made, %v in the end: a callback ran after Close returned", i, a, [2]int{ok, failed})
		}
	}
	return errs
}

// Many goroutines enqueue while Close and Shutdown run from several
// others: every Enqueue that returned nil gets exactly one callback
// (Success, the server being healthy), every other returned ErrClosed (or
// ErrQueueFull) and gets none; the counts balance.
func TestEnqueueWhileClosing(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Default(Answer{Delay: time.Millisecond})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(25), analytics.WithMaxConcurrentRequests(4))
	q := startEnqueuers(e.client, 8)
	q.warm.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errs := closers(t, e, e.client.Close, e.client.Close, e.client.Close,
		func() error { return e.client.Shutdown(ctx) })
	q.wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("closer %d: %v", i, err)
		}
	}
	for _, err := range q.errs {
		t.Error(err)
	}
	if len(q.closed) == 0 {
		t.Fatal("no Enqueue returned ErrClosed: the test did not race Close")
	}

	delivered, failed := e.out.split(t, q.accepted)
	for id, err := range failed {
		t.Errorf("%s failed: %v", id, err)
	}
	got := s.DeliveredIDs()
	for _, id := range delivered {
		if got[id] != 1 {
			t.Errorf("%s arrived in %d requests answered 2xx, want 1", id, got[id])
		}
	}
	st := e.client.Stats()
	if st.Enqueued != int64(len(q.accepted)) || st.Rejected.Closed != int64(len(q.closed)+len(errs)) || // each closer tries one late Enqueue

		st.Rejected.QueueFull != int64(q.full) || st.Delivered != int64(len(q.accepted)) ||
		st.InFlight != 0 || st.QueueDepth != 0 {
		t.Errorf("Stats %+v: want %d enqueued and delivered, %d closed, %d queue full", st, len(q.accepted), len(q.closed), q.full)
	}
	t.Logf("%d accepted, %d ErrClosed, %d ErrQueueFull, %d requests", len(q.accepted), len(q.closed), q.full, len(s.Received()))
}

// The same race with a server that never answers and a Shutdown whose
// context ends: every accepted event fails, once, with an error wrapping
// the context's; Shutdown returns that error; Close, racing it, returns
// once the cut-short shutdown has ended.
//
// The server holds every request until the client hangs up, and the
// request timeout is a week, the most New allows: nothing but Shutdown's
// context can end the attempts, so Shutdown returning at all shows that it
// cut them short. (A Shutdown that waited for them would hang the test
// until go test's -timeout, with every goroutine's stack.) No clock is
// read: how long the cut takes on a loaded machine does not matter.
func TestShutdownCutShortWhileEnqueuing(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Default(Answer{Action: Stall})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(25), analytics.WithRequestTimeout(7*24*time.Hour))
	q := startEnqueuers(e.client, 6)
	q.warm.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	errs := closers(t, e,
		func() error { return e.client.Shutdown(ctx) },
		func() error { return e.client.Shutdown(ctx) },
		e.client.Close)
	q.wg.Wait()
	for i, err := range errs[:2] {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown %d = %v, want DeadlineExceeded", i, err)
		}
	}
	for _, err := range q.errs {
		t.Error(err)
	}

	delivered, failed := e.out.split(t, q.accepted)
	if len(delivered) > 0 {
		t.Errorf("%d events delivered by a server that never answers", len(delivered))
	}
	for id, err := range failed {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("%s: %v, want an error wrapping context.DeadlineExceeded", id, err)
			break
		}
	}
	st := e.client.Stats()
	if st.Enqueued != int64(len(q.accepted)) || st.Failed.Shutdown != int64(len(q.accepted)) || st.Delivered != 0 ||
		st.InFlight != 0 || st.QueueDepth != 0 {
		t.Errorf("Stats %+v: want all %d accepted events failed by the shutdown", st, len(q.accepted))
	}
	if n := len(s.DeliveredIDs()); n != 0 {
		t.Errorf("the server answered 2xx for %d events", n)
	}
}

// Close and Shutdown, twice and from several goroutines: all return nil,
// each event is reported once, nothing runs afterwards.
func TestCloseTwiceAndConcurrently(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{Status: 503}, Answer{Status: 503}).Default(Answer{Delay: 5 * time.Millisecond})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(10))
	msgs := tracks("m", 95)
	e.enqueue(msgs...)
	bg := context.Background()
	errs := closers(t, e,
		e.client.Close, e.client.Close, e.client.Close,
		func() error { return e.client.Shutdown(bg) },
		func() error { return e.client.Shutdown(bg) })
	for i, err := range errs {
		if err != nil {
			t.Errorf("closer %d: %v", i, err)
		}
	}
	if err := e.client.Close(); err != nil {
		t.Errorf("Close again: %v", err)
	}
	if err := e.client.Shutdown(bg); err != nil {
		t.Errorf("Shutdown again: %v", err)
	}
	// A context that has already ended, once everything is over: there is
	// nothing left to cut short, so Shutdown returns nil and no event is
	// reported again.
	done, cancel := context.WithCancel(bg)
	cancel()
	for range 50 {
		if err := e.client.Shutdown(done); err != nil {
			t.Fatalf("Shutdown(ended context) after a completed Close = %v, want nil", err)
		}
	}
	checkDeliveredOnce(t, s, e.out, ids(msgs))
	if st := e.client.Stats(); st.Retries.Backoff != 2 || st.Delivered != 95 {
		t.Errorf("Stats %+v", st)
	}
}

// A user callback that panics, with every kind of value, for every event:
// each panic is recovered and logged, every other event still gets its
// callback, later batches go on, Close returns.
func TestPanickingCallback(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{Status: 400})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(10), analytics.WithMaxConcurrentRequests(1))
	e.out.setHook(func(id string, err error) {
		switch {
		case err != nil:
			panic(err)
		case strings.HasSuffix(id, "0"):
			panic(nil) // a *runtime.PanicNilError since Go 1.21
		case strings.HasSuffix(id, "1"):
			panic(fmt.Errorf("callback for %s", id))
		case strings.HasSuffix(id, "2"):
			panic(struct{ ID string }{id})
		default:
			panic("boom " + id)
		}
	})
	first := tracks("first", 30)
	e.enqueue(first...)
	e.flush()
	// The client goes on after 30 panics.
	second := tracks("second", 10)
	e.enqueue(second...)
	e.close()

	all := append(ids(first), ids(second)...)
	delivered, failed := e.out.split(t, all)
	if len(failed) != 10 || len(delivered) != 30 {
		t.Errorf("%d delivered, %d failed; want 30 and the 10 of the batch answered 400", len(delivered), len(failed))
	}
	for id, err := range failed {
		if !errors.Is(err, analytics.ErrFatalStatus) || !strings.HasPrefix(id, "first-") {
			t.Errorf("%s: %v, want ErrFatalStatus for a first-batch event", id, err)
		}
	}
	var panics []logRecord
	for _, r := range e.logs.all() {
		if r.Msg == "analytics: callback panicked" {
			panics = append(panics, r)
		}
	}
	if len(panics) != len(all) {
		t.Fatalf("%d 'callback panicked' log records, want %d", len(panics), len(all))
	}
	for _, want := range []string{"boom second-5", "callback for first-21", "PanicNilError", "{ID:first-22}", "HTTP 400"} {
		found := false
		for _, r := range panics {
			found = found || strings.Contains(r.Text, want)
		}
		if !found {
			t.Errorf("no 'callback panicked' log record shows the panic value %q", want)
		}
	}
	if st := e.client.Stats(); st.Delivered != 30 || st.Failed.FatalStatus != 10 || st.Enqueued != 40 {
		t.Errorf("Stats %+v", st)
	}
}
