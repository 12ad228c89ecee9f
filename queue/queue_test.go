package queue

import (
	"bytes"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// push pushes value with size bytes of data and nothing kept.
func push(q *Queue[int], value, size int) (Admission, int) {
	return q.Push(bytes.Repeat([]byte{'x'}, size), value, 0)
}

func values(b Batch[int]) []int {
	out := make([]int, len(b.Items))
	for i, it := range b.Items {
		out[i] = it.Value
	}
	return out
}

func TestPushBoundedByCount(t *testing.T) {
	q := New[int](3, 1<<20)
	for i := range 3 {
		res, n := push(q, i, 10)
		require.Equal(t, Admitted, res, "push %d", i)
		require.Equal(t, i+1, n, "items queued after push %d", i)
	}
	res, n := push(q, 3, 10)
	assert.Equal(t, Full, res, "a push into a full queue")
	assert.Equal(t, 3, n, "items queued after a refused push")
	assert.Equal(t, []int{0, 1, 2}, values(q.Drain()), "the queue after a refused push")
}

func TestPushBoundedByBytes(t *testing.T) {
	q := New[int](100, 25)
	push(q, 0, 10)
	push(q, 1, 10)
	res, _ := push(q, 2, 6)
	assert.Equal(t, Full, res, "a push beyond the byte bound")
	res, _ = push(q, 3, 5)
	assert.Equal(t, Admitted, res, "a push that exactly fills the byte bound")
	n, b, _, _ := q.Sizes()
	assert.Equal(t, 3, n, "items queued")
	assert.Equal(t, 25, b, "bytes queued")
	q.Take(1, 1000)
	_, b, _, _ = q.Sizes()
	assert.Equal(t, 15, b, "bytes queued after taking 10")
	// Taken is still held until released.
	res, _ = push(q, 4, 10)
	assert.Equal(t, Full, res, "a push while taken items still hold the budget")
	queued, b, held, _ := q.Sizes()
	assert.Equal(t, 2, queued, "items queued")
	assert.Equal(t, 15, b, "bytes queued")
	assert.Equal(t, 3, held, "items held")
	q.Release(1, 10)
	res, _ = push(q, 4, 10)
	assert.Equal(t, Admitted, res, "a push after space was released")
}

func TestTakeByCountKeepsOrder(t *testing.T) {
	q := New[int](1000, 1<<20)
	for i := range 10 {
		push(q, i, 1)
	}
	b := q.Take(4, 1<<20)
	assert.Equal(t, []int{0, 1, 2, 3}, values(b), "the first batch")
	assert.Equal(t, uint64(0), b.Seq, "the first batch's Seq")
	b = q.Take(4, 1<<20)
	assert.Equal(t, []int{4, 5, 6, 7}, values(b), "the second batch")
	assert.Equal(t, uint64(4), b.Seq, "the second batch's Seq")
	b = q.Take(4, 1<<20)
	assert.Equal(t, []int{8, 9}, values(b), "the last batch")
	assert.Equal(t, uint64(8), b.Seq, "the last batch's Seq")
	assert.Empty(t, q.Take(4, 1<<20).Items, "Take on an empty queue")
}

func TestTakeByBytesCountsSeparators(t *testing.T) {
	q := New[int](1000, 1<<20)
	for i := range 5 {
		push(q, i, 10)
	}
	// Three items joined by commas: 10+1+10+1+10 = 32 bytes.
	assert.Len(t, q.Take(100, 32).Items, 3, "Take(_, 32)")
	// Two items need 21 bytes; 20 holds only one.
	assert.Len(t, q.Take(100, 20).Items, 1, "Take(_, 20) of two 10-byte items")
}

func TestTakeFitsExactly(t *testing.T) {
	q := New[int](1000, 1<<20)
	for i := range 4 {
		push(q, i, 10)
	}
	assert.Len(t, q.Take(100, 21).Items, 2, "Take(_, 21), exactly 2 items (10+1+10)")
	assert.Len(t, q.Take(100, 20).Items, 1, "Take(_, 20)")
}

func TestOversizedItemLeavesTheQueue(t *testing.T) {
	q := New[int](1000, 1<<20)
	push(q, 0, 100)
	push(q, 1, 1)
	assert.Equal(t, []int{0}, values(q.Take(100, 50)), "an oversized head, taken alone")
	assert.Equal(t, []int{1}, values(q.Take(100, 50)), "the item behind an oversized one")
}

func TestRingWrapsAndGrows(t *testing.T) {
	q := New[int](1000, 1<<20)
	next, want := 0, 0
	for round := range 50 {
		for range round*7%97 + 1 {
			if res, _ := push(q, next, 1); res == Admitted {
				next++
			}
		}
		taken := q.Take(round%13+1, 1<<20)
		q.Release(len(taken.Items), len(taken.Items))
		for _, v := range values(taken) {
			require.Equal(t, want, v, "round %d", round)
			want++
		}
	}
	for _, v := range values(q.Drain()) {
		require.Equal(t, want, v, "the drain")
		want++
	}
	assert.Equal(t, next, want, "items taken of those pushed")
	pushed, taken := q.Counts()
	assert.Equal(t, uint64(next), pushed, "Counts: pushed")
	assert.Equal(t, uint64(next), taken, "Counts: taken")
}

func TestSpliceDropsReferences(t *testing.T) {
	q := New[*int](10, 1<<20)
	v := new(int)
	q.Push([]byte("x"), v, 0)
	q.Take(1, 100)
	for _, it := range q.ring {
		assert.Nil(t, it.Value, "a taken item's value is still referenced by the ring")
		assert.Nil(t, it.Data, "a taken item's data is still referenced by the ring")
	}
}

func TestConcurrentPushAndTake(t *testing.T) {
	q := New[int](100, 1<<20)
	const producers, each = 8, 2000
	var wg sync.WaitGroup
	accepted := make([]int, producers)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if res, _ := push(q, p*each+i, 3); res == Admitted {
					accepted[p]++
				}
			}
		}()
	}
	got := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		b := q.Take(7, 1<<20)
		got += len(b.Items)
		q.Release(len(b.Items), 3*len(b.Items))
	}
	got += len(q.Drain().Items)
	total := 0
	for _, a := range accepted {
		total += a
	}
	assert.Equal(t, total, got, "items taken, want those accepted")
	n, b, _, _ := q.Sizes()
	assert.Zero(t, n, "items left queued")
	assert.Zero(t, b, "bytes left queued")
}

