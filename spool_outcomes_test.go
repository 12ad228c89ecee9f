package analytics

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// The outcomes of events with the durable spool, at the client level (SPEC
// §11): every accepted event ends in exactly one callback or is left in the
// spool, and Stats add up once Close or Shutdown has returned.

// assertSpoolIdentity checks the accounting identity of §11 and that the
// records left in the spool are those Stats.Spool.Left counts, once Close
// or Shutdown has returned.
func assertSpoolIdentity(t *testing.T, c *Client) Stats {
	t.Helper()
	st := c.Stats()
	assert.Equal(t, st.Enqueued+st.Spool.Recovered, st.Delivered+st.Failed.Total()+st.Spool.Left,
		"Enqueued + Spool.Recovered == Delivered + Failed.Total() + Spool.Left: %+v", st)
	assert.Equal(t, st.Spool.Records, st.Spool.Left, "Spool.Records == Spool.Left after close")
	return st
}

// assertAtMostOneCallback checks that no messageId got more than one final
// callback, and that the callbacks add up to Delivered + Failed.
func assertAtMostOneCallback(t *testing.T, out *outcomes, st Stats) {
	t.Helper()
	successes, failures := out.ByID()
	for id, n := range successes {
		assert.Equal(t, 1, n+failures[id], "final callbacks of %s", id)
	}
	for id, n := range failures {
		if successes[id] == 0 {
			assert.Equal(t, 1, n, "Failure callbacks of %s", id)
		}
	}
	ok, failed := out.Calls()
	assert.Equal(t, st.Delivered, int64(ok), "Success callbacks == Stats.Delivered")
	assert.Equal(t, st.Failed.Total(), int64(failed), "Failure callbacks == Stats.Failed.Total()")
}

// A Flush waiting for events that wait on disk must end when a Shutdown
// cut short leaves them in the spool: the client is closed, no goroutine
// of it runs, and nothing will ever take those events. (Without a spool
// the same Flush returns: the shutdown fails what is left.)
func TestSpoolFlushEndsWhenShutdownLeavesBacklog(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Default(analyticstest.Answer{Delay: time.Hour})
		e := newEnv(t, api, WithSpool(dir), WithMaxQueueSize(20), WithFlushAt(10), WithMaxConcurrentRequests(1))
		e.enqueue(tracks("fl-", 200)...)
		require.Positive(t, e.client.Stats().Spool.OnDisk, "events waiting on disk")

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		flushed := make(chan error, 1)
		go func() { flushed <- e.client.Flush(ctx) }()
		synctest.Wait() // Flush is waiting

		cutShort(t, e.client)
		synctest.Wait()
		select {
		case err := <-flushed:
			// What is left stays in the spool: the Flush ends with the
			// client, unflushed.
			assert.ErrorIs(t, err, ErrClosed, "the Flush that was waiting")
		default:
			t.Errorf("Flush(context.Background-like ctx) is still blocked after Shutdown returned: it waits forever for events left on disk")
			cancel()
			<-flushed
		}
		st := assertSpoolIdentity(t, e.client)
		assert.Equal(t, int64(200), st.Spool.Left, "events left")
	})
}

// The same with Close and its timeout against an API that answers 503:
// Close returns nil (what is left stays in the spool) and a Flush that was
// waiting must return too.
func TestSpoolFlushEndsWhenCloseTimesOut(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Default(analyticstest.Status(503))
		e := newEnv(t, api, WithSpool(dir), WithMaxQueueSize(20), WithFlushAt(10), WithCloseTimeout(2*time.Second))
		e.enqueue(tracks("ct-", 100)...)

		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		flushed := make(chan error, 1)
		go func() { flushed <- e.client.Flush(ctx) }()
		synctest.Wait()

		require.NoError(t, e.client.Close(), "Close with a spool returns nil")
		synctest.Wait()
		select {
		case err := <-flushed:
			// What is left stays in the spool: the Flush ends with the
			// client, unflushed.
			assert.ErrorIs(t, err, ErrClosed, "the Flush that was waiting")
		default:
			t.Errorf("Flush is still blocked after Close returned")
			cancel()
			<-flushed
		}
		st := assertSpoolIdentity(t, e.client)
		assertAtMostOneCallback(t, e.out, st)
	})
}

