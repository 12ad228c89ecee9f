package analytics

import (
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// segmentBatchEvents is the most events Segment's batch endpoint takes in
// one request: past it, Segment answers 200 but rejects the events
// (segment-docs, HTTP API source, "Common reasons events are not
// accepted", PR #7023). Written here as a figure of its own, not read from
// the code, so that a wrong bound in the code fails these tests.
const segmentBatchEvents = 2_500

// largestFlushAt is the largest FlushAt New accepts: the paths below run
// at it, where a batch is as large as the options let it be.
func largestFlushAt(t *testing.T) int {
	t.Helper()
	o, ok := optionRow("FlushAt")
	require.True(t, ok, "the FlushAt row of the options table")
	return int(o.max)
}

// assertWithinSegmentLimit checks that no request api received, whatever
// it answered, held more than segmentBatchEvents events, and that the
// largest held exactly that many: the event count, not the byte bound,
// cut it, so the test did reach the limit.
func assertWithinSegmentLimit(t *testing.T, api *analyticstest.Server) {
	t.Helper()
	largest := 0
	for i, r := range api.Requests() {
		largest = max(largest, len(r.Events))
		assert.LessOrEqual(t, len(r.Events), segmentBatchEvents, "events of request %d (status %d)", i, r.Status)
		assert.Zero(t, r.Rejected, "events of request %d the API rejected", i)
	}
	assert.Equal(t, segmentBatchEvents, largest, "events of the largest request")
}

// No batch holds more than Segment's 2,500 events, whatever path cuts it
// (SPEC §3): the FlushAt cut, the cut from a backlog on disk after an
// outage, the halves of a batch answered 413, the cut of events replayed
// from the spool by the next client. Each runs at the largest FlushAt New
// accepts, with events small enough that 500,000 bytes hold well over
// 2,500 of them (a batch of 2,550 under the old bound of 10,000).
func TestNoBatchOverSegmentsEventLimit(t *testing.T) {
	const events = 6_000
	t.Run("cut", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t, newAPI(), WithFlushAt(largestFlushAt(t)))
			msgs := tracks("c-", events)
			e.enqueue(msgs...)
			e.close()
			assertWithinSegmentLimit(t, e.api)
			e.assertDeliveredOnce(msgs)
		})
	})
	t.Run("backlog after an outage", func(t *testing.T) {
		dir := t.TempDir()
		synctest.Test(t, func(t *testing.T) {
			api, open := switchAPI()
			flushAt := largestFlushAt(t)
			// The queue holds one batch: the rest waits on disk, and the
			// loop cuts from the backlog without waiting for FlushAt.
			e := newEnv(t, api, WithSpool(dir), WithFlushAt(flushAt), WithMaxQueueSize(flushAt))
			msgs := tracks("b-", flushAt+events)
			e.enqueue(msgs...)
			synctest.Wait()
			require.Positive(t, e.client.Stats().Spool.OnDisk, "events waiting on disk in the outage")
			open.Store(true)
			e.flush()
			e.close()
			assertWithinSegmentLimit(t, api)
			e.assertDeliveredOnce(msgs)
		})
	})
	t.Run("413 split", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := newAPI().Rule(analyticstest.MaxEvents(1_000, analyticstest.Status(413)))
			e := newEnv(t, api, WithFlushAt(largestFlushAt(t)))
			msgs := tracks("s-", events)
			e.enqueue(msgs...)
			e.close()
			assert.Positive(t, e.client.Stats().Splits, "batches split after a 413")
			assertWithinSegmentLimit(t, api)
			e.assertDeliveredOnce(msgs)
		})
	})
	t.Run("spool replay", func(t *testing.T) {
		dir := t.TempDir()
		synctest.Test(t, func(t *testing.T) {
			// The first client leaves every event in the spool: the API is
			// down and its close does not retry.
			first := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir), WithCloseRetries(false))
			msgs := tracks("r-", events)
			first.enqueue(msgs...)
			first.close()
			require.Equal(t, int64(events), first.client.Stats().Spool.Left, "events left in the spool")

			second := newEnv(t, newAPI(), WithSpool(dir), WithFlushAt(largestFlushAt(t)))
			second.flush()
			second.close()
			assertWithinSegmentLimit(t, second.api)
			second.assertDeliveredOnce(msgs)
		})
	})
}
