package faults

// Concurrency and lifecycle properties, black-box, over TLS: Enqueue racing
// Close and Shutdown, Close from several goroutines, callbacks that panic.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

// enqueuers runs g goroutines that enqueue events g<i>-<n> until Enqueue
// returns ErrClosed, then 20 more each, which must all return ErrClosed too.
// warm is done once each has had 50 events accepted, or one refused as the
// queue was full (a server that never answers fills it for good, and an
// enqueuer the others outran may never have 50). However the machine
// schedules them, each goes on until Close has run: none stops after a
// count of its own, which a fast run through a full queue could reach
// before the closers start. Once the test calls stop (every closer has
// returned), an enqueuer that has not met ErrClosed yet makes its 20 last
// enqueues, which must be refused too, so the goroutines end even if
// Enqueue wrongly went on accepting.
type enqueuers struct {
	stopped  chan struct{}
	mu       sync.Mutex
	accepted []string
	closed   []string
	full     int
	errs     []error
	wg       sync.WaitGroup
	warm     sync.WaitGroup
}

func startEnqueuers(c *analytics.Client, g int) *enqueuers {
	q := &enqueuers{stopped: make(chan struct{})}
	q.wg.Add(g)
	q.warm.Add(g)
	for i := range g {
		go func() {
			defer q.wg.Done()
			var accepted, closed []string
			var errs []error
			full, warm, after := 0, false, -1
			for n := 0; after != 0; n++ {
				if after > 0 {
					after--
				} else if q.isStopped() {
					after = 20
				}
				id := fmt.Sprintf("g%d-%d", i, n)
				err := c.Enqueue(analytics.Track{MessageId: id, UserId: "u", Event: "E"})
				switch {
				case err == nil:
					accepted = append(accepted, id)
					if after >= 0 {
						errs = append(errs, fmt.Errorf("%s accepted after an ErrClosed or after Close returned", id))
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
				if !warm && (len(accepted) >= 50 || full > 0) {
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

// stop tells the enqueuers that every closer has returned.
func (q *enqueuers) stop() { close(q.stopped) }

func (q *enqueuers) isStopped() bool {
	select {
	case <-q.stopped:
		return true
	default:
		return false
	}
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
			ok, failed := e.out.Calls()
			after[i] = [2]int{ok, failed}
			// assert, not require: this is not the test's goroutine.
			assert.ErrorIs(t, e.client.Enqueue(analytics.Track{MessageId: "late", UserId: "u", Event: "E"}), analytics.ErrClosed, "Enqueue after closer %d returned", i)
			assert.ErrorIs(t, e.client.Flush(context.Background()), analytics.ErrClosed, "Flush after closer %d returned", i)
		})
	}
	close(start)
	wg.Wait()
	ok, failed := e.out.Calls()
	for i, a := range after {
		assert.Equal(t, [2]int{ok, failed}, a, "closer %d: callbacks (successes, failures) made when it returned, against in the end: none may run after Close returns", i)
	}
	return errs
}

// Many goroutines enqueue while Close and Shutdown run from several
// others: every Enqueue that returned nil gets exactly one callback
// (Success, the server being healthy), every other returned ErrClosed (or
// ErrQueueFull) and gets none; the counts balance; the API takes each
// event at least once.
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
	q.stop()
	q.wg.Wait()
	assertCloseResults(t, errs[:3])
	assert.NoError(t, errs[3], "Shutdown")
	for _, err := range q.errs {
		assert.NoError(t, err, "an enqueuer")
	}
	require.NotEmpty(t, q.closed, "no Enqueue returned ErrClosed: the test did not race Close")

	delivered, failed := e.out.Split(t, q.accepted)
	for id, err := range failed {
		assert.NoError(t, err, "%s failed", id)
	}
	// Each delivered event reached the API; more than once only where its
	// batch was sent again, which the API's de-duplication by messageId
	// allows (SPEC §5): a retry after an attempt whose answer did not come
	// within the request timeout (2 s: a loaded machine can take that), or
	// a resend. A batch holds at most FlushAt (25) events.
	got := s.DeliveredIDs()
	st := e.client.Stats()
	again := 0
	for _, id := range delivered {
		assert.GreaterOrEqual(t, got[id], 1, "%s: requests answered 2xx that carried it", id)
		again += max(got[id]-1, 0)
	}
	sentAgain := st.Retries.Backoff + st.Resends
	assert.LessOrEqual(t, int64(again), 25*sentAgain,
		"events the API took more than once: at most a batch's for each batch sent again (%d retries, %d resends)", st.Retries.Backoff, st.Resends)
	assert.Equal(t, int64(len(q.accepted)), st.Enqueued, "Stats.Enqueued")
	// Each closer tries one late Enqueue.
	assert.Equal(t, int64(len(q.closed)+len(errs)), st.Rejected.Closed, "Stats.Rejected.Closed")
	assert.Equal(t, int64(q.full), st.Rejected.QueueFull, "Stats.Rejected.QueueFull")
	assert.Equal(t, int64(len(q.accepted)), st.Delivered, "Stats.Delivered")
	assert.Zero(t, st.InFlight, "Stats.InFlight")
	assert.Zero(t, st.QueueDepth, "Stats.QueueDepth")
	t.Logf("%d accepted, %d ErrClosed, %d ErrQueueFull, %d requests, %d events taken again", len(q.accepted), len(q.closed), q.full, len(s.Received()), again)
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
	q.stop()
	q.wg.Wait()
	for i, err := range errs[:2] {
		assert.ErrorIs(t, err, context.DeadlineExceeded, "Shutdown %d", i)
	}
	for _, err := range q.errs {
		assert.NoError(t, err, "an enqueuer")
	}

	delivered, failed := e.out.Split(t, q.accepted)
	assert.Equal(t, 0, len(delivered), "events delivered by a server that never answers")
	for id, err := range failed {
		// Stop at the first event that fails a check: the others
		// would say the same.
		deadline := assert.ErrorIs(t, err, context.DeadlineExceeded, id)
		shutdown := assert.ErrorIs(t, err, analytics.ErrShutdown, id)
		if !deadline || !shutdown {
			break
		}
	}
	st := e.client.Stats()
	assert.Equal(t, int64(len(q.accepted)), st.Enqueued, "Stats.Enqueued")
	assert.Equal(t, int64(len(q.accepted)), st.Failed.Shutdown, "Stats.Failed.Shutdown: every accepted event")
	assert.Zero(t, st.Delivered, "Stats.Delivered")
	assert.Zero(t, st.InFlight, "Stats.InFlight")
	assert.Zero(t, st.QueueDepth, "Stats.QueueDepth")
	assert.Empty(t, s.DeliveredIDs(), "events the server answered 2xx for")
}

// assertCloseResults checks what racing Close calls returned: as in v3,
// only the call that closed the client reports how it went (nil: every
// event reached its outcome in time), and any other returns ErrClosed. A
// Shutdown may have closed it first, so none may be nil.
func assertCloseResults(t *testing.T, errs []error) {
	t.Helper()
	ok := 0
	for i, err := range errs {
		if err == nil {
			ok++
			continue
		}
		assert.ErrorIs(t, err, analytics.ErrClosed, "Close %d", i)
	}
	assert.LessOrEqual(t, ok, 1, "Close calls that returned nil")
}

// Close and Shutdown, twice and from several goroutines: Shutdown returns
// nil, Close nil once and ErrClosed otherwise, each event is reported
// once, nothing runs afterwards.
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
	assertCloseResults(t, errs[:3])
	for i, err := range errs[3:] {
		assert.NoError(t, err, "Shutdown %d", i)
	}
	assert.ErrorIs(t, e.client.Close(), analytics.ErrClosed, "Close again")
	assert.NoError(t, e.client.Shutdown(bg), "Shutdown again")
	// A context that has already ended, once everything is over: there is
	// nothing left to cut short, so Shutdown returns nil and no event is
	// reported again.
	done, cancel := context.WithCancel(bg)
	cancel()
	for range 50 {
		require.NoError(t, e.client.Shutdown(done), "Shutdown(ended context) after a completed Close")
	}
	checkDeliveredOnce(t, s, e.out, ids(msgs))
	st := e.client.Stats()
	assert.Equal(t, int64(2), st.Retries.Backoff, "Stats.Retries.Backoff")
	assert.Equal(t, int64(95), st.Delivered, "Stats.Delivered")
}

// A user callback that panics, with every kind of value, for every event:
// each panic is recovered and logged, every other event still gets its
// callback, later batches go on, Close returns.
func TestPanickingCallback(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Script(Answer{Status: 400})
	e := newEnv(t, s.URL, s.HTTPClient(t, 0), analytics.WithFlushAt(10), analytics.WithMaxConcurrentRequests(1))
	e.out.SetHook(func(id string, err error) {
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
	delivered, failed := e.out.Split(t, all)
	assert.Len(t, delivered, 30, "events delivered")
	assert.Equal(t, 10, len(failed), "events failed: the batch answered 400")
	for id, err := range failed {
		assert.ErrorIs(t, err, analytics.ErrFatalStatus, id)
		assert.True(t, strings.HasPrefix(id, "first-"), "%s failed, not an event of the first batch", id)
	}
	var panics []testsupport.LogRecord
	for _, r := range e.logs.All() {
		if r.Msg == "analytics: callback panicked" {
			panics = append(panics, r)
		}
	}
	require.Equal(t, len(all), len(panics), "'callback panicked' log records")
	for _, want := range []string{"boom second-5", "callback for first-21", "PanicNilError", "{ID:first-22}", "HTTP 400"} {
		shows := func(r testsupport.LogRecord) bool { return strings.Contains(r.Text, want) }
		assert.True(t, slices.ContainsFunc(panics, shows), "no 'callback panicked' log record shows the panic value %q", want)
	}
	st := e.client.Stats()
	assert.Equal(t, int64(30), st.Delivered, "Stats.Delivered")
	assert.Equal(t, int64(10), st.Failed.FatalStatus, "Stats.Failed.FatalStatus")
	assert.Equal(t, int64(40), st.Enqueued, "Stats.Enqueued")
}
