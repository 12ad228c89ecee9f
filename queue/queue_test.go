package queue

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

func item(i, size int) Item[int] {
	data := bytes.Repeat([]byte{'x'}, size)
	return Item[int]{Data: data, Value: i}
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
		if res, n := q.Push(item(i, 10).Data, item(i, 10).Value, 0); res != Admitted || n != i+1 {
			t.Fatalf("Push %d = (%v, %d), want (Admitted, %d)", i, res, n, i+1)
		}
	}
	if res, n := q.Push(item(3, 10).Data, item(3, 10).Value, 0); res != Full || n != 3 {
		t.Fatalf("Push into a full queue = (%v, %d), want (Full, 3)", res, n)
	}
	if got := values(q.Drain()); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("refused push touched the queue: %v", got)
	}
}

func TestPushBoundedByBytes(t *testing.T) {
	q := New[int](100, 25)
	q.Push(item(0, 10).Data, item(0, 10).Value, 0)
	q.Push(item(1, 10).Data, item(1, 10).Value, 0)
	if res, _ := q.Push(item(2, 6).Data, item(2, 6).Value, 0); res != Full {
		t.Fatal("push beyond the byte bound was accepted")
	}
	if res, _ := q.Push(item(3, 5).Data, item(3, 5).Value, 0); res != Admitted {
		t.Fatal("push that exactly fills the byte bound was refused")
	}
	if n, b, _ := q.Sizes(); n != 3 || b != 25 {
		t.Fatalf("Sizes = %d items, %d bytes; want 3, 25", n, b)
	}
	q.Take(1, 1000)
	if _, b, _ := q.Sizes(); b != 15 {
		t.Fatalf("bytes queued after taking 10 = %d, want 15", b)
	}
	// Taken is still held until released.
	if res, _ := q.Push(item(4, 10).Data, item(4, 10).Value, 0); res != Full {
		t.Fatal("push accepted while taken items still hold the budget")
	}
	if queued, b, held := q.Sizes(); queued != 2 || b != 15 || held != 3 {
		t.Fatalf("Sizes() = %d, %d, %d; want 2 queued of 15 bytes, 3 held", queued, b, held)
	}
	q.Release(1, 10)
	if res, _ := q.Push(item(4, 10).Data, item(4, 10).Value, 0); res != Admitted {
		t.Fatal("push refused after space was released")
	}
}

func TestTakeByCountKeepsOrder(t *testing.T) {
	q := New[int](1000, 1<<20)
	for i := range 10 {
		q.Push(item(i, 1).Data, item(i, 1).Value, 0)
	}
	b := q.Take(4, 1<<20)
	if fmt.Sprint(values(b)) != "[0 1 2 3]" || b.Seq != 0 {
		t.Fatalf("first batch %v seq %d", values(b), b.Seq)
	}
	b = q.Take(4, 1<<20)
	if fmt.Sprint(values(b)) != "[4 5 6 7]" || b.Seq != 4 {
		t.Fatalf("second batch %v seq %d", values(b), b.Seq)
	}
	b = q.Take(4, 1<<20)
	if fmt.Sprint(values(b)) != "[8 9]" || b.Seq != 8 {
		t.Fatalf("last batch %v seq %d", values(b), b.Seq)
	}
	if b := q.Take(4, 1<<20); len(b.Items) != 0 {
		t.Fatalf("Take on empty queue returned %v", values(b))
	}
}

func TestTakeByBytesCountsSeparators(t *testing.T) {
	q := New[int](1000, 1<<20)
	for i := range 5 {
		q.Push(item(i, 10).Data, item(i, 10).Value, 0)
	}
	// Three items joined by commas: 10+1+10+1+10 = 32 bytes.
	if got := values(q.Take(100, 32)); len(got) != 3 {
		t.Fatalf("Take(_, 32) took %d items, want 3", len(got))
	}
	// Two items need 21 bytes; 20 holds only one.
	if got := values(q.Take(100, 20)); len(got) != 1 {
		t.Fatalf("Take(_, 20) of two 10-byte items took %d, want 1", len(got))
	}
}

