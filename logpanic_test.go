package analytics

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/e2e/mockapi"
)

// panickyHandler is a slog.Handler that panics on the records it matches,
// as one writing to a testing.T whose test has ended does: the first
// limit of them, or all of them when limit is 0.
type panickyHandler struct {
	match  func(slog.Record) bool
	limit  int
	mu     sync.Mutex
	panics int
}

// panicsOn panics on the records whose message contains msg.
func panicsOn(msg string, limit int) *panickyHandler {
	return &panickyHandler{match: func(r slog.Record) bool { return strings.Contains(r.Message, msg) }, limit: limit}
}

func (h *panickyHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *panickyHandler) Handle(_ context.Context, r slog.Record) error {
	if !h.match(r) {
		return nil
	}
	h.mu.Lock()
	arm := h.limit == 0 || h.panics < h.limit
	if arm {
		h.panics++
	}
	h.mu.Unlock()
	if arm {
		panic("Log in goroutine after TestSomething has completed: " + r.Message)
	}
	return nil
}

func (h *panickyHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *panickyHandler) WithGroup(string) slog.Handler      { return h }

func (h *panickyHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.panics
}

// panickyCallback records each outcome in out, then panics.
type panickyCallback struct{ out *outcomes }

func (c panickyCallback) Success(m Message) {
	c.out.Success(m)
	panic("user bug in Success")
}

func (c panickyCallback) Failure(m Message, err error) {
	c.out.Failure(m, err)
	panic("user bug in Failure")
}

// assertOutcomes checks that each message got exactly one callback: a
// Success for those in ok, a Failure for those in failed.
func (e *env) assertOutcomes(ok, failed []Message) {
	e.t.Helper()
	successes, failures := e.out.ids()
	for _, m := range ok {
		if id := messageID(m); successes[id] != 1 || failures[id] != 0 {
			e.t.Errorf("messageId %s got %d Success and %d Failure callbacks, want 1 and 0", id, successes[id], failures[id])
		}
	}
	for _, m := range failed {
		if id := messageID(m); successes[id] != 0 || failures[id] != 1 {
			e.t.Errorf("messageId %s got %d Success and %d Failure callbacks, want 0 and 1", id, successes[id], failures[id])
		}
	}
}

// A handler that panics once, on the record of a failed batch, must not
// make the client count the batch twice, give its queue budget back twice
// (InFlight −10, and MaxQueueSize no longer enforced), or call back twice.
func TestLogPanicOnFailureKeepsStatsExact(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := panicsOn("events not delivered", 1)
		// The first batch is refused; the next uploads stall for an hour.
		api := newAPI().Script(mockapi.Status(400)).Default(mockapi.Answer{Delay: time.Hour})
		e := newEnv(t, api, WithMaxQueueSize(10), WithFlushAt(10), WithRequestTimeout(2*time.Hour),
			WithLogger(slog.New(h)), WithCloseTimeout(0))
		refused := tracks("a", 10)
		e.enqueue(refused...)
		e.flush()
		if h.count() != 1 {
			t.Fatalf("the handler panicked %d times, want 1", h.count())
		}
		st := e.client.Stats()
		if st.Enqueued != 10 || st.Failed.Total() != 10 || st.Failed.FatalStatus != 10 || st.InFlight != 0 || st.QueueDepth != 0 {
			t.Fatalf("stats %+v, want 10 enqueued, 10 failed, none held", st)
		}
		// The bound holds: 10 of 30 events fit while the uploads stall.
		accepted := 0
		for _, m := range tracks("b", 30) {
			err := e.client.Enqueue(m)
			if err == nil {
				accepted++
			} else if !errors.Is(err, ErrQueueFull) {
				t.Fatalf("Enqueue: %v", err)
			}
		}
		if accepted != 10 {
			t.Fatalf("accepted %d of 30 events with MaxQueueSize 10", accepted)
		}
		e.close()
		e.assertOutcomes(tracks("b", 10), refused)
		if st := e.client.Stats(); st.Enqueued != 20 || st.Delivered != 10 || st.Failed.Total() != 10 || st.InFlight != 0 {
			t.Fatalf("stats after Close %+v, want 20 enqueued, 10 delivered, 10 failed", st)
		}
	})
}

