// Package queue holds encoded events in memory, bounded by a count and a
// byte size, and cuts them into batches.
//
// A batch is spliced off the queue before anything checks or sends it, so a
// batch that later fails has already left the queue and can never wedge the
// batches behind it. Push never blocks: a push that does not fit is refused
// at once and leaves what is queued untouched. PushWait waits for room
// instead, in line with other waiters, woken when room is released.
//
// The bounds count what the caller holds, not only what is queued: items
// taken as a batch count until the caller releases them (Release), so
// that events in flight use the budget of events waiting (SPEC §3). A
// caller done with a batch may also Recycle it, so that its memory takes
// the next items; package consumer's Loop does both.
package queue

import (
	"context"
	"sync"

	"github.com/dualpath/analytics-go/internal/waitline"
)

// Item is one queued event: its encoded JSON and a value the caller keeps
// with it (the original message, for callbacks).
type Item[T any] struct {
	Data  []byte // the encoded event; its length counts against the byte bound
	Value T      // kept with the event
	// Kept is the memory Value holds, in bytes, as the caller estimated it
	// at Push; it counts against the byte bound with Data.
	Kept int

	chunk *chunk // where Data was copied to, until recycled; nil if it has its own memory
}

// Size is what the item counts against the byte bound: len(Data) + Kept.
func (it Item[T]) Size() int { return len(it.Data) + it.Kept }

// Batch is a run of consecutive items cut from the queue, in push order.
type Batch[T any] struct {
	// Items are the batch's items, oldest first.
	Items []Item[T]
	// Seq is the sequence number of the first item: items are numbered
	// 0, 1, 2, ... in push order.
	Seq uint64
}

// Queue is a FIFO of items bounded by count and by their total Size (the
// length of their Data, plus what the caller said their values keep). The
// bounds count every item the caller holds: queued, and taken but not yet
// released, so that items in flight use the same budget as items waiting.
// It is safe for concurrent use.
type Queue[T any] struct {
	maxItems int
	maxBytes int

	mu     sync.Mutex
	closed bool
	ring   []Item[T]
	head   int // index of the oldest item in ring
	n      int // items queued
	bytes  int // total len(Data) of queued items
	held   int // items queued or taken and not released: what the bounds limit
	heldB  int // their total Size
	pushed uint64
	taken  uint64

	// chunk is where Push copies data: one allocation serves many items,
	// and the garbage collector has one object to track instead of each.
	// Once every item copied into a full chunk is recycled (Recycle), the
	// chunk takes new items; one that is not is left to the collector.
	chunk *chunk

	// line is the PushWait calls waiting for room, oldest first.
	line waitline.Line[pending[T]]
	// waiters keeps *waiter[T] that left the line, for the next wait:
	// under many producers nearly every PushWait waits, and a waiter and
	// its channel were two allocations each time.
	waiters sync.Pool

	// spare keeps the item slices of recycled batches (*[]Item[T]), for
	// the batches cut next.
	spare sync.Pool
}

// waiter is a PushWait waiting for room for its item. Whoever makes room
// (Release, a waiter ahead leaving) admits the item for it, in line order,
// sets res and n and wakes it; Close sets res to Closed and wakes it. The
// woken PushWait returns res without taking the queue's lock again, so a
// release that makes room for many waiters admits them all under one lock
// hold, with no chain of hand-offs from one waiter to the next.
type waiter[T any] = waitline.Waiter[pending[T]]

// pending is what a waiter keeps: its item (Data not yet copied), and
// what PushWait returns.
type pending[T any] struct {
	item Item[T]
	// res and n are what PushWait returns, set before the waiter is
	// woken, out of line (or, after ctx ended, under q.mu).
	res Admission
	n   int
}

// chunkSize is the size of the blocks Push copies data into; an item
// larger than a quarter of it gets an allocation of its own.
const chunkSize = 64 << 10

// chunk is a block that items' data are copied into, one after another.
type chunk struct {
	buf []byte // cap chunkSize; items' Data are slices of it
	// refs counts the items copied into buf and not yet recycled, plus
	// one while the queue is still copying into it. At 0, nothing refers
	// to buf, which can start again. The queue's mutex guards it.
	refs int
}

// chunks keeps chunks that no item refers to any more, for any queue: an
// allocation of chunkSize costs its zeroing, as much as the copies it
// takes. The garbage collector empties it of chunks left unused.
var chunks = sync.Pool{New: func() any { return &chunk{buf: make([]byte, 0, chunkSize)} }}

// New returns an empty queue holding at most maxItems items and maxBytes
// bytes of Size.
func New[T any](maxItems, maxBytes int) *Queue[T] {
	return &Queue[T]{maxItems: maxItems, maxBytes: maxBytes}
}

// Admission is whether the queue takes an item: what Push did, or what
// it would do now (Queue.Admission).
type Admission int

const (
	// Admitted: the item is queued, or would be.
	Admitted Admission = iota
	// Full: a bound would be exceeded; nothing changed.
	Full
	// Closed: the queue is closed; nothing changed.
	Closed
)

