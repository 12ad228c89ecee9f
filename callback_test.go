package analytics

import (
	"fmt"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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

// A callback's message is a copy taken at Enqueue: the same fields and
// members, in maps and a Context of its own, so that what the caller does
// to its message afterwards shows neither in what was sent nor in what
// the callback gets, and the other way round. Its Timestamp is the same
// instant, in UTC, Local, or a fixed zone of the same name and offset.
func TestCallbackGetsACopyOfTheMessage(t *testing.T) {
	zone := time.FixedZone("XST", -7*3600)
	stamps := []time.Time{
		time.Date(2026, 12, 2, 10, 0, 0, 123_000_000, time.UTC),
		time.Date(2026, 12, 2, 10, 0, 0, 0, time.Local),
		time.Date(2026, 12, 2, 10, 0, 0, 0, zone),
	}
	e := newEnv(t, newAPI())
	props := Properties{"plan": "pro", "nested": map[string]any{"a": 1}}
	ctx := &Context{Locale: "en-US", Traits: Traits{"t": "v"}}
	integrations := Integrations{"All": false}
	for i, ts := range stamps {
		e.enqueue(Track{MessageId: fmt.Sprint("m", i), UserId: "u", Event: "E", Timestamp: ts,
			Properties: props, Context: ctx, Integrations: integrations})
	}
	e.enqueue(&Page{MessageId: "p", UserId: "u", Name: "Home", Properties: props})
	props["plan"], props["added"] = "changed", true
	ctx.Locale, ctx.Traits["t"], ctx.Extra = "fr-FR", "changed", map[string]any{"x": 1}
	integrations["All"] = true
	e.close()

	got := e.out.Successes()
	require.Len(t, got, 4, "callbacks")
	for i, ts := range stamps {
		tr, ok := got[i].(Track)
		require.True(t, ok, "a Track: %T", got[i])
		assert.Equal(t, fmt.Sprint("m", i), tr.MessageId)
		assert.Equal(t, Properties{"plan": "pro", "nested": map[string]any{"a": 1}}, tr.Properties, "properties as enqueued")
		assert.Equal(t, Integrations{"All": false}, tr.Integrations, "integrations as enqueued")
		assert.Equal(t, "en-US", tr.Context.Locale, "the context as enqueued")
		assert.Equal(t, Traits{"t": "v"}, tr.Context.Traits, "the context's traits as enqueued")
		assert.Nil(t, tr.Context.Extra, "the context's Extra as enqueued")
		assert.True(t, tr.Timestamp.Equal(ts), "the same instant: %v, %v", tr.Timestamp, ts)
		gotName, gotOff := tr.Timestamp.Zone()
		wantName, wantOff := ts.Zone()
		assert.Equal(t, wantName, gotName, "zone name")
		assert.Equal(t, wantOff, gotOff, "zone offset")
		tr.Properties["x"] = 1 // the callback's map is its own
	}
	assert.Equal(t, time.UTC, got[0].(Track).Timestamp.Location(), "a UTC time stays in UTC")
	assert.Equal(t, time.Local, got[1].(Track).Timestamp.Location(), "a Local time stays in Local")
	pg, ok := got[3].(Page)
	require.True(t, ok, "a Page: %T", got[3])
	assert.Equal(t, "pro", pg.Properties["plan"], "a pointer's message is copied too")
	assert.NotContains(t, props, "x", "the callback's map is not the caller's")
	var sent int
	for _, r := range e.api.Requests() {
		for _, ev := range r.Events {
			assert.Equal(t, "pro", ev["properties"].(map[string]any)["plan"], "sent as enqueued")
			assert.NotContains(t, ev["properties"], "added", "sent as enqueued")
			sent++
		}
	}
	assert.Equal(t, 4, sent, "events sent")
}
