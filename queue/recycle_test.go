package queue

import (
	"bytes"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// payload is the data of item v: its number, padded to size bytes.
func payload(v, size int) []byte {
	b := fmt.Appendf(nil, "%d:", v)
	return append(b, bytes.Repeat([]byte{byte('a' + v%26)}, max(size-len(b), 0))...)
}

// Recycled memory takes later items, and never an item still held: an
// item that was not recycled keeps its bytes however much is pushed after.
func TestRecycleNeverOverwritesAHeldItem(t *testing.T) {
	const size = 1000 // 65 items fill a chunk
	q := New[int](1_000_000, 1<<30)
	pushN := func(from, n int) {
		for v := from; v < from+n; v++ {
			res, _ := q.Push(payload(v, size), v, 0)
			require.Equal(t, Admitted, res, "push %d", v)
		}
	}
	pushN(0, 200)
	held := q.Take(1, 1<<30) // item 0, never recycled
	rest := q.Take(1000, 1<<30)
	q.Release(len(rest.Items), len(rest.Items)*size)
	q.Recycle(rest)
	for _, it := range rest.Items {
		assert.Nil(t, it.Data, "a recycled item's Data")
	}
	for round := range 20 {
		pushN(200+round*200, 200)
		b := q.Take(1000, 1<<30)
		for i, it := range b.Items {
			require.Equal(t, payload(b.Items[i].Value, size), it.Data, "round %d, item %d", round, it.Value)
		}
		q.Release(len(b.Items), len(b.Items)*size)
		q.Recycle(b)
	}
	assert.Equal(t, payload(0, size), held.Items[0].Data, "the item that was not recycled")
}

// An item too large to share a chunk has memory of its own, which Recycle
// leaves alone.
func TestRecycleLargeItem(t *testing.T) {
	q := New[int](10, 1<<20)
	big := payload(1, chunkSize/4+1)
	q.Push(big, 1, 0)
	b := q.Take(10, 1<<20)
	data := b.Items[0].Data
	q.Release(1, len(big))
	q.Recycle(b)
	assert.Equal(t, big, data, "a large item's data after Recycle")
}

// Producers, a taker that recycles, checking every byte: run with -race.
func TestRecycleConcurrently(t *testing.T) {
	q := New[int](500, 1<<20)
	const producers, each, size = 4, 3000, 300
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := 0; i < each; {
				v := p*each + i
				if res, _ := q.Push(payload(v, size), v, 0); res == Admitted {
					i++
				}
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	seen := 0
	check := func(b Batch[int]) {
		for _, it := range b.Items {
			if !bytes.Equal(payload(it.Value, size), it.Data) {
				t.Fatalf("item %d holds %q", it.Value, it.Data)
			}
		}
		seen += len(b.Items)
		q.Release(len(b.Items), size*len(b.Items))
		q.Recycle(b)
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		check(q.Take(50, 1<<20))
	}
	check(q.Drain())
	assert.Equal(t, producers*each, seen, "items taken")
}
