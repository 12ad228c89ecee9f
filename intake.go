package analytics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/retry"
)

// intake is the one seam between the client and where its events wait:
// the memory queue alone (memoryIntake), or the durable spool in front of
// it (spoolIntake, WithSpool, SPEC §11). New chooses one, once; the rest
// of the client does not know which. Each owns its queue and the
// consumer.Loop that empties it, typed by what it keeps with an event.
type intake interface {
	// precheck returns Enqueue's refusal when the event would be refused
	// whatever it is, so that Enqueue spares its encoding; nil otherwise.
	precheck() error
	// push takes an accepted event's encoded data, with h and the kept
	// estimate, and returns the queue's length after it (0 when the
	// event waits elsewhere), or Enqueue's error. The intake's own lock
	// (the queue's, or the spool's) orders it against stop: an event is
	// either taken before, or refused.
	push(ctx context.Context, wait bool, data []byte, h held, kept int) (int, error)
	// accepted is the number of events taken so far, as the queue
	// numbers them (those waiting in the spool included).
	accepted() uint64
	// stop refuses every later push, and ends the waiting ones.
	stop()
	// finish runs once, after the loop and every upload have ended: it
	// fails (memory) or keeps for the next start (spool) what is left.
	finish()
	// shutdownError is what Close returns when the shutdown was cut short
	// by err.
	shutdownError(err error) error
	// sizes are the queue's: events queued and their bytes, events held
	// (queued or in flight) and their Size.
	sizes() (queued, queuedBytes, held, heldBytes int)
	// spoolStats is Stats.Spool.
	spoolStats() SpoolStats
	// loop is the consumer that empties the queue.
	loop() batchLoop
}

// batchLoop is what the client asks of its consumer.Loop, whatever the
// type it keeps with an event.
type batchLoop interface {
	Start()
	Wake()
	Close()
	Cancel(cause error)
	Cause() error
	Done() <-chan struct{}
	Batches() int64
	Flush(ctx context.Context, target uint64) error
	EndFlushes(err error)
	Drain(err error)
}

// held is what the queue keeps with an event besides its bytes.
type held struct {
	// msg is the message for the callback: nil without a callback, and
	// for an event read back from the spool (its callback gets a Spooled
	// made from its bytes then).
	msg Message
	// at is when Enqueue took it, since New (latencies.since); unstamped
	// for an event read back from the spool.
	at time.Duration
}

// unstamped is held.at of an event whose time of Enqueue is not known.
const unstamped time.Duration = -1

// event is what an intake's queue keeps with an event: held, or what the
// spool intake keeps (spooled).
type event interface {
	base() held
	// message is the message the callback gets for the event of data.
	message(data []byte) Message
}

func (h held) base() held             { return h }
func (h held) message([]byte) Message { return h.msg }

// lane is an intake's queue and the loop that empties it.
type lane[T event] struct {
	q *queue.Queue[T]
	l *consumer.Loop[T]
}

// newLane returns the queue and loop of an intake whose outcomes are out;
// refill and accepted are the loop's (nil: none, the queue's count).
func newLane[T event](c *Client, out consumer.Outcomes[T], refill func() bool, accepted func() uint64) lane[T] {
	q := queue.New[T](c.cfg.maxQueueSize, c.cfg.maxQueueBytes)
	return lane[T]{q: q, l: consumer.NewLoop(consumer.LoopConfig[T]{
		Queue:         q,
		Uploader:      c.up,
		Outcomes:      out,
		FlushAt:       c.cfg.flushAt,
		FlushInterval: c.cfg.flushInterval,
		CallsMayBlock: c.cfg.blockingCallbacks,
		Refill:        refill,
		Accepted:      accepted,
		Halted:        c.stopIntake,
		Logger:        c.log,
	})}
}

func (n lane[T]) loop() batchLoop { return n.l }

func (n lane[T]) sizes() (queued, queuedBytes, held, heldBytes int) { return n.q.Sizes() }