// The accounting identity holds, and every event gets at most one final
// callback, under each way a batch can end.
func TestSpoolIdentityAfterClose(t *testing.T) {
	panicky := CallbackFunc(func(Message, error) { panic("callback panics") })
	for _, tt := range []struct {
		name string
		api  func() *analyticstest.Server
		opts []Option
		cut  bool // Shutdown with an ended context after a while, instead of Close
	}{
		{name: "fatal400", api: func() *analyticstest.Server { return newAPI().Default(analyticstest.Status(400)) }},
		{name: "split413", api: func() *analyticstest.Server {
			return newAPI().Rule(analyticstest.MaxEvents(3, analyticstest.Status(413)))
		}},
		{name: "retryCount0", api: func() *analyticstest.Server { return newAPI().Default(analyticstest.Status(503)) },
			opts: []Option{WithRetryCount(0)}},
		{name: "backoffBudget", api: func() *analyticstest.Server { return newAPI().Default(analyticstest.Status(503)) },
			opts: []Option{WithMaxTotalBackoffDuration(time.Millisecond)}},
		{name: "mixed", api: func() *analyticstest.Server {
			n := 0
			return newAPI().Rule(func(analyticstest.Request) analyticstest.Answer {
				n++
				switch n % 4 {
				case 0:
					return analyticstest.Status(400)
				case 1:
					return analyticstest.Status(503)
				}
				return analyticstest.Answer{Default: true}
			})
		}, opts: []Option{WithRetryCount(1)}},
		{name: "panickingCallback", api: newAPI, opts: []Option{WithCallback(panicky)}},
		{name: "slowCutShort", api: func() *analyticstest.Server { return newAPI().Default(analyticstest.Answer{Delay: time.Second}) },
			cut: true},
		{name: "503CloseTimeout", api: func() *analyticstest.Server { return newAPI().Default(analyticstest.Status(503)) },
			opts: []Option{WithCloseTimeout(3 * time.Second)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				opts := append([]Option{WithSpool(dir), WithMaxQueueSize(30), WithFlushAt(8), WithMaxConcurrentRequests(2)}, tt.opts...)
				e := newEnv(t, tt.api(), opts...)
				e.enqueue(tracks("id-", 300)...)
				if tt.cut {
					time.Sleep(3500 * time.Millisecond) // fake time: some batches end
					cutShort(t, e.client)
				} else {
					require.NoError(t, e.client.Close())
				}
				st := assertSpoolIdentity(t, e.client)
				if tt.name != "panickingCallback" {
					assertAtMostOneCallback(t, e.out, st)
				}
				t.Logf("%+v", st)

				// The next client recovers exactly what was left.
				again := newEnv(t, newAPI(), WithSpool(dir))
				assert.Equal(t, st.Spool.Left, again.client.Stats().Spool.Recovered, "recovered by the next client")
				again.close()
				st2 := assertSpoolIdentity(t, again.client)
				assert.Zero(t, st2.Spool.Left)
				assertAtMostOneCallback(t, again.out, st2)
				assert.Equal(t, int64(300), st.Delivered+st.Failed.Total()+st2.Delivered+st2.Failed.Total(), "every event has one outcome over both clients")
			})
		})
	}
}

// A callback that enqueues a new event for each outcome: the identity holds
// after Close, with the events it enqueued counted.
func TestSpoolIdentityWithReenqueueingCallback(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		var c atomic.Pointer[Client]
		var n, refused atomic.Int64
		cb := CallbackFunc(func(m Message, err error) {
			id := MessageID(m)
			if len(id) > 12 {
				return // one generation of re-enqueues only
			}
			if err := c.Load().Enqueue(Track{MessageId: "re-" + id + "-x", UserId: "u", Event: "again"}); err != nil {
				refused.Add(1)
				return
			}
			n.Add(1)
		})
		e := newEnv(t, newAPI().Default(analyticstest.Answer{Delay: 100 * time.Millisecond}), WithSpool(dir),
			WithCallback(cb), WithMaxQueueSize(20), WithFlushAt(5), WithCloseTimeout(time.Second))
		c.Store(e.client)
		e.enqueue(tracks("r", 200)...)
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, e.client.Close())
		st := assertSpoolIdentity(t, e.client)
		assert.Equal(t, 200+n.Load(), st.Enqueued, "Enqueued counts the callback's events")
		t.Logf("re-enqueued %d, refused %d, %+v", n.Load(), refused.Load(), st)
	})
}

