package analytics

import (
	"context"
	"fmt"
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
func TestSpoolRecoveredGoFirst(t *testing.T) {
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
func TestSpoolDiskBacklogKeepsOrder(t *testing.T) {
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
func TestSpoolMemoryBound(t *testing.T) {
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
func TestSpoolBoundFIFOAndRejectedCount(t *testing.T) {
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
