package waitline

import (
	"context"
	"slices"
	"sync"
	"testing"
	"testing/synctest"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// order returns the Values of l's waiters, first to last.
func order(l *Line[int]) []int {
	var got []int
	for w := l.first; w != nil; w = w.next {
		got = append(got, w.Value)
	}
	return got
}

// Waiters stand in the order they joined, and one that leaves, first,
// last or between, leaves the others in order.
func TestLineOrder(t *testing.T) {
	var l Line[int]
	w := make([]*Waiter[int], 5)
	for i := range w {
		w[i] = &Waiter[int]{Value: i}
		l.Join(w[i])
	}
	if got := order(&l); !slices.Equal(got, []int{0, 1, 2, 3, 4}) {
		t.Fatalf("line %v, want 0..4", got)
	}
	for _, c := range []struct {
		leave     int
		wasFirst  bool
		want      []int
		wantFirst int
	}{
		{2, false, []int{0, 1, 3, 4}, 0},
		{0, true, []int{1, 3, 4}, 1},
		{4, false, []int{1, 3}, 1},
		{4, false, []int{1, 3}, 1}, // out of line already: nothing
		{1, true, []int{3}, 3},
	} {
		if got := l.Leave(w[c.leave]); got != c.wasFirst {
			t.Errorf("Leave(%d) = %v, want %v", c.leave, got, c.wasFirst)
		}
		if got := order(&l); !slices.Equal(got, c.want) {
			t.Errorf("after Leave(%d): line %v, want %v", c.leave, got, c.want)
		}
		if got := l.First().Value; got != c.wantFirst {
			t.Errorf("after Leave(%d): First %d, want %d", c.leave, got, c.wantFirst)
		}
		if w[c.leave].InLine() {
			t.Errorf("waiter %d in line after Leave", c.leave)
		}
	}
	l.Leave(w[3])
	if l.First() != nil || l.last != nil {
		t.Fatal("line not empty once all left")
	}
	l.Join(w[4]) // again, after leaving
	if got := order(&l); !slices.Equal(got, []int{4}) || !w[4].InLine() {
		t.Fatalf("line %v after joining again, want [4]", got)
	}
}

// Wait returns once woken, and not before; wake-ups before it looks add
// up to one.
func TestWaitWoken(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Line[int]
		w := &Waiter[int]{}
		l.Join(w)
		waitsForWake(t, w, "Wait returned before any wake-up")

		w.Wake()
		w.Wake() // never blocks; the two count as one
		if !w.Wait(context.Background()) {
			t.Fatal("Wait reported not woken")
		}
		waitsForWake(t, w, "two wake-ups woke two Waits")
	})
}

// Wait returns false once its context ends, woken or not.
func TestWaitContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Line[int]
		w := &Waiter[int]{}
		l.Join(w)
		ctx, cancel := context.WithCancel(context.Background())
		returned := make(chan bool, 1)
		go func() { returned <- w.Wait(ctx) }()
		synctest.Wait()
		cancel()
		if <-returned {
			t.Fatal("Wait reported woken; its context ended")
		}
	})
}

// A wake-up left from a waiter's last time in line is dropped when it
// joins again, so that a reused waiter does not return at once.
func TestJoinDropsOldWakeUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var l Line[int]
		w := &Waiter[int]{}
		l.Join(w)
		l.Leave(w)
		w.Wake() // served as its context ended: the token is left over
		l.Join(w)
		waitsForWake(t, w, "Wait returned on a wake-up from before Join")
	})
}

// Served in line order under the owner's mutex, waiters wake in that
// order: the way queue and spool use the line.
func TestServeInOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var (
			mu     sync.Mutex
			l      Line[int]
			served []int
			wg     sync.WaitGroup
		)
		for i := range 4 {
			w := &Waiter[int]{Value: i}
			mu.Lock()
			l.Join(w)
			mu.Unlock()
			wg.Go(func() {
				w.Wait(context.Background())
			})
		}
		synctest.Wait()
		mu.Lock()
		for w := l.First(); w != nil; w = l.First() {
			l.Leave(w)
			served = append(served, w.Value)
			w.Wake()
		}
		mu.Unlock()
		wg.Wait()
		if !slices.Equal(served, []int{0, 1, 2, 3}) {
			t.Fatalf("served %v, want 0..3", served)
		}
	})
}

// waitsForWake checks, in a synctest bubble, that a Wait on w blocks until
// a Wake (failing with why if it returns before), then wakes it and checks
// that it returns woken.
func waitsForWake(t *testing.T, w *Waiter[int], why string) {
	t.Helper()
	returned := make(chan bool, 1)
	go func() { returned <- w.Wait(context.Background()) }()
	synctest.Wait()
	select {
	case <-returned:
		t.Fatal(why)
	default:
	}
	w.Wake()
	if !<-returned {
		t.Fatal("Wait reported not woken")
	}
}