func BenchmarkPushTake(b *testing.B) {
	q := New[int](10000, 32<<20)
	data := bytes.Repeat([]byte{'x'}, 200)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q.Push(data, i, 0)
		if q.Len() >= 250 {
			q.Take(250, 500000)
		}
	}
}

func TestClosedQueueRefusesButKeepsItems(t *testing.T) {
	q := New[int](10, 1<<20)
	push(q, 0, 1)
	q.Close()
	assert.Equal(t, Closed, q.Admission(), "Admission after Close")
	res, n := push(q, 1, 1)
	assert.Equal(t, Closed, res, "a push after Close")
	assert.Equal(t, 1, n, "items queued after a push after Close")
	assert.Equal(t, []int{0}, values(q.Drain()), "the items queued before Close")
}

func TestPushCopiesAndAdmission(t *testing.T) {
	q := New[int](2, 10)
	data := []byte("abc")
	q.Push(data, 1, 0)
	data[0] = 'X'
	assert.Equal(t, "abc", string(q.Drain().Items[0].Data), "the bytes as they were pushed")
	q.Release(1, 3)
	assert.Equal(t, Admitted, q.Admission(), "an empty queue")
	q.Push([]byte("0123456789"), 2, 0)
	assert.Equal(t, Full, q.Admission(), "a queue with no byte left")
	q.Close()
	assert.Equal(t, Closed, q.Admission(), "a closed queue")
}
