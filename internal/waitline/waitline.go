// Package waitline is the line that package queue's PushWait and package
// spool's AppendWait wait in for room: first come, first served, a waiter
// whose context ends leaving its place wherever it is, and nothing polling.
//
// A Line holds no lock of its own: its owner guards it, and the owner's
// state it waits on, with one mutex, held for every call but Wait. What a
// waiter waits for and who is served is the owner's to decide; the line
// only keeps the order and carries the wake-ups.
package waitline

import "context"

// Line is a first-in, first-out line of waiters. The zero Line is empty.
// It is not safe for concurrent use: its owner's mutex guards it.
type Line[T any] struct {
	first, last *Waiter[T]
}

// Waiter is one goroutine's place in a line. Its Value is what the owner
// keeps with it (the item waiting for room, what to return to it). A
// Waiter can join a line again once it is out of it, so owners may keep
// spare ones.
type Waiter[T any] struct {
	Value T

	// ready holds a token once the waiter is woken; one token, so that
	// wake-ups before it looks add up to one.
	ready      chan struct{}
	prev, next *Waiter[T]
	inLine     bool
}

// Join puts w, out of any line, at the end of l. A wake-up left over from
// w's last time in a line is dropped: nobody else refers to w out of line.
func (l *Line[T]) Join(w *Waiter[T]) {
	if w.ready == nil {
		w.ready = make(chan struct{}, 1)
	} else {
		select {
		case <-w.ready:
		default:
		}
	}
	w.prev, w.inLine = l.last, true
	if l.last == nil {
		l.first = w
	} else {
		l.last.next = w
	}
	l.last = w
}

// Leave takes w out of l, wherever it is in it, and reports whether it was
// first, so that the owner can see whether the waiter now first may go. It
// does nothing, and reports false, when w is not in line.
func (l *Line[T]) Leave(w *Waiter[T]) (wasFirst bool) {
	if !w.inLine {
		return false
	}
	wasFirst = l.first == w
	if w.prev == nil {
		l.first = w.next
	} else {
		w.prev.next = w.next
	}
	if w.next == nil {
		l.last = w.prev
	} else {
		w.next.prev = w.prev
	}
	w.prev, w.next, w.inLine = nil, nil, false
	return wasFirst
}

// First returns the waiter first in line, or nil when the line is empty.
func (l *Line[T]) First() *Waiter[T] { return l.first }

// InLine reports whether w is in a line: joined, and not left since.
func (w *Waiter[T]) InLine() bool { return w.inLine }

// Wake wakes w's Wait, or its next Wait if none is running. It never
// blocks.
func (w *Waiter[T]) Wake() {
	select {
	case w.ready <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Wait blocks until w is woken or ctx ends, and reports whether it was
// woken. A wake-up and the end of ctx may come together: either may win,
// so a waiter that was not woken checks, under its owner's mutex, whether
// it was served meanwhile (InLine is false). Wait is called without the
// owner's mutex, by w's own goroutine, after Join.
func (w *Waiter[T]) Wait(ctx context.Context) bool {
	done := ctx.Done()
	if done == nil {
		<-w.ready // a plain receive costs less than a select
		return true
	}
	select {
	case <-w.ready:
		return true
	case <-done:
		return false
	}
}
