package analytics

import (
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		assert.NotPanics(t, func() { err = e.client.Enqueue(m) }, "Enqueue(%T(nil))", m)
		assert.ErrorIs(t, err, ErrInvalidMessage, "Enqueue(%T(nil))", m)
		var fe *FieldError
		assert.ErrorAs(t, err, &fe, "Enqueue(%T(nil))", m)
		assert.Empty(t, MessageID(m), "MessageID(%T(nil))", m)
	}
	e.close()
	st := e.client.Stats()
	assert.Equal(t, int64(len(msgs)), st.Rejected.Invalid, "events rejected as invalid")
	assert.Equal(t, int64(len(msgs)), st.Rejected.Total(), "events rejected")
	ok, failed := e.out.counts()
	assert.Zero(t, ok, "Success callbacks for refused messages")
	assert.Zero(t, failed, "Failure callbacks for refused messages")
}

// TestPointerMessageCallbackGetsTheValue: a pointer to a message is
// accepted, and its callback receives the message value, defaults filled,
// as for a message passed by value.
func TestPointerMessageCallbackGetsTheValue(t *testing.T) {
	e := newEnv(t, newAPI())
	e.enqueue(&Track{MessageId: "p1", UserId: "u", Event: "E"}, &Alias{MessageId: "p2", UserId: "u", PreviousId: "p"})
	e.close()
	e.out.mu.Lock()
	successes := append([]Message(nil), e.out.successes...)
	e.out.mu.Unlock()
	require.Len(t, successes, 2, "Success callbacks")
	for _, m := range successes {
		assert.Equal(t, reflect.Struct, reflect.TypeOf(m).Kind(), "kind of the %T the callback got: the message value", m)
		assert.NotEmpty(t, MessageID(m), "MessageID of the %T the callback got", m)
		if tr, ok := m.(Track); ok {
			assert.False(t, tr.Timestamp.IsZero(), "the callback's Track has its Timestamp filled")
		}
	}
}
