package analytics

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// switchAPI answers every request after an hour's delay (fake time) until
// opened, then as the default: a tracking API that is down, usable inside
// a synctest bubble (a rule that blocks on a channel would hold the mock's
// lock, which synctest.Wait does not see as durably blocked).
func switchAPI() (*analyticstest.Server, *atomic.Bool) {
	var open atomic.Bool
	api := newAPI().Rule(func(analyticstest.Request) analyticstest.Answer {
		if open.Load() {
			return analyticstest.Answer{Default: true}
		}
		return analyticstest.Answer{Delay: time.Hour}
	})
	return api, &open
}

// requestIDs returns the messageIds of every 2xx request, in the order the
// API recorded them.
func requestIDs(api *analyticstest.Server) []string {
	var ids []string
	for _, r := range api.Requests() {
		if r.Status >= 200 && r.Status <= 299 {
			ids = append(ids, r.MessageIDs()...)
		}
	}
	return ids
}

// Recovered events go before anything the new client enqueues (§11.2):
// with one request at a time and small batches, every recovered id is
// sent before the first new one.
func TestSpoolAttackRecoveredGoFirst(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		first := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir), WithMaxQueueSize(10), WithFlushAt(5))
		first.enqueue(tracks("old-", 60)...)
		cutShort(t, first.client)
		require.Equal(t, int64(60), first.client.Stats().Spool.Left)

		api := newAPI()
		second := newEnv(t, api, WithSpool(dir), WithFlushAt(5), WithMaxConcurrentRequests(1), WithMaxQueueSize(15))
		second.enqueue(tracks("new-", 60)...)
		second.flush()
		second.close()
		ids := requestIDs(api)
		require.Len(t, ids, 120, "events delivered")
		for i, id := range ids[:60] {
			assert.True(t, strings.HasPrefix(id, "old-"), "request position %d carries %s: a new event before a recovered one", i, id)
		}
		for i := 1; i < 60; i++ { // and in their order
			assert.Equal(t, "old-"+strconv.Itoa(i), ids[i], "recovered order")
		}
		assertSpoolIdentity(t, second.client)
	})
}

// Events read back from disk keep the order they were enqueued in (§11.5):
// one producer, one request at a time, the queue small enough that most
// events wait on disk.
func TestSpoolAttackDiskBacklogKeepsOrder(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Default(analyticstest.Answer{Delay: 10 * time.Millisecond})
		e := newEnv(t, api, WithSpool(dir), WithMaxQueueSize(12), WithFlushAt(5), WithMaxConcurrentRequests(1))
		msgs := tracks("o-", 500)
		for i, m := range msgs {
			require.NoError(t, e.client.Enqueue(m))
			if i%37 == 0 {
				time.Sleep(15 * time.Millisecond)
			}
		}
		e.flush()
		e.close()
		ids := requestIDs(api)
		require.Len(t, ids, 500)
		for i, id := range ids {
			if !assert.Equal(t, "o-"+strconv.Itoa(i), id, "position %d", i) {
				break
			}
		}
	})
}

// Memory stays bounded by MaxQueueSize whatever waits on disk (§11.5):
// Stats().QueueDepth + InFlight never exceeds it, sampled after every
// Enqueue and by a concurrent sampler, while thousands wait on disk and
// the API is slow.
func TestSpoolAttackMemoryBound(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		const bound = 50
		api := newAPI().Default(analyticstest.Answer{Delay: 50 * time.Millisecond})
		e := newEnv(t, api, WithSpool(dir), WithMaxQueueSize(bound), WithFlushAt(7), WithMaxConcurrentRequests(3))
		var worst atomic.Int64
		sample := func() {
			st := e.client.Stats()
			if n := int64(st.QueueDepth) + st.InFlight; n > worst.Load() {
				worst.Store(n)
			}
		}
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(time.Millisecond):
					sample()
				}
			}
		})
		msgs := tracks("mb-", 4000)
		maxDisk := int64(0)
		for i, m := range msgs {
			require.NoError(t, e.client.Enqueue(m))
			sample()
			if i%100 == 0 {
				maxDisk = max(maxDisk, e.client.Stats().Spool.OnDisk)
				time.Sleep(20 * time.Millisecond)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
		defer cancel()
		require.NoError(t, e.client.Flush(ctx))
		close(stop)
		wg.Wait()
		e.close()
		assert.LessOrEqual(t, worst.Load(), int64(bound), "QueueDepth+InFlight at worst")
		assert.Greater(t, maxDisk, int64(1000), "events waited on disk")
		e.assertDeliveredOnce(msgs)
		assertSpoolIdentity(t, e.client)
	})
}

