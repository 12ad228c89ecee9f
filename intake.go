package analytics

import (
	"cmp"
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
// of the client does not know which. It is the consumer.Outcomes of the
// client's loop, and its Refill and Accepted.
type intake interface {
	consumer.Outcomes
	// precheck returns Enqueue's refusal when the event would be refused
	// whatever it is, so that Enqueue spares its encoding; nil otherwise.
	precheck() error
	// push takes an accepted event's encoded data, with ev and the kept
	// estimate, and returns the queue's length after it (0 when the
	// event waits elsewhere), or Enqueue's error (the length is then
	// not to be used). The intake's own lock
	// (the queue's, or the spool's) orders it against stop: an event is
	// either taken before, or refused.
	push(ctx context.Context, wait bool, data []byte, ev consumer.Event, kept int) (int, error)
	// refill moves events waiting elsewhere (the spool's backlog) into
	// the queue while it has room, and reports whether some still wait.
	refill() (backlog bool)
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
	// spoolStats is Stats.Spool.
	spoolStats() SpoolStats
}

// unstamped is consumer.Event.At of an event whose time of Enqueue is not
// known: one read back from the spool.
const unstamped time.Duration = -1

// memoryIntake is the intake without a spool: events go straight into the
// memory queue (SPEC §3), and a shutdown cut short fails what is left.
type memoryIntake struct{ c *Client }

// precheck refuses before encoding what the queue would refuse anyway. A
// waiting call is refused only when closed, which PushWait sees: it saves
// the lock this look takes.
func (m memoryIntake) precheck() error {
	return refusal(context.Background(), m.c.q.Admission(), false)
}

func (m memoryIntake) push(ctx context.Context, wait bool, data []byte, ev consumer.Event, kept int) (int, error) {
	var res queue.Admission
	var n int
	if !wait {
		res, n = m.c.q.Push(data, ev, kept)
	} else {
		res, n = m.c.q.PushWait(ctx, data, ev, kept)
	}
	return n, refusal(ctx, res, wait)
}

// refill has nothing to move: every event is in the queue.
func (memoryIntake) refill() bool { return false }

func (m memoryIntake) accepted() uint64 {
	pushed, _ := m.c.q.Counts()
	return pushed
}

func (m memoryIntake) stop() { m.c.q.Close() }

// finish fails whatever a cancelled shutdown (or an internal error) left
// queued, with its cause (SPEC §8).
func (m memoryIntake) finish() {
	m.c.loop.Drain(&BatchError{Reason: cmp.Or(m.c.loop.Cause(), shutdownCause(nil))})
}

func (memoryIntake) shutdownError(err error) error { return shutdownCause(err) }

func (memoryIntake) spoolStats() SpoolStats { return SpoolStats{} }

// Ended counts the events of run, delivered or failed, and logs a
// failure: for one that says the configuration is wrong, what was refused,
// and the error, which says what to check (retry.Check), once. The spool's
// intake calls it for the events that do not stay in the spool.
func (m memoryIntake) Ended(run []queue.Item[consumer.Event], err error) {
	n := int64(len(run))
	endedRun(&m.c.stats.latency, run, err == nil)
	if err == nil {
		m.c.stats.delivered.Add(n)
		return
	}
	m.c.stats.failed(err, n)
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
	m.c.failLog.LogAttrs(context.Background(), slog.LevelError, msg,
		slog.Int("events", len(run)), slog.String("error", err.Error()))
}

// Called calls the callback, if any, for the event of it, with the message
// Enqueue took, or, for an event read back from the spool, a Spooled made
// from its bytes; the spool's intake calls it for the events that do not
// stay in the spool. It recovers a panic of the user's callback, so that
// it neither crashes the program nor stops the other events' callbacks.
func (m memoryIntake) Called(it *queue.Item[consumer.Event], err error) {
	if m.c.cfg.callback == nil {
		return
	}
	msg, ok := it.Value.Message.(Message)
	if !ok {
		msg = spooledMessage(it.Data, it.Value.Recovered)
	}
	defer func() {
		if p := recover(); p != nil {
			m.c.log.Error("analytics: callback panicked", slog.Any("panic", p))
		}
	}()
	if err == nil {
		m.c.cfg.callback.Success(msg)
	} else {
		m.c.cfg.callback.Failure(msg, err)
	}
}

// Done has nothing more to do.
func (memoryIntake) Done([]queue.Item[consumer.Event], error) {}