// Several generations cut short (a Shutdown with an ended context, or a
// Close whose timeout runs out against an API that is slow or down), then
// a healthy one: every event, those that waited on disk included, gets
// exactly one final callback over all the generations, and is delivered.
func TestSpoolExactlyOneCallbackAcrossGenerations(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		final := map[string]int{}
		succeeded := map[string]bool{}
		var all []Message
		collect := func(e *env) {
			s, f := e.out.ByID()
			for id, n := range s {
				final[id] += n
				succeeded[id] = true
			}
			for id, n := range f {
				final[id] += n
			}
		}
		delivered := map[string]int{}
		apis := []*analyticstest.Server{}
		gens := []struct {
			api  *analyticstest.Server
			opts []Option
			cut  time.Duration // > 0: Shutdown cut short after this much time; 0: Close
		}{
			{api: newAPI().Default(analyticstest.Answer{Delay: 2 * time.Second}), cut: 3 * time.Second},
			{api: newAPI().Default(analyticstest.Status(503)), opts: []Option{WithCloseTimeout(2 * time.Second)}},
			{api: newAPI().Script(analyticstest.Status(200), analyticstest.Status(200), analyticstest.Status(400)).Default(analyticstest.Answer{Delay: time.Hour}), cut: time.Second},
			{api: newAPI().Rule(analyticstest.MaxEvents(4, analyticstest.Status(413))).Default(analyticstest.Answer{Delay: 1500 * time.Millisecond}), opts: []Option{WithCloseTimeout(4 * time.Second)}},
			{api: newAPI().Default(analyticstest.Status(503)), cut: time.Millisecond},
		}
		for g, gen := range gens {
			opts := append([]Option{WithSpool(dir), WithMaxQueueSize(25), WithFlushAt(10), WithMaxConcurrentRequests(2)}, gen.opts...)
			e := newEnv(t, gen.api, opts...)
			msgs := tracks(fmt.Sprintf("g%d-", g), 120)
			all = append(all, msgs...)
			e.enqueue(msgs...)
			if gen.cut > 0 {
				time.Sleep(gen.cut)
				cutShort(t, e.client)
			} else {
				require.NoError(t, e.client.Close())
			}
			st := assertSpoolIdentity(t, e.client)
			assertAtMostOneCallback(t, e.out, st)
			collect(e)
			apis = append(apis, gen.api)
		}
		last := newEnv(t, newAPI(), WithSpool(dir), WithFlushAt(10))
		last.flush()
		last.close()
		st := assertSpoolIdentity(t, last.client)
		assert.Zero(t, st.Spool.Left, "left after the healthy generation")
		collect(last)
		apis = append(apis, last.api)
		for _, api := range apis {
			for id, n := range api.Delivered() {
				delivered[id] += n
			}
		}
		for _, m := range all {
			id := MessageID(m)
			assert.Equal(t, 1, final[id], "final callbacks of %s over all generations", id)
			if succeeded[id] {
				assert.GreaterOrEqual(t, delivered[id], 1, "%s got Success but was never answered 2xx", id)
			}
		}
		assert.Len(t, final, len(all), "messageIds with a callback")
	})
}

// New and Close in a loop on one directory, each generation leaving an
// event behind and recovering the earlier ones without sending them (a
// Shutdown cut short): the directory's files stay few, each generation
// recovers exactly what the one before left, and a last healthy one
// delivers all of them once.
func TestSpoolManyGenerations(t *testing.T) {
	dir := t.TempDir()
	var all []Message
	for g := range 100 {
		e := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir), WithSpoolMaxBytes(1<<20))
		require.Equal(t, int64(g), e.client.Stats().Spool.Recovered, "generation %d recovers", g)
		m := Track{MessageId: fmt.Sprintf("gen-%d", g), UserId: "u", Event: "E"}
		all = append(all, m)
		e.enqueue(m)
		cutShort(t, e.client)
		st := assertSpoolIdentity(t, e.client)
		require.Equal(t, int64(g+1), st.Spool.Left)
		assert.LessOrEqual(t, st.Spool.Bytes, int64(1<<20), "spool bytes")
	}
	files, err := os.ReadDir(dir)
	require.NoError(t, err)
	t.Logf("%d files after 100 generations", len(files))
	last := newEnv(t, newAPI(), WithSpool(dir))
	last.flush()
	last.close()
	last.assertDeliveredOnce(all)
	files, err = os.ReadDir(dir)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(files), 1, "files left after delivering everything (LOCK only): %v", files)
}