// reporter is what the client does with events that end (SPEC §8): it
// counts them into Stats, logs the failures, and calls the Callback back.
// It is the consumer.Outcomes of a memory-only client; the spool intake
// adds its own steps around it.
type reporter[T event] struct{ c *Client }

// Unsent sends every event.
func (reporter[T]) Unsent([]queue.Item[T]) (int, error) { return 0, nil }

// Ended counts the events of run, delivered or failed, and logs a
// failure: for one that says the configuration is wrong, what was refused,
// and the error, which says what to check (retry.Check), once.
func (o reporter[T]) Ended(run []queue.Item[T], err error) {
	c := o.c
	n := int64(len(run))
	if err == nil {
		c.stats.delivered.Add(n)
		endedRun(&c.stats.latency, run, true)
		return
	}
	c.stats.failed(err, n)
	endedRun(&c.stats.latency, run, false)
	var what string
	var he *HTTPError
	var te *TokenError
	switch {
	case errors.As(err, &te):
		what = "no OAuth access token"
	case !errors.As(err, &he):
	case he.Check != "":
		what = "the tracking API refused the OAuth access token"
	case retry.RejectsCredentials(he.StatusCode):
		what = "the tracking API refused the write key"
	case retry.RejectsEndpoint(he.StatusCode):
		what = fmt.Sprintf("the tracking API answered %d %s", he.StatusCode, http.StatusText(he.StatusCode))
	}
	msg := "analytics: events not delivered"
	if what != "" {
		msg += ": " + what + " (the error says what to check)"
	}
	c.failLog.LogAttrs(context.Background(), slog.LevelError, msg,
		slog.Int("events", len(run)), slog.String("error", err.Error()))
}

// Called calls the callback, if any, for the event of it.
func (o reporter[T]) Called(it *queue.Item[T], err error) {
	if o.c.callback != nil {
		o.c.callOne(it.Value.message(it.Data), err)
	}
}

// Done has nothing more to do.
func (reporter[T]) Done([]queue.Item[T], error) {}

// callOne calls the user's callback, recovering a panic so that it neither
// crashes the program nor stops the other events' callbacks.
func (c *Client) callOne(msg Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			c.log.Error("analytics: callback panicked", slog.Any("panic", p))
		}
	}()
	if err == nil {
		c.callback.Success(msg)
	} else {
		c.callback.Failure(msg, err)
	}
}

// memoryIntake is the intake without a spool: events go straight into the
// memory queue (SPEC §3), and a shutdown cut short fails what is left.
type memoryIntake struct {
	reporter[held]
	lane[held]
}

func newMemoryIntake(c *Client) *memoryIntake {
	m := &memoryIntake{reporter: reporter[held]{c}}
	m.lane = newLane[held](m.c, m, nil, nil)
	return m
}

// precheck refuses before encoding what the queue would refuse anyway. A
// waiting call is refused only when closed, which PushWait sees: it saves
// the lock this look takes.
func (m *memoryIntake) precheck() error {
	return m.c.refusal(context.Background(), m.q.Admission(), false)
}

func (m *memoryIntake) push(ctx context.Context, wait bool, data []byte, h held, kept int) (int, error) {
	var res queue.Admission
	var n int
	if !wait {
		res, n = m.q.Push(data, h, kept)
	} else {
		res, n = m.q.PushWait(ctx, data, h, kept)
	}
	if err := m.c.refusal(ctx, res, wait); err != nil {
		return 0, err
	}
	return n, nil
}

func (m *memoryIntake) accepted() uint64 {
	pushed, _ := m.q.Counts()
	return pushed
}

func (m *memoryIntake) stop() { m.q.Close() }

// finish fails whatever a cancelled shutdown (or an internal error) left
// queued, with its cause (SPEC §8).
func (m *memoryIntake) finish() {
	cause := m.l.Cause()
	if cause == nil {
		cause = shutdownCause(nil)
	}
	m.l.Drain(&BatchError{Reason: cause})
}

func (m *memoryIntake) shutdownError(err error) error { return shutdownCause(err) }

func (m *memoryIntake) spoolStats() SpoolStats { return SpoolStats{} }