func TestTakeFitsExactly(t *testing.T) {
	q := New[int](1000, 1<<20)
	for i := range 4 {
		q.Push(item(i, 10).Data, item(i, 10).Value, 0)
	}
	if got := values(q.Take(100, 21)); len(got) != 2 {
		t.Fatalf("Take(_, 21) took %d items, want exactly 2 (10+1+10)", len(got))
	}
	if got := values(q.Take(100, 20)); len(got) != 1 {
		t.Fatalf("Take(_, 20) took %d items, want 1", len(got))
	}
}

func TestOversizedItemLeavesTheQueue(t *testing.T) {
	q := New[int](1000, 1<<20)
	q.Push(item(0, 100).Data, item(0, 100).Value, 0)
	q.Push(item(1, 1).Data, item(1, 1).Value, 0)
	b := q.Take(100, 50)
	if fmt.Sprint(values(b)) != "[0]" {
		t.Fatalf("oversized head: took %v, want [0] alone", values(b))
	}
	if got := values(q.Take(100, 50)); fmt.Sprint(got) != "[1]" {
		t.Fatalf("item behind an oversized one: %v, want [1]", got)
	}
}

func TestRingWrapsAndGrows(t *testing.T) {
	q := New[int](1000, 1<<20)
	next, want := 0, 0
	for round := range 50 {
		for range round*7%97 + 1 {
			if res, _ := q.Push(item(next, 1).Data, item(next, 1).Value, 0); res == Admitted {
				next++
			}
		}
		taken := q.Take(round%13+1, 1<<20)
		q.Release(len(taken.Items), len(taken.Items))
		for _, v := range values(taken) {
			if v != want {
				t.Fatalf("round %d: got %d, want %d", round, v, want)
			}
			want++
		}
	}
	for _, v := range values(q.Drain()) {
		if v != want {
			t.Fatalf("drain: got %d, want %d", v, want)
		}
		want++
	}
	if want != next {
		t.Fatalf("took %d items of %d pushed", want, next)
	}
	pushed, taken := q.Counts()
	if pushed != uint64(next) || taken != uint64(next) {
		t.Fatalf("Counts() = %d, %d; want %d, %d", pushed, taken, next, next)
	}
}

func TestSpliceDropsReferences(t *testing.T) {
	q := New[*int](10, 1<<20)
	v := new(int)
	q.Push([]byte("x"), v, 0)
	q.Take(1, 100)
	for _, it := range q.ring {
		if it.Value != nil || it.Data != nil {
			t.Fatal("a taken item is still referenced by the ring")
		}
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
				if res, _ := q.Push(item(p*each+i, 3).Data, item(p*each+i, 3).Value, 0); res == Admitted {
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
	if got != total {
		t.Fatalf("took %d items, %d were accepted", got, total)
	}
	if n, b, _ := q.Sizes(); n != 0 || b != 0 {
		t.Fatalf("queue not empty: %d items, %d bytes", n, b)
	}
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
	q.Push(item(0, 1).Data, item(0, 1).Value, 0)
	q.Close()
	if !q.IsClosed() {
		t.Fatal("IsClosed() = false after Close")
	}
	if res, n := q.Push(item(1, 1).Data, item(1, 1).Value, 0); res != Closed || n != 1 {
		t.Fatalf("Push after Close = (%v, %d), want (Closed, 1)", res, n)
	}
	if got := values(q.Drain()); fmt.Sprint(got) != "[0]" {
		t.Fatalf("drained %v, want the item queued before Close", got)
	}
}

func TestPushCopiesAndAdmits(t *testing.T) {
	q := New[int](2, 10)
	data := []byte("abc")
	q.Push(data, 1, 0)
	data[0] = 'X'
	if got := string(q.Drain().Items[0].Data); got != "abc" {
		t.Fatalf("queued %q, want the bytes as they were pushed", got)
	}
	q.Release(1, 3)
	if q.Admission() != Admitted {
		t.Fatal("an empty queue does not admit")
	}
	q.Push([]byte("0123456789"), 2, 0)
	if q.Admission() != Full {
		t.Fatal("a queue with no byte left admits")
	}
	q.Close()
	if q.Admission() != Closed {
		t.Fatal("a closed queue admits")
	}
}
