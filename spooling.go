package analytics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
	"github.com/dualpath/analytics-go/spool"
)

// spoolIntake is the intake with a spool (WithSpool, SPEC §11): every
// event is written to the spool first, and goes into the memory queue
// straight away when nothing waits on disk before it and the queue has
// room, or later, read back from disk (refill). An event's record is
// marked done (acked) after its callback; a shutdown cut short leaves
// what has no outcome in the spool for the next start.
type spoolIntake struct {
	c  *Client
	sp *spool.Spool
	// closed is set once finish has closed the spool, whose counts are
	// final from then on.
	closed atomic.Bool
}

// newSpoolIntake opens the spool directory, which recovers what an earlier
// client left there: those events wait in the spool's backlog, ahead of
// anything enqueued now, and the loop takes them into the queue first.
func newSpoolIntake(c *Client) (*spoolIntake, error) {
	opts := c.cfg.spool
	opts.Logger = throttled(c.cfg.logger)
	sp, err := spool.Open(c.cfg.spoolDir, opts)
	if err != nil {
		return nil, fmt.Errorf("analytics: %w", err)
	}
	s := &spoolIntake{c: c, sp: sp}
	if n := sp.Stats().Recovered; n > 0 {
		c.log.LogAttrs(context.Background(), slog.LevelInfo,
			"analytics: events an earlier client left in the spool will be sent first",
			slog.Int64("events", n), slog.String("dir", c.cfg.spoolDir))
	}
	return s, nil
}

// precheck refuses nothing: whether the spool takes an event is the
// spool's to say.
func (s *spoolIntake) precheck() error { return nil }

// push writes the encoded event data to the spool; the spool hands it
// straight to the queue when nothing waits on disk before it and the
// queue has room, and keeps it on disk otherwise, for refill. It returns
// the queue's length after the push (0 when the event stayed on disk), or
// Enqueue's error: ErrClosed, ErrQueueFull (the spool is at its bound), or
// one wrapping ErrSpool and the file system's error.
func (s *spoolIntake) push(ctx context.Context, wait bool, data []byte, ev consumer.Event, kept int) (int, error) {
	n := 0
	direct := func(id spool.ID) bool {
		ev.Spool = id
		res, k := s.c.q.Push(data, ev, kept)
		if res != queue.Admitted {
			return false // on disk: n stays 0, and the loop is woken
		}
		n = k
		return true
	}
	var err error
	if wait {
		_, err = s.sp.AppendWait(ctx, data, direct)
	} else {
		_, err = s.sp.Append(data, direct)
	}
	c := s.c
	switch {
	case err == nil && n == 0:
		// The event waits on disk: the queue is as full as it gets, and
		// the loop cuts it whatever FlushAt says, once woken.
		c.loop.Wake()
		return 0, nil
	case err == nil:
		return n, nil
	case errors.Is(err, spool.ErrClosed):
		return 0, refusal(ctx, queue.Closed, wait)
	case errors.Is(err, spool.ErrFull):
		return 0, refusal(ctx, queue.Full, wait)
	}
	return 0, &wrapped{ErrSpool, err}
}

func (s *spoolIntake) accepted() uint64 { return s.sp.Stats().Handed }

// stop seals the spool; the queue stays open: the backlog on disk still
// comes into it to be sent.
func (s *spoolIntake) stop() { s.sp.Seal() }

// shutdownError is nil: what is left is kept, not failed.
func (s *spoolIntake) shutdownError(error) error { return nil }

// refill takes events waiting in the spool into the queue while it has
// room, oldest first, and reports whether some still wait on disk.
func (s *spoolIntake) refill() (backlog bool) {
	if s.sp.Stats().Backlog == 0 {
		return false
	}
	// A damaged record still takes its place in the queue, so that it is
	// counted and called back like the others (Flush waits for it too),
	// with its bytes as read; its batch fails it without sending it.
	_, err := s.sp.Load(s.take(false), s.take(true))
	if err != nil {
		// The record stays first in the backlog; the next turn of the
		// loop (an upload ending, the flush timer) reads it again.
		s.c.failLog.LogAttrs(context.Background(), slog.LevelWarn,
			"analytics: could not read events back from the spool; will try again",
			slog.String("error", err.Error()))
	}
	return s.sp.Stats().Backlog > 0
}

