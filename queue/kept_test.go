package queue

import "testing"

// What a value keeps counts against the byte bound with its data, is
// given back with it, and leaves batch cutting to the data alone.
func TestKeptCountsAgainstTheByteBound(t *testing.T) {
	q := New[int](100, 100)
	if res, _ := q.Push(make([]byte, 10), 0, 30); res != Admitted {
		t.Fatal("first push refused")
	}
	if res, _ := q.Push(make([]byte, 10), 1, 30); res != Admitted {
		t.Fatal("push that fits with what it keeps refused")
	}
	if res, _ := q.Push(make([]byte, 10), 2, 11); res != Full {
		t.Fatal("push over the byte bound by what it keeps accepted")
	}
	if res, _ := q.Push(make([]byte, 10), 3, 10); res != Admitted {
		t.Fatal("push that exactly fills the byte bound refused")
	}
	if n, b, held := q.Sizes(); n != 3 || b != 30 || held != 3 {
		t.Fatalf("Sizes = %d, %d, %d; want 3 items of 30 bytes of data, 3 held", n, b, held)
	}
	// Batches are cut by data: 10+1+10 fits in 21 bytes.
	b := q.Take(10, 21)
	if len(b.Items) != 2 || b.Items[0].Size() != 40 || b.Items[0].Kept != 30 {
		t.Fatalf("took %+v, want the 2 items that fit by data, of Size 40", b.Items)
	}
	if res, _ := q.Push(make([]byte, 1), 4, 0); res != Full {
		t.Fatal("push accepted while taken items hold the budget")
	}
	q.Release(len(b.Items), b.Items[0].Size()+b.Items[1].Size())
	if res, _ := q.Push(make([]byte, 10), 4, 70); res != Admitted {
		t.Fatal("push refused after the budget was given back")
	}
}

// An estimate never shuts out an item whose data fits: an empty queue
// admits it whatever it keeps.
func TestEmptyQueueAdmitsWhateverIsKept(t *testing.T) {
	q := New[int](10, 100)
	if res, _ := q.Push(make([]byte, 100), 0, 1000); res != Admitted {
		t.Fatal("an empty queue refused an item whose data fits")
	}
	if res, _ := q.Push(make([]byte, 1), 1, 0); res != Full {
		t.Fatal("a queue over its byte bound admitted")
	}
	b := q.Drain()
	q.Release(len(b.Items), b.Items[0].Size())
	if res, _ := q.Push(make([]byte, 101), 2, 0); res != Full {
		t.Fatal("an empty queue admitted data over the byte bound")
	}
}