// At the spool's bound, Enqueue returns ErrQueueFull (counted in
// Stats.Rejected.QueueFull) and EnqueueContext calls wait in line: they
// are admitted in the order they arrived, and each is delivered once.
func TestSpoolAttackBoundFIFOAndRejectedCount(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api, open := switchAPI()
		e := newEnv(t, api, WithSpool(dir), WithSpoolMaxBytes(1<<20), WithMaxQueueSize(40), WithFlushAt(20),
			WithMaxConcurrentRequests(1), WithFlushInterval(time.Hour))
		pad := strings.Repeat("x", 2000)
		big := func(id string) Message {
			return Track{MessageId: id, UserId: "u", Event: "E", Properties: Properties{"pad": pad}}
		}
		accepted := 0
		for ; ; accepted++ {
			err := e.client.Enqueue(big(fmt.Sprintf("a-%d", accepted)))
			if err != nil {
				require.ErrorIs(t, err, ErrQueueFull)
				break
			}
			require.Less(t, accepted, 10_000, "never full")
		}
		for range 4 {
			require.ErrorIs(t, e.client.Enqueue(big("refused")), ErrQueueFull)
		}
		assert.Equal(t, int64(5), e.client.Stats().Rejected.QueueFull, "Stats.Rejected.QueueFull")

		const waiters = 12
		errs := make([]error, waiters)
		var wg sync.WaitGroup
		for i := range waiters {
			wg.Go(func() { errs[i] = e.client.EnqueueContext(context.Background(), big(fmt.Sprintf("w-%02d", i))) })
			synctest.Wait() // it waits, in line behind the ones before
		}
		open.Store(true)
		wg.Wait()
		for i, err := range errs {
			assert.NoError(t, err, "waiter %d", i)
		}
		e.flush()
		e.close()
		ids := requestIDs(api)
		var order []string
		for _, id := range ids {
			if strings.HasPrefix(id, "w-") {
				order = append(order, id)
			}
		}
		require.Len(t, order, waiters, "waiters delivered")
		for i, id := range order {
			assert.Equal(t, fmt.Sprintf("w-%02d", i), id, "waiters in arrival order")
		}
		got := api.Delivered()
		for i := range accepted {
			assert.Equal(t, 1, got[fmt.Sprintf("a-%d", i)], "a-%d delivered once", i)
		}
		assert.Zero(t, got["refused"])
		st := assertSpoolIdentity(t, e.client)
		assert.Equal(t, int64(5), st.Rejected.QueueFull, "Stats.Rejected.QueueFull: waiters that got in are not refusals")
	})
}

