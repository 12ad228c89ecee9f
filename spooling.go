package analytics

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/spool"
)

// held is what the queue keeps with an event besides its bytes.
type held struct {
	// msg is the message for the callback: nil without a callback, and
	// for an event read back from the spool (its callback gets a Spooled
	// made from its bytes then).
	msg  Message
	rec  spool.ID // its record, with a spool
	from origin
	at   time.Duration // when Enqueue took it, since New (latencies.since); 0 unless from Enqueue
	// damaged marks a record the spool found damaged when reading it
	// back: no bytes to send; its batch reports it failed (errDamaged).
	damaged bool
}

// origin says where an event in the queue came from.
type origin uint8

const (
	fromEnqueue origin = iota // pushed by Enqueue
	fromDisk                  // Enqueue spooled it; read back from disk
	fromEarlier               // an earlier client spooled it; recovered by New
)

// openSpool opens the spool directory, which recovers what an earlier
// client left there: those events wait in the spool's backlog, ahead of
// anything enqueued now, and the loop takes them into the queue first.
func (c *Client) openSpool() error {
	sp, err := spool.Open(c.cfg.spoolDir, spool.Options{
		MaxBytes: c.cfg.spoolMaxBytes,
		Sync:     c.cfg.spoolSync,
		FS:       c.cfg.spoolFS,
		Logger:   throttled(c.log),
	})
	if err != nil {
		return fmt.Errorf("analytics: %w", err)
	}
	c.spool = sp
	if n := sp.Stats().Recovered; n > 0 {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			"analytics: events an earlier client left in the spool will be sent first",
			slog.Int64("events", n), slog.String("dir", c.cfg.spoolDir))
	}
	return nil
}

// appendToSpool writes the encoded event data to the spool; the spool
// hands it straight to the queue when nothing waits on disk before it and
// the queue has room, and keeps it on disk otherwise, for refill. It
// returns the queue's length after the push (0 when the event stayed on
// disk), or Enqueue's error: ErrClosed, ErrQueueFull (the spool is at its
// bound), or one wrapping ErrSpool and the file system's error.
func (c *Client) appendToSpool(ctx context.Context, wait bool, data []byte, h held, kept int) (int, error) {
	n := 0
	direct := func(id spool.ID) bool {
		res, k := c.queue.Push(data, held{msg: h.msg, rec: id, at: h.at}, kept)
		n = k
		return res == queue.Admitted
	}
	var err error
	if wait {
		_, err = c.spool.AppendWait(ctx, data, direct)
	} else {
		_, err = c.spool.Append(data, direct)
	}
	switch {
	case err == nil && n == 0:
		// The event waits on disk: the queue is as full as it gets, and
		// the loop cuts it whatever FlushAt says (wantCut), once woken.
		select {
		case c.room <- struct{}{}:
		default:
		}
		return 0, nil
	case err == nil:
		return n, nil
	case errors.Is(err, spool.ErrClosed):
		c.stats.rejClosed.Add(1)
		return 0, ErrClosed
	case errors.Is(err, spool.ErrFull):
		c.stats.rejFull.Add(1)
		if wait {
			return 0, queueFullError(ctx.Err())
		}
		return 0, ErrQueueFull
	}
	c.stats.rejSpool.Add(1)
	return 0, &spoolError{err}
}

// spoolError is Enqueue's error when the spool could not write an event:
// it matches ErrSpool and the file system's error.
type spoolError struct{ cause error }

// Error reads "analytics: the spool could not keep the event: spool:
// write /dir/...seg: no space left on device".
func (e *spoolError) Error() string { return ErrSpool.Error() + ": " + e.cause.Error() }

// Unwrap returns ErrSpool and the cause.
func (e *spoolError) Unwrap() []error { return []error{ErrSpool, e.cause} }

// refill takes events waiting in the spool into the queue while it has
// room, oldest first, and reports whether some still wait on disk. Without
// a spool it does nothing.
func (c *Client) refill() (backlog bool) {
	if c.spool == nil || c.spool.Backlog() == 0 {
		return false
	}
	_, err := c.spool.Load(func(id spool.ID, data []byte, recovered bool) bool {
		res, _ := c.queue.Push(data, held{rec: id, from: originOf(recovered)}, 0)
		return res == queue.Admitted
	}, func(id spool.ID, data []byte, recovered bool) bool {
		// A damaged record still takes its place in the queue, so that
		// it is counted and called back like the others (Flush waits for
		// it too), with its bytes as read; its batch fails it without
		// sending it.
		res, _ := c.queue.Push(data, held{rec: id, from: originOf(recovered), damaged: true}, 0)
		return res == queue.Admitted
	})
	if err != nil {
		// The record stays first in the backlog; the next turn of the
		// loop (an upload ending, the flush timer) reads it again.
		c.failLog.LogAttrs(context.Background(), slog.LevelWarn,
			"analytics: could not read events back from the spool; will try again",
			slog.String("error", err.Error()))
	}
	return c.spool.Backlog() > 0
}

