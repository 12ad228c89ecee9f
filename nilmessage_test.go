package analytics

import (
	"errors"
	"reflect"
	"testing"
)

// ownTrack is a caller's type that embeds a Track: its pointer is a
// Message too.
type ownTrack struct{ Track }

// TestTypedNilMessageIsInvalid: a nil pointer of any message type is
// refused like a nil Message, with a *FieldError, counted as invalid and
// without a callback, never a panic.
func TestTypedNilMessageIsInvalid(t *testing.T) {
	msgs := []Message{
		nil,
		(*Track)(nil), (*Identify)(nil), (*Page)(nil), (*Screen)(nil), (*Group)(nil), (*Alias)(nil),
		(*ownTrack)(nil),
	}
	e := newEnv(t, newAPI())
	for _, m := range msgs {
		var err error
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("Enqueue(%T(nil)) panicked: %v", m, p)
				}
			}()
			err = e.client.Enqueue(m)
		}()
		var fe *FieldError
		if !errors.Is(err, ErrInvalidMessage) || !errors.As(err, &fe) {
			t.Errorf("Enqueue(%T(nil)) = %v, want a *FieldError wrapping ErrInvalidMessage", m, err)
		}
		if id := MessageID(m); id != "" {
			t.Errorf("MessageID(%T(nil)) = %q", m, id)
		}
	}
	e.close()
	if st := e.client.Stats(); st.Rejected.Invalid != int64(len(msgs)) || st.Rejected.Total() != int64(len(msgs)) {
		t.Fatalf("stats %+v, want %d rejected as invalid", st, len(msgs))
	}
	if ok, failed := e.out.counts(); ok+failed != 0 {
		t.Fatalf("%d callbacks for refused messages", ok+failed)
	}
}

// TestPointerMessageCallbackGetsTheValue: a pointer to a message is
// accepted, and its callback receives the message value, defaults filled,
// as for a message passed by value.
func TestPointerMessageCallbackGetsTheValue(t *testing.T) {
	e := newEnv(t, newAPI())
	e.enqueue(&Track{MessageId: "p1", UserId: "u", Event: "E"}, &Alias{MessageId: "p2", UserId: "u", PreviousId: "p"})
	e.close()
	e.out.mu.Lock()
	defer e.out.mu.Unlock()
	if len(e.out.successes) != 2 {
		t.Fatalf("%d successes, want 2", len(e.out.successes))
	}
	for _, m := range e.out.successes {
		if k := reflect.TypeOf(m).Kind(); k != reflect.Struct || MessageID(m) == "" {
			t.Errorf("callback got a %T (%v), want the message value", m, k)
		}
		if tr, ok := m.(Track); ok && tr.Timestamp.IsZero() {
			t.Errorf("callback got %+v, want the Timestamp filled", tr)
		}
	}
}