// Push appends a copy of data, with value, unless the queue is closed or
// that would exceed either bound. kept is the memory value holds besides
// data, as the caller estimates it (0 when none): the item's Size,
// len(data) + kept, counts against the byte bound. An item whose data
// alone fits the bound is admitted into a queue that holds nothing, however
// large kept is, so that an estimate never shuts out an item whose data
// the queue could take.
//
// Push returns what it did and the number of items queued afterwards. It
// never blocks on a full queue, and copies data only once it is admitted,
// so a refused push leaves no garbage.
//
// Push does not wait in line behind PushWait calls: it may take room that
// they are waiting for.
func (q *Queue[T]) Push(data []byte, value T, kept int) (Admission, int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.closed {
		return Closed, q.n
	}
	it := Item[T]{Data: data, Value: value, Kept: kept}
	if !q.fits(it) {
		return Full, q.n
	}
	q.add(it)
	return Admitted, q.n
}

// PushWait is Push that, when the item does not fit, waits for room until
// ctx ends. Waiters are served in arrival order: a PushWait that finds
// others waiting joins the end of the line even if its item would fit.
// When room is released, the waiters at the head of the line whose items
// fit are admitted then and there, in order, and woken; the first whose
// item does not fit (a Push took the room first, or not enough was
// released) keeps its place, and so does everyone behind it. A waiter
// whose ctx ends leaves the line, and the ones after it are admitted if
// their items fit. Nothing polls: a waiter sleeps until Release, Close, a
// waiter ahead of it leaving, or its ctx wakes it.
//
// It returns Admitted and the number of items queued afterwards; Closed if
// the queue was closed before or while it waited; Full once ctx has ended
// (ctx.Err() says why). An item that fits at once is admitted whether or
// not ctx has ended. PushWait starts no goroutine.
func (q *Queue[T]) PushWait(ctx context.Context, data []byte, value T, kept int) (Admission, int) {
	it := Item[T]{Data: data, Value: value, Kept: kept}
	q.mu.Lock()
	switch {
	case q.closed:
		n := q.n
		q.mu.Unlock()
		return Closed, n
	case q.line.First() == nil && q.fits(it):
		q.add(it)
		n := q.n
		q.mu.Unlock()
		return Admitted, n
	case ctx.Err() != nil:
		n := q.n
		q.mu.Unlock()
		return Full, n
	}
	w, _ := q.waiters.Get().(*waiter[T])
	if w == nil {
		w = new(waiter[T])
	}
	w.Value = pending[T]{item: it}
	q.line.Join(w)
	q.mu.Unlock()
	if !w.Wait(ctx) {
		q.mu.Lock()
		// Not served before the lock: it gives up. Close takes every
		// waiter out of line, so one still in it was not closed on.
		if w.InLine() {
			q.leave(w)
			w.Value.res, w.Value.n = Full, q.n
		}
		q.mu.Unlock()
	}
	res, n := w.Value.res, w.Value.n
	w.Value = pending[T]{}
	q.waiters.Put(w)
	return res, n
}

// fits reports whether it fits now. An item whose Data alone fits the byte
// bound fits a queue that holds nothing, however large its Size. q.mu is
// held.
func (q *Queue[T]) fits(it Item[T]) bool {
	if q.held >= q.maxItems {
		return false
	}
	return q.heldB+it.Size() <= q.maxBytes || q.held == 0 && len(it.Data) <= q.maxBytes
}

// add appends it with a copy of its Data; the caller checked that it fits.
// q.mu is held.
func (q *Queue[T]) add(it Item[T]) {
	if q.n == len(q.ring) {
		q.grow()
	}
	q.bytes += len(it.Data)
	q.held++
	q.heldB += it.Size()
	q.pushed++
	it.Data, it.chunk = q.copyData(it.Data)
	*q.at(q.n) = it
	q.n++
}

// leave takes w out of the line, wherever it is; if it was first, the
// waiters now at the head are served if their items fit, so that room w
// was waiting for passes on. q.mu is held.
func (q *Queue[T]) leave(w *waiter[T]) {
	if q.line.Leave(w) {
		q.serve()
	}
}

// serve admits the items of the waiters at the head of the line, in line
// order, as long as they fit, and wakes each of those waiters. q.mu is
// held.
func (q *Queue[T]) serve() {
	for w := q.line.First(); w != nil && q.fits(w.Value.item); w = q.line.First() {
		q.line.Leave(w)
		q.add(w.Value.item)
		w.Value.res, w.Value.n = Admitted, q.n
		w.Wake()
	}
}

// Admission returns what a Push would do now with no data: Closed, Full
// (by count, or with no byte left), or Admitted. It lets a caller skip
// work a push would refuse; Push still decides.
func (q *Queue[T]) Admission() Admission {
	q.mu.Lock()
	defer q.mu.Unlock()
	switch {
	case q.closed:
		return Closed
	case q.held >= q.maxItems || q.heldB >= q.maxBytes:
		return Full
	}
	return Admitted
}

// Release gives back the budget of taken items that the caller no longer
// holds: items of them, of total Size bytes. It admits the items of the
// PushWait calls at the head of the line that fit now, and wakes them.
func (q *Queue[T]) Release(items, bytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.held -= items
	q.heldB -= bytes
	if q.line.First() != nil {
		q.serve()
	}
}