// take returns what refill hands spool.Load: it pushes an event read back
// from the spool into the queue, marked damaged or not, and reports whether
// the queue took it.
func (s *spoolIntake) take(damaged bool) func(spool.ID, []byte, bool) bool {
	return func(id spool.ID, data []byte, recovered bool) bool {
		res, _ := s.c.q.Push(data, consumer.Event{At: unstamped, Spool: id, Recovered: recovered, Damaged: damaged}, 0)
		return res == queue.Admitted
	}
}

// errDamaged is the failure of an event whose record the spool found
// damaged (its checksum fails) when reading it back: it matches ErrSpool.
var errDamaged = &wrapped{ErrSpool, errors.New("spool: the event's record is damaged on disk (its checksum fails); it was skipped, not sent")}

// leaves reports whether events that ended with err stay in the spool for
// the next start instead of failing: those a shutdown cut short. They have
// no outcome yet: they are not counted, get no callback, and stay unacked.
func leaves(err error) bool {
	return err != nil && (errors.Is(err, ErrShutdown) || errors.Is(err, ErrRetriesStopped))
}

// Ended wakes the loop, whose queue has room now, while events wait on
// disk, and counts run unless it leaves.
func (s *spoolIntake) Ended(run []queue.Item[consumer.Event], err error) {
	if s.sp.Stats().Backlog > 0 {
		s.c.loop.Wake()
	}
	if !leaves(err) {
		memoryIntake{s.c}.Ended(run, err)
	}
}

// Called calls the callback back, unless the event leaves.
func (s *spoolIntake) Called(it *queue.Item[consumer.Event], err error) {
	if !leaves(err) {
		memoryIntake{s.c}.Called(it, err)
	}
}

// Done marks done in the spool the records of run, whose callbacks have
// been called, unless a shutdown left them there.
func (s *spoolIntake) Done(run []queue.Item[consumer.Event], err error) {
	if leaves(err) {
		return
	}
	ids := make([]spool.ID, len(run))
	for i, it := range run {
		ids[i] = it.Value.Spool
	}
	if err := s.sp.Ack(ids); err != nil {
		// The events have their outcome; only a restart before the
		// spool reclaims them could send them again, with their ids.
		s.c.failLog.LogAttrs(context.Background(), slog.LevelWarn,
			"analytics: could not mark events done in the spool; a restart may send them again",
			slog.String("error", err.Error()))
	}
}

// finish runs once, after the loop and every upload have ended: the
// events still queued, and those on disk, stay in the spool for the next
// New; it says how many.
func (s *spoolIntake) finish() {
	// Drained as a shutdown cut short (whatever stopped the loop): the
	// queue gives their room back, and they leave (leaves), unreported.
	s.c.loop.Drain(shutdownCause(nil))
	log := s.c.log
	if err := s.sp.Close(); err != nil {
		log.LogAttrs(context.Background(), slog.LevelWarn, "analytics: closing the spool",
			slog.String("error", err.Error()))
	}
	s.closed.Store(true)
	if left := s.sp.Stats().Records; left > 0 {
		log.LogAttrs(context.Background(), slog.LevelWarn,
			"analytics: events not delivered before the shutdown ended stay in the spool for the next start",
			slog.Int64("events", left), slog.String("dir", s.c.cfg.spoolDir))
	}
}

// spoolStats is Stats.Spool: the spool's counts, and what Close left.
func (s *spoolIntake) spoolStats() SpoolStats {
	closed := s.closed.Load() // before Stats: once closed, they are final
	st, left := s.sp.Stats(), int64(0)
	if closed {
		// What has no outcome yet is what the shutdown left.
		left = st.Records
	}
	return SpoolStats{
		Bytes:          st.Bytes,
		MaxBytes:       s.c.cfg.spool.MaxBytes,
		Records:        st.Records,
		OnDisk:         st.Backlog,
		Recovered:      st.Recovered,
		SkippedCorrupt: st.Corrupt,
		Left:           left,
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