// A callback that panics, and a handler that panics on the record of that
// panic: every event still gets exactly one callback, and the events the
// API accepted get Success, never Failure.
func TestLogPanicAfterCallbackPanicCallsBackOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := panicsOn("callback panicked", 1)
		out := &outcomes{}
		e := newEnv(t, newAPI(), WithLogger(slog.New(h)), WithCallback(panickyCallback{out}))
		e.out = out
		msgs := tracks("m", 10)
		e.enqueue(msgs...)
		e.close()
		if h.count() != 1 {
			t.Fatalf("the handler panicked %d times, want 1", h.count())
		}
		e.assertDeliveredOnce(msgs)
		if st := e.client.Stats(); st.Delivered != 10 || st.Failed.Total() != 0 || st.InFlight != 0 {
			t.Fatalf("stats %+v, want 10 delivered", st)
		}
	})
}

// A handler that panics on every record (a retry's warning, a failed
// batch, a callback's panic, and whatever the SDK logs about those) must
// crash nothing; every event gets exactly one callback.
func TestLogPanicOnEveryRecordCrashesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := &panickyHandler{match: func(slog.Record) bool { return true }}
		tries := 0
		api := newAPI().Rule(func(r mockapi.Request) mockapi.Answer {
			if strings.HasPrefix(r.MessageIDs()[0], "bad") {
				return mockapi.Status(400)
			}
			if tries++; tries == 1 {
				return mockapi.Status(503) // retried
			}
			return mockapi.Answer{Default: true}
		})
		out := &outcomes{}
		e := newEnv(t, api, WithLogger(slog.New(h)), WithCallback(panickyCallback{out}), withExactBackoff())
		e.out = out
		good, bad := tracks("good", 5), tracks("bad", 5)
		e.enqueue(good...)
		e.flush()
		e.enqueue(bad...)
		e.close()
		e.assertOutcomes(good, bad)
		if h.count() < 3 {
			t.Fatalf("the handler panicked %d times, want at least 3 (retry, failure, callback)", h.count())
		}
		st := e.client.Stats()
		if st.Enqueued != 10 || st.Delivered != 5 || st.Failed.FatalStatus != 5 || st.Retries.Backoff != 1 || st.InFlight != 0 {
			t.Fatalf("stats %+v, want 5 delivered after a retry and 5 failed", st)
		}
	})
}

// The reporting of a batch is safe on its own, whatever the logger: with a
// handler that panics, not shielded by the client's wrapper, the queue
// budget is still given back once, and each event called back once, with
// its own outcome.
func TestBatchReportSurvivesAPanickingLogCall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Rule(func(r mockapi.Request) mockapi.Answer {
			if strings.HasPrefix(r.MessageIDs()[0], "bad") {
				return mockapi.Status(400)
			}
			return mockapi.Answer{Default: true}
		})
		out := &outcomes{}
		e := newEnv(t, api, WithCallback(panickyCallback{out}), WithMaxQueueSize(10), WithFlushAt(5))
		e.out = out
		// Once on a failed batch, and on every callback panic.
		var failedOnce atomic.Bool
		h := &panickyHandler{match: func(r slog.Record) bool {
			switch {
			case strings.Contains(r.Message, "callback panicked"):
				return true
			case strings.Contains(r.Message, "events not delivered"):
				return failedOnce.CompareAndSwap(false, true)
			}
			return false
		}}
		e.client.log, e.client.failLog = slog.New(h), slog.New(h)
		good, bad := tracks("good", 5), tracks("bad", 5)
		e.enqueue(good...)
		e.flush()
		e.enqueue(bad...)
		e.flush()
		// Both batches' budget is back: 10 more fit in MaxQueueSize 10.
		more := tracks("more", 10)
		e.enqueue(more...)
		e.close()
		e.assertOutcomes(append(good, more...), bad)
		if h.count() != 21 {
			t.Fatalf("the handler panicked %d times, want 21 (a failed batch, 20 callbacks)", h.count())
		}
		if st := e.client.Stats(); st.Enqueued != 20 || st.Delivered != 15 || st.Failed.Total() != 5 || st.InFlight != 0 {
			t.Fatalf("stats %+v, want 15 delivered and 5 failed of 20", st)
		}
	})
}