// Sizes returns, read together, the items queued and the length of their
// Data, and the items that count against the bounds (queued, or taken and
// not released) and their total Size: what the bounds limit.
func (q *Queue[T]) Sizes() (queued, queuedBytes, held, heldBytes int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n, q.bytes, q.held, q.heldB
}

// Close makes every later Push and PushWait return Closed, and wakes every
// PushWait waiting, which returns Closed. What is queued stays, to be taken
// or drained. Once Close returns, nothing can add to the queue: a caller
// that closes and then drains sees every item ever accepted.
func (q *Queue[T]) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for w := q.line.First(); w != nil; w = q.line.First() {
		q.line.Leave(w)
		w.Value.res, w.Value.n = Closed, q.n
		w.Wake()
	}
}

// copyData copies data into the current chunk, starting a new one when it
// is full, and returns the copy and its chunk (nil for an item that gets
// memory of its own). The copy's capacity is its length, so nobody can
// append into the next item's bytes.
func (q *Queue[T]) copyData(data []byte) ([]byte, *chunk) {
	if len(data) > chunkSize/4 {
		return append([]byte(nil), data...), nil
	}
	c := q.chunk
	if c == nil || cap(c.buf)-len(c.buf) < len(data) {
		if c != nil {
			q.unref(c) // full: the queue no longer copies into it
		}
		c = chunks.Get().(*chunk)
		c.refs = 1
		q.chunk = c
	}
	start := len(c.buf)
	c.buf = append(c.buf, data...)
	c.refs++
	return c.buf[start:len(c.buf):len(c.buf)], c
}

// unref drops one reference to c; at none, c goes back to the pool, to be
// written over. q.mu is held.
func (q *Queue[T]) unref(c *chunk) {
	if c.refs--; c.refs == 0 {
		c.buf = c.buf[:0]
		chunks.Put(c)
	}
}

// Recycle gives b's memory (its items and their Data), which nothing
// reads any more, to later items and batches, and clears the items. It is
// optional: what is not recycled is left to the garbage collector. A batch
// is recycled at most once.
func (q *Queue[T]) Recycle(b Batch[T]) {
	if len(b.Items) == 0 {
		return
	}
	q.mu.Lock()
	for _, it := range b.Items {
		if it.chunk != nil {
			q.unref(it.chunk)
		}
	}
	q.mu.Unlock()
	items := b.Items[:cap(b.Items)]
	clear(items)
	q.spare.Put(&items)
}

// grow doubles the ring, up to maxItems, keeping items in order.
func (q *Queue[T]) grow() {
	size := min(max(2*len(q.ring), 64), q.maxItems)
	ring := make([]Item[T], size)
	for i := 0; i < q.n; i++ {
		ring[i] = *q.at(i)
	}
	q.ring, q.head = ring, 0
}

// Take splices the oldest items off the queue (they still count against the
// bounds until released): as many as fit in maxItems and in maxBytes, where
// the items cost len(Data) each (not Size: maxBytes bounds a request body)
// plus one separator byte between neighbours (the comma of a JSON array).
// It always takes at least one item when the queue is not empty, so an item
// larger than maxBytes leaves the queue too instead of blocking it; the
// caller checks the batch after the splice. Take returns an empty batch on
// an empty queue.
func (q *Queue[T]) Take(maxItems, maxBytes int) Batch[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	k, size := 0, -1
	for k < q.n && k < maxItems {
		cost := len(q.at(k).Data) + 1
		if k > 0 && size+cost > maxBytes {
			break
		}
		size += cost
		k++
	}
	return q.splice(k)
}

// Drain splices off every queued item (to be released like taken ones).
func (q *Queue[T]) Drain() Batch[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.splice(q.n)
}

// at returns the i-th oldest slot of the ring, 0 ≤ i < len(q.ring). A
// subtraction instead of a modulo: head and i are both below the length.
func (q *Queue[T]) at(i int) *Item[T] {
	j := q.head + i
	if j >= len(q.ring) {
		j -= len(q.ring)
	}
	return &q.ring[j]
}

// splice removes the k oldest items. q.mu is held.
func (q *Queue[T]) splice(k int) Batch[T] {
	b := Batch[T]{Seq: q.taken}
	if k == 0 {
		return b
	}
	if p, ok := q.spare.Get().(*[]Item[T]); ok && cap(*p) >= k {
		b.Items = (*p)[:k]
	} else {
		b.Items = make([]Item[T], k)
	}
	var zero Item[T]
	for i := range k {
		it := q.at(i)
		b.Items[i] = *it
		q.bytes -= len(it.Data)
		*it = zero // drop references so the queue does not pin sent events
	}
	q.head = (q.head + k) % len(q.ring)
	q.n -= k
	q.taken += uint64(k)
	return b
}

// Len returns the number of queued items.
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.n
}

// Counts returns how many items were ever pushed and ever taken (by Take or
// Drain). The sequence number of the next item to be taken is taken; items
// numbered below pushed have been queued.
func (q *Queue[T]) Counts() (pushed, taken uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pushed, q.taken
}
