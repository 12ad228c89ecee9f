package analytics

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/stretchr/testify/assert"
)

// blockingCallback blocks every Success until release is closed.
type blockingCallback struct {
	release chan struct{}
	called  atomic.Int64
}

func (b *blockingCallback) Success(Message)        { b.called.Add(1); <-b.release }
func (b *blockingCallback) Failure(Message, error) {}

// TestBlockingCallbacksDoNotStopUploads: with WithBlockingCallbacks, the
// batches go on being cut and sent while every callback is blocked; by
// default they stop once the batches in flight (4 × MaxConcurrentRequests)
// are all held by their callbacks.
func TestBlockingCallbacksDoNotStopUploads(t *testing.T) {
	for _, tt := range []struct {
		name     string
		on       bool
		requests int
	}{
		{"off: the batches in flight are held", false, 4},
		{"on: every batch is sent", true, 10},
	} {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := newAPI()
				cb := &blockingCallback{release: make(chan struct{})}
				e := newEnv(t, api, WithFlushAt(1), WithMaxConcurrentRequests(1),
					WithCallback(cb), WithBlockingCallbacks(tt.on))
				e.enqueue(tracks("m", 10)...)
				synctest.Wait()
				assert.Len(t, api.Requests(), tt.requests, "requests sent while the callbacks block")
				assert.EqualValues(t, tt.requests, cb.called.Load(), "callbacks blocked")
				close(cb.release)
				e.close()
				assert.Len(t, api.Requests(), 10, "requests once released")
				assert.EqualValues(t, 10, cb.called.Load(), "callbacks")
			})
		})
	}
}

// A callback's message carries its Type, whatever the caller set, on
// Success and on Failure.
func TestCallbackMessageCarriesType(t *testing.T) {
	msgs := []Message{
		Track{UserId: "u", Event: "E"},
		Identify{UserId: "u"},
		Page{UserId: "u", Name: "Home"},
		Screen{UserId: "u", Name: "Main"},
		Group{UserId: "u", GroupId: "g"},
		Alias{UserId: "u", PreviousId: "p"},
		&Track{Type: "bogus", UserId: "u", Event: "E"},
	}
	want := []string{"track", "identify", "page", "screen", "group", "alias", "track"}
	for _, status := range []int{200, 400} {
		e := newEnv(t, newAPI().Default(analyticstest.Status(status)))
		e.enqueue(msgs...)
		e.close()
		var got []string
		for _, m := range e.out.Successes() {
			got = append(got, typeOf(m))
		}
		for _, f := range e.out.Failures() {
			got = append(got, typeOf(f.Message))
		}
		assert.Equal(t, want, got, "the Type of each message called back, answered %d", status)
	}
}

// typeOf returns the Type field of any message.
func typeOf(m Message) string {
	switch m := m.(type) {
	case Track:
		return m.Type
	case Identify:
		return m.Type
	case Page:
		return m.Type
	case Screen:
		return m.Type
	case Group:
		return m.Type
	case Alias:
		return m.Type
	}
	return fmt.Sprintf("not a message value: %T", m)
}
