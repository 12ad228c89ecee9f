package queue

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a value keeps counts against the byte bound with its data, is
// given back with it, and leaves batch cutting to the data alone.
func TestKeptCountsAgainstTheByteBound(t *testing.T) {
	q := New[int](100, 100)
	push := func(data, kept int) Admission {
		res, _ := q.Push(make([]byte, data), 0, kept)
		return res
	}
	require.Equal(t, Admitted, push(10, 30), "the first push")
	assert.Equal(t, Admitted, push(10, 30), "a push that fits with what it keeps")
	assert.Equal(t, Full, push(10, 11), "a push over the byte bound by what it keeps")
	assert.Equal(t, Admitted, push(10, 10), "a push that exactly fills the byte bound")
	n, b, held, heldB := q.Sizes()
	assert.Equal(t, 3, n, "items queued")
	assert.Equal(t, 30, b, "bytes of data queued")
	assert.Equal(t, 3, held, "items held")
	assert.Equal(t, 100, heldB, "bytes held: data and what is kept")
	// Batches are cut by data: 10+1+10 fits in 21 bytes.
	batch := q.Take(10, 21)
	require.Len(t, batch.Items, 2, "the items that fit by data")
	assert.Equal(t, 40, batch.Items[0].Size(), "an item's Size")
	assert.Equal(t, 30, batch.Items[0].Kept, "an item's Kept")
	assert.Equal(t, Full, push(1, 0), "a push while taken items hold the budget")
	_, _, _, heldB = q.Sizes()
	assert.Equal(t, 100, heldB, "bytes held by items taken and queued")
	q.Release(len(batch.Items), batch.Items[0].Size()+batch.Items[1].Size())
	_, _, _, heldB = q.Sizes()
	assert.Equal(t, 20, heldB, "bytes held once the batch was released")
	assert.Equal(t, Admitted, push(10, 70), "a push once the budget was given back")
}

// An estimate never shuts out an item whose data fits: an empty queue
// admits it whatever it keeps.
func TestEmptyQueueAdmitsWhateverIsKept(t *testing.T) {
	q := New[int](10, 100)
	push := func(data, kept int) Admission {
		res, _ := q.Push(make([]byte, data), 0, kept)
		return res
	}
	require.Equal(t, Admitted, push(100, 1000), "an item whose data fits, into an empty queue")
	assert.Equal(t, Full, push(1, 0), "a push into a queue over its byte bound")
	b := q.Drain()
	q.Release(len(b.Items), b.Items[0].Size())
	assert.Equal(t, Full, push(101, 0), "data over the byte bound, into an empty queue")
}