func originOf(recovered bool) origin {
	if recovered {
		return fromEarlier
	}
	return fromDisk
}

// errDamaged is the failure of an event whose record the spool found
// damaged (its checksum fails) when reading it back: it matches ErrSpool.
var errDamaged = &spoolError{errors.New("spool: the event's record is damaged on disk (its checksum fails); it was skipped, not sent")}

// failDamaged moves the damaged events of r to its front, the others
// keeping their order, and reports them failed. It returns how many there
// were: the batch's upload sends the events after them.
func (c *Client) failDamaged(r *report) int {
	k := 0
	for _, it := range r.items {
		if it.Value.damaged {
			k++
		}
	}
	if k > 0 {
		slices.SortStableFunc(r.items, func(a, b queue.Item[held]) int {
			return cmp.Compare(goodFirst(a), goodFirst(b))
		})
		c.end(r, k, &BatchError{Reason: errDamaged})
	}
	return k
}

// goodFirst is 1 for an event to send, 0 for a damaged one.
func goodFirst(it queue.Item[held]) int {
	if it.Value.damaged {
		return 0
	}
	return 1
}

// leaves reports whether events that ended with err stay in the spool for
// the next start instead of failing: with a spool, those a shutdown cut
// short.
func (c *Client) leaves(err error) bool {
	return c.spool != nil && err != nil && (errors.Is(err, ErrShutdown) || errors.Is(err, ErrRetriesStopped))
}

// ack marks done in the spool the records of the events called back since
// the last ack, unless a shutdown left them there.
func (c *Client) ack(r *report) {
	if c.spool == nil || r.acked >= r.called {
		return
	}
	lo := r.acked
	r.acked = r.called
	if c.leaves(r.err) {
		return
	}
	p := idSlices.Get().(*[]spool.ID)
	ids := (*p)[:0]
	for _, it := range r.items[lo:r.called] {
		ids = append(ids, it.Value.rec)
	}
	err := c.spool.Ack(ids)
	*p = ids
	idSlices.Put(p)
	if err != nil {
		// The events have their outcome; only a restart before the
		// spool reclaims them could send them again, with their ids.
		c.failLog.LogAttrs(context.Background(), slog.LevelWarn,
			"analytics: could not mark events done in the spool; a restart may send them again",
			slog.String("error", err.Error()))
	}
}

var idSlices = sync.Pool{New: func() any { return new([]spool.ID) }}

// closeSpool runs once, after the loop and every upload have ended: the
// events still queued, and those on disk, stay in the spool for the next
// New; it says how many.
func (c *Client) closeSpool() {
	if rest := c.queue.Drain(); len(rest.Items) > 0 {
		size := 0
		for _, it := range rest.Items {
			size += it.Size()
		}
		c.queue.Release(len(rest.Items), size)
	}
	if err := c.spool.Close(); err != nil {
		c.log.LogAttrs(context.Background(), slog.LevelWarn, "analytics: closing the spool",
			slog.String("error", err.Error()))
	}
	final := c.spool.Stats()
	c.stats.spoolFinal.Store(&final)
	if left := final.Records; left > 0 {
		c.log.LogAttrs(context.Background(), slog.LevelWarn,
			"analytics: events not delivered before the shutdown ended stay in the spool for the next start",
			slog.Int64("events", left), slog.String("dir", c.cfg.spoolDir))
	}
}

// spooledMessage is the Spooled message a callback gets for an event read
// back from the spool, made from its bytes (copied: the queue's memory is
// reused once the batch ends).
func spooledMessage(data []byte, recovered bool) Spooled {
	var head struct {
		Type      string `json:"type"`
		MessageId string `json:"messageId"`
	}
	_ = json.Unmarshal(data, &head) // the SDK wrote data; a field it lacks stays empty
	return Spooled{
		Type:      head.Type,
		MessageId: head.MessageId,
		JSON:      bytes.Clone(data),
		Recovered: recovered,
	}
}