// EnqueueContext calls waiting at the spool's bound when Close begins
// return ErrClosed at once, are counted as Rejected.Closed, and the
// identity holds.
func TestSpoolAttackWaitersAtClose(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api, _ := switchAPI()
		e := newEnv(t, api, WithSpool(dir), WithSpoolMaxBytes(1<<20), WithMaxQueueSize(40), WithFlushAt(20), WithCloseTimeout(time.Second))
		pad := strings.Repeat("x", 2000)
		for i := 0; ; i++ {
			if err := e.client.Enqueue(Track{MessageId: fmt.Sprintf("a-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}}); err != nil {
				require.ErrorIs(t, err, ErrQueueFull)
				break
			}
		}
		const waiters = 6
		errs := make(chan error, waiters)
		for i := range waiters {
			go func() {
				errs <- e.client.EnqueueContext(context.Background(), Track{MessageId: fmt.Sprintf("w-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}})
			}()
		}
		synctest.Wait()
		require.NoError(t, e.client.Close())
		for range waiters {
			assert.ErrorIs(t, <-errs, ErrClosed)
		}
		st := assertSpoolIdentity(t, e.client)
		assert.Equal(t, int64(waiters), st.Rejected.Closed)
	})
}

// Many goroutines Enqueue, EnqueueContext, Flush and read Stats while
// Close runs, with each fsync cadence: every call returns, the identity
// holds once Close has returned, and (goleak, TestMain) no goroutine
// outlives Close.
func TestSpoolAttackConcurrentWithClose(t *testing.T) {
	for _, every := range []time.Duration{0, DefaultSpoolSync} {
		t.Run(fmt.Sprintf("sync=%v", every), func(t *testing.T) {
			api := newAPI().Default(analyticstest.Answer{Delay: time.Millisecond})
			e := newEnv(t, api, WithSpool(t.TempDir()), WithSpoolSync(every), WithMaxQueueSize(30), WithFlushAt(10))
			var wg sync.WaitGroup
			var accepted atomic.Int64
			started := make(chan struct{}, 16)
			for p := range 6 {
				wg.Go(func() {
					for i := 0; ; i++ {
						m := Track{MessageId: fmt.Sprintf("c%d-%d", p, i), UserId: "u", Event: "E"}
						var err error
						if i%2 == 0 {
							err = e.client.Enqueue(m)
						} else {
							// No deadline: a call waiting for room returns when
							// room comes or Close refuses it, which is what is
							// checked; a deadline would only fail a loaded run.
							err = e.client.EnqueueContext(context.Background(), m)
						}
						if i == 20 {
							started <- struct{}{}
						}
						if errors.Is(err, ErrClosed) {
							return
						}
						if assert.NoError(t, err) {
							accepted.Add(1)
						}
					}
				})
			}
			for range 2 {
				wg.Go(func() {
					for !e.client.isClosed() {
						// No deadline either: Close ends a Flush that waits.
						err := e.client.Flush(context.Background())
						if err != nil && !errors.Is(err, ErrClosed) {
							assert.NoError(t, err, "Flush")
							return
						}
						_ = e.client.Stats()
					}
				})
			}
			for range 6 {
				<-started
			}
			require.NoError(t, e.client.Close())
			st := assertSpoolIdentity(t, e.client)
			wg.Wait()
			st2 := e.client.Stats()
			assert.Equal(t, accepted.Load(), st2.Enqueued, "Enqueued once every call returned")
			assert.Equal(t, st2.Enqueued, st.Enqueued, "Enqueued read right after Close returned")
			assert.Zero(t, st.Spool.Left, "left by a Close with a healthy API and time enough (with sync 0: Enqueues in their group commit when the loop ended; see TestSpoolAttackSync0EnqueueDuringCloseIsSent)")
		})
	}
}

// Enqueue racing a Shutdown cut short: once Shutdown has returned, the
// identity must hold at once (the contract says "once Close or Shutdown
// has returned"), even though Enqueue calls that won the race are still
// returning.
func TestSpoolAttackIdentityRightAfterShutdownRace(t *testing.T) {
	for iter := range 60 {
		e := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(t.TempDir()), WithMaxQueueSize(10), WithFlushAt(5))
		var wg sync.WaitGroup
		var go_ sync.WaitGroup
		go_.Add(4)
		for p := range 4 {
			wg.Go(func() {
				go_.Done()
				for i := 0; ; i++ {
					if errors.Is(e.client.Enqueue(Track{MessageId: fmt.Sprintf("%d-%d", p, i), UserId: "u", Event: "E"}), ErrClosed) {
						return
					}
				}
			})
		}
		go_.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = e.client.Shutdown(ctx)
		st := e.client.Stats()
		wg.Wait()
		after := e.client.Stats()
		ok := assert.Equal(t, st.Enqueued+st.Spool.Recovered, st.Delivered+st.Failed.Total()+st.Spool.Left,
			"iteration %d: identity right after Shutdown returned (Enqueued %d then %d once the Enqueue calls returned)", iter, st.Enqueued, after.Enqueued)
		assertSpoolIdentity(t, e.client)
		if !ok {
			break
		}
	}
}

// New and Close in a loop on one directory, each generation leaving an
// event behind and recovering the earlier ones without sending them (a
// Shutdown cut short): the directory's files stay few, each generation
// recovers exactly what the one before left, and a last healthy one
// delivers all of them once.
func TestSpoolAttackManyGenerations(t *testing.T) {
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

// A second New on the directory right after Close returns succeeds, and
// Close has left the files closed and complete: the second client
// recovers exactly what the first left.
func TestSpoolAttackNewRightAfterClose(t *testing.T) {
	dir := t.TempDir()
	for g := range 20 {
		api := newAPI().Default(analyticstest.Answer{Delay: time.Millisecond})
		e := newEnv(t, api, WithSpool(dir), WithSpoolSync(0), WithMaxQueueSize(10), WithFlushAt(5), WithCloseTimeout(time.Millisecond))
		e.enqueue(tracks(fmt.Sprintf("n%d-", g), 50)...)
		require.NoError(t, e.client.Close())
		st := assertSpoolIdentity(t, e.client)
		next, err := New(testWriteKey, WithSpool(dir), WithHTTPClient(newAPI().Client(CheckRedirect)), WithEndpoint("http://tracking.test"))
		require.NoError(t, err, "New right after Close, generation %d", g)
		assert.Equal(t, st.Spool.Left, next.Stats().Spool.Recovered, "recovered what Close left")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = next.Shutdown(ctx)
		st2 := next.Stats()
		// A Shutdown whose context has ended may still see a batch it cut
		// delivered before it cancels the uploads.
		assert.Equal(t, st.Spool.Left, st2.Spool.Left+st2.Delivered+st2.Failed.Total(),
			"what the first Close left is left again, or delivered, or failed")
	}
}
