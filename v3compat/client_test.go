package analytics

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

// fakeClient is a test double of Client, as v3 code writes one.
type fakeClient struct{ got []Message }

func (f *fakeClient) Enqueue(m Message) error { f.got = append(f.got, m); return nil }
func (f *fakeClient) Close() error            { return nil }

var (
	_ Client    = (*fakeClient)(nil)
	_ io.Closer = Client(nil)
)

// Enqueue waits while the queue is full, and returns when an upload ends
// and gives its room back: not before, and not later (no polling).
func TestEnqueueWaitsForRoom(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().Default(analyticstest.Answer{Delay: 3 * time.Second})
		c, _, out := newTestClient(t, api, Config{BatchSize: 1}, root.WithMaxQueueSize(1))
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "first"}))
		synctest.Wait() // the batch is out, holding the queue's one place for 3 s

		start := time.Now()
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "second"}))
		assert.Equal(t, 3*time.Second, time.Since(start), "Enqueue returned when the first upload ended")

		require.NoError(t, c.Close())
		ok, failed := out.counts()
		assert.Equal(t, 2, ok)
		assert.Zero(t, failed)
		assert.Len(t, api.Delivered(), 2)
	})
}

// A call waiting for room returns ErrClosed once Close begins.
func TestEnqueueWaitingWhenCloseBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().Default(analyticstest.Answer{Delay: time.Second})
		c, _, _ := newTestClient(t, api, Config{BatchSize: 1}, root.WithMaxQueueSize(1))
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "first"}))
		synctest.Wait()
		errc := make(chan error, 1)
		go func() { errc <- c.Enqueue(Track{UserId: "u", Event: "waits"}) }()
		synctest.Wait()
		require.Empty(t, errc, "Enqueue returned with the queue full")

		closed := make(chan error, 1)
		go func() { closed <- c.Close() }()
		assert.ErrorIs(t, <-errc, ErrClosed)
		assert.NoError(t, <-closed)
		assert.Len(t, api.Delivered(), 1)
	})
}

func TestCloseTwice(t *testing.T) {
	c, _, _ := newTestClient(t, analyticstest.New(), Config{})
	require.NoError(t, c.Close())
	assert.Equal(t, ErrClosed, c.Close(), "the second Close")
	assert.ErrorIs(t, c.Enqueue(Track{UserId: "u", Event: "E"}), ErrClosed, "Enqueue after Close")
	assert.ErrorIs(t, c.Enqueue(Track{UserId: "u", Event: "E"}), root.ErrClosed, "the same value as the root's")
}

func TestEnqueueFieldError(t *testing.T) {
	c, _, out := newTestClient(t, analyticstest.New(), Config{})
	defer c.Close()
	tests := []struct {
		msg        Message
		typ, field string
	}{
		{Track{UserId: "u"}, "analytics.Track", "Event"},
		{Track{Event: "E"}, "analytics.Track", "UserId"},
		{&Track{Event: "E"}, "analytics.Track", "UserId"},
		{Identify{}, "analytics.Identify", "UserId"},
		{Page{Name: "Home"}, "analytics.Page", "UserId"},
		{Screen{Name: "Home"}, "analytics.Screen", "UserId"},
		{Group{UserId: "u"}, "analytics.Group", "GroupId"},
		{Group{GroupId: "g"}, "analytics.Group", "UserId"},
		{Alias{PreviousId: "p"}, "analytics.Alias", "UserId"},
		{&Alias{UserId: "u"}, "analytics.Alias", "PreviousId"},
	}
	for _, tt := range tests {
		err := c.Enqueue(tt.msg)
		fe, ok := err.(FieldError) // as v3 code asserts it
		require.True(t, ok, "%#v: want a FieldError value, got %T %v", tt.msg, err, err)
		assert.Equal(t, FieldError{Type: tt.typ, Name: tt.field, Value: ""}, fe)
		assert.Equal(t, tt.typ+"."+tt.field+`: invalid field value: ""`, err.Error())
		assert.ErrorIs(t, err, root.ErrInvalidMessage)
	}

	for _, msg := range []Message{nil, (*Track)(nil), (*Group)(nil)} {
		err := c.Enqueue(msg)
		fe, ok := err.(FieldError)
		require.True(t, ok, "%#v: got %T %v", msg, err, err)
		assert.Equal(t, "(nil)", fe.Name)
	}
	ok, failed := out.counts()
	assert.Zero(t, ok+failed, "a refused message gets no callback")
}

// custom implements Message but is none of the six types.
type custom struct{ valid bool }

func (c custom) Validate() error {
	if !c.valid {
		return FieldError{Type: "custom", Name: "valid", Value: false}
	}
	return nil
}

func TestEnqueueCustomType(t *testing.T) {
	c, _, _ := newTestClient(t, analyticstest.New(), Config{})
	defer c.Close()
	assert.Equal(t, FieldError{Type: "custom", Name: "valid", Value: false}, c.Enqueue(custom{}),
		"as in v3, the message is validated first")
	err := c.Enqueue(custom{valid: true})
	assert.ErrorIs(t, err, root.ErrInvalidMessage)
	assert.EqualError(t, err, "messages with custom types cannot be enqueued: analytics.custom", "v3's text")
}

// A message too large is accepted, as by v3's Enqueue, and
// Callback.Failure gets ErrMessageTooBig itself.
func TestEnqueueTooBig(t *testing.T) {
	c, _, out := newTestClient(t, analyticstest.New(), Config{})
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E", Properties: NewProperties().Set("blob", strings.Repeat("x", 40_000))}))
	require.NoError(t, c.Close())
	_, failed := out.counts()
	require.Equal(t, 1, failed, "Failure callbacks")
	assert.Same(t, ErrMessageTooBig, out.failures[0])
}

// Without a Callback, a message too large is accepted and logged as an
// error, each time; a client whose every event fails (an empty write key)
// logs that once, at NewWithConfig, and not for each event.
func TestEnqueueTooBigWithoutACallbackIsLogged(t *testing.T) {
	big := Track{UserId: "u", Event: "E", Properties: NewProperties().Set("blob", strings.Repeat("x", 40_000))}
	log := &lines{}
	c, err := NewWithConfig(testWriteKey, Config{Transport: analyticstest.New(), Logger: log})
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(big))
	require.NoError(t, c.Enqueue(big))
	require.NoError(t, c.Close())
	want := "ERROR analytics: event not sent: " + ErrMessageTooBig.Error()
	assert.Equal(t, []string{want, want}, log.all(), "the lines logged")

	log = &lines{}
	c, err = NewWithConfig("", Config{Transport: analyticstest.New(), Logger: log})
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(big))
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	require.NoError(t, c.Close())
	logged := log.all()
	require.Len(t, logged, 1, "an empty write key, logged once: %q", logged)
	assert.Contains(t, logged[0], "write key is empty")
}

// A value JSON cannot hold is accepted, as by v3's Enqueue, and
// Callback.Failure gets encoding/json's error, as v3's did.
func TestEnqueueUnencodable(t *testing.T) {
	c, _, out := newTestClient(t, analyticstest.New(), Config{})
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E", Properties: Properties{"c": make(chan int)}}))
	require.NoError(t, c.Close())
	_, failed := out.counts()
	require.Equal(t, 1, failed, "Failure callbacks")
	var je *json.UnsupportedTypeError
	assert.ErrorAs(t, out.failures[0], &je, "%T %v", out.failures[0], out.failures[0])
}

func TestErrorValuesAreTheRoots(t *testing.T) {
	assert.Equal(t, root.ErrClosed, ErrClosed)
	assert.Equal(t, root.ErrQueueFull, ErrTooManyRequests)
	assert.Equal(t, root.ErrMessageTooLarge, ErrMessageTooBig)
}

func TestCallback(t *testing.T) {
	api := analyticstest.New().Rule(func(r analyticstest.Request) analyticstest.Answer {
		if r.Events[0]["type"] == "identify" {
			return analyticstest.Status(400)
		}
		return analyticstest.Answer{Default: true}
	})
	c, _, out := newTestClient(t, api, Config{BatchSize: 1})
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "ok"}))
	require.NoError(t, c.Enqueue(&Identify{UserId: "u"}))
	require.NoError(t, c.Close())

	out.mu.Lock()
	defer out.mu.Unlock()
	require.Len(t, out.successes, 1)
	tr, ok := out.successes[0].(Track)
	require.True(t, ok, "Success gets the message value: %T", out.successes[0])
	assert.Equal(t, "ok", tr.Event)
	assert.NotEmpty(t, tr.MessageId)
	assert.False(t, tr.Timestamp.IsZero())
	require.Len(t, out.failures, 1)
	assert.EqualError(t, out.failures[0], "400 400 Bad Request", "v3's status error")
	var be *root.BatchError
	require.ErrorAs(t, out.failures[0], &be)
	assert.ErrorIs(t, be, root.ErrFatalStatus)
}

// Transport carries the requests, under the SDK's redirect rule: a 302 is
// not followed into a GET and counted as success, as v3 did.
func TestTransportAndRedirects(t *testing.T) {
	api := analyticstest.New().Script(analyticstest.Answer{Status: http.StatusFound, Header: http.Header{"Location": {"/elsewhere"}}})
	c, _, out := newTestClient(t, api, Config{Endpoint: "https://tracking.test"})
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	require.NoError(t, c.Close())
	reqs := api.Requests()
	require.Len(t, reqs, 1, "the 302 was not followed")
	assert.Equal(t, "/v1/batch", reqs[0].Path)
	assert.Empty(t, reqs[0].Header.Get("Content-Encoding"), "plain JSON, as v3 sent")
	user, pass, _ := (&http.Request{Header: reqs[0].Header}).BasicAuth()
	assert.Equal(t, testWriteKey, user)
	assert.Empty(t, pass)
	out.mu.Lock()
	defer out.mu.Unlock()
	require.Len(t, out.failures, 1)
	assert.EqualError(t, out.failures[0], "302 302 Found", "v3's status error")
	assert.ErrorIs(t, out.failures[0], root.ErrRedirect)
}

func TestNewWithConfigDefaults(t *testing.T) {
	api := analyticstest.New()
	c, _, _ := newTestClient(t, api, Config{})
	for range DefaultBatchSize + 1 {
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	}
	require.NoError(t, c.Close())
	var sizes []int
	for _, r := range api.Requests() {
		sizes = append(sizes, len(r.Events))
	}
	assert.ElementsMatch(t, []int{DefaultBatchSize, 1}, sizes, "a batch is cut at DefaultBatchSize")
}

// A BatchSize over Segment's 2,500 events a batch request (past which it
// answers 200 but rejects the events: segment-docs, HTTP API source, PR
// #7023) is taken as 2,500: with small events, 500,000 bytes would hold
// more.
func TestBatchSizeOverSegmentsLimit(t *testing.T) {
	const segmentBatchEvents, events = 2_500, 6_000
	api := analyticstest.New()
	c, _, out := newTestClient(t, api, Config{BatchSize: 5_000})
	for i := range events {
		require.NoError(t, c.Enqueue(Track{MessageId: fmt.Sprint(i), UserId: "u", Event: "E"}))
	}
	require.NoError(t, c.Close())
	largest := 0
	for i, r := range api.Requests() {
		largest = max(largest, len(r.Events))
		assert.LessOrEqual(t, len(r.Events), segmentBatchEvents, "events of request %d", i)
		assert.Zero(t, r.Rejected, "events of request %d the API rejected", i)
	}
	assert.Equal(t, segmentBatchEvents, largest, "events of the largest request")
	assert.Len(t, api.Delivered(), events, "events delivered")
	ok, failed := out.counts()
	assert.Equal(t, events, ok, "Success callbacks")
	assert.Zero(t, failed, "Failure callbacks")
}

// Interval 0 means DefaultInterval: queued messages go out that long after
// the client starts, without Close.
func TestNewWithConfigDefaultInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New()
		c, _, _ := newTestClient(t, api, Config{})
		defer c.Close()
		start := time.Now()
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		time.Sleep(DefaultInterval - time.Nanosecond)
		synctest.Wait()
		assert.Empty(t, api.Requests(), "sent before DefaultInterval")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Len(t, api.Requests(), 1, "sent at DefaultInterval, %v after the start", time.Since(start))
	})
}

func TestConfigError(t *testing.T) {
	tests := []struct {
		name string
		key  string
		cfg  Config
		want ConfigError
		text string
	}{
		{"negative interval", "k", Config{Interval: -time.Second},
			ConfigError{Field: "Interval", Value: -time.Second, Reason: "must be positive, got -1s"},
			"analytics.NewWithConfig: must be positive, got -1s (analytics.Config.Interval: -1000000000)"},
		{"negative batch size", "k", Config{BatchSize: -1},
			ConfigError{Field: "BatchSize", Value: -1, Reason: "must be at least 1, got -1"},
			"analytics.NewWithConfig: must be at least 1, got -1 (analytics.Config.BatchSize: -1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewWithConfig(tt.key, tt.cfg)
			assert.Nil(t, c, "the Client of a failed NewWithConfig is nil")
			ce, ok := err.(ConfigError)
			require.True(t, ok, "want a ConfigError value, got %T %v", err, err)
			assert.Equal(t, tt.want, ce)
			if tt.text != "" {
				assert.EqualError(t, err, tt.text)
			}
		})
	}
}

func TestNew(t *testing.T) {
	c := New(testWriteKey)
	require.NotNil(t, c)
	// Close with nothing queued sends nothing: the default endpoint is not
	// reached.
	assert.NoError(t, c.Close())
}

func TestValidateFields(t *testing.T) {
	tests := []struct {
		fields map[string]any
		want   error
	}{
		{map[string]any{"type": "track", "userId": "u", "event": "E"}, nil},
		{map[string]any{"type": "track", "userId": "u"}, FieldError{Type: "analytics.Track", Name: "Event", Value: ""}},
		{map[string]any{"type": "identify", "anonymousId": "a"}, nil},
		{map[string]any{"type": "page"}, FieldError{Type: "analytics.Page", Name: "UserId", Value: ""}},
		{map[string]any{"type": "screen", "userId": "u"}, nil},
		{map[string]any{"type": "group", "userId": "u"}, FieldError{Type: "analytics.Group", Name: "GroupId", Value: ""}},
		{map[string]any{"type": "alias", "userId": "u", "previousId": "p"}, nil},
		{map[string]any{"type": "alias", "userId": "u", "previousId": 7}, FieldError{Type: "analytics.Alias", Name: "PreviousId", Value: ""}},
		{map[string]any{"type": "Track"}, FieldError{Type: "analytics.Event", Name: "Type", Value: "Track"}},
		{map[string]any{}, FieldError{Type: "analytics.Event", Name: "Type", Value: nil}},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, ValidateFields(fieldMap(tt.fields)), "%v", tt.fields)
	}
}

type fieldMap map[string]any

func (m fieldMap) GetField(k string) (any, bool) { v, ok := m[k]; return v, ok }

func TestFieldErrorIsInvalidMessage(t *testing.T) {
	var err error = FieldError{Type: "analytics.Track", Name: "Event", Value: ""}
	assert.True(t, errors.Is(err, root.ErrInvalidMessage))
	assert.False(t, errors.Is(err, root.ErrClosed))
}

// Validate returns v3's FieldError value, for code that checks a message
// itself (a test double, a pre-check) and asserts err.(analytics.FieldError).
func TestValidateReturnsFieldError(t *testing.T) {
	tests := []struct {
		msg  Message
		want error
	}{
		{Track{UserId: "u"}, FieldError{Type: "analytics.Track", Name: "Event", Value: ""}},
		{Track{UserId: "u", Event: "E"}, nil},
		{Identify{}, FieldError{Type: "analytics.Identify", Name: "UserId", Value: ""}},
		{Page{AnonymousId: "a"}, nil},
		{Screen{}, FieldError{Type: "analytics.Screen", Name: "UserId", Value: ""}},
		{Group{UserId: "u"}, FieldError{Type: "analytics.Group", Name: "GroupId", Value: ""}},
		{Alias{UserId: "u"}, FieldError{Type: "analytics.Alias", Name: "PreviousId", Value: ""}},
		{&Alias{UserId: "u", PreviousId: "p"}, nil},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.msg.Validate(), "%#v", tt.msg)
	}
}

// The root package's messages are accepted as they are, for code that
// mixes the two packages while it migrates.
func TestEnqueueRootMessages(t *testing.T) {
	api := analyticstest.New()
	c, _, out := newTestClient(t, api, Config{})
	require.NoError(t, c.Enqueue(root.Track{UserId: "u", Event: "root"}))
	require.NoError(t, c.Enqueue(&root.Identify{UserId: "u"}))
	assert.Equal(t, FieldError{Type: "analytics.Track", Name: "Event", Value: ""}, c.Enqueue(root.Track{UserId: "u"}))
	err := c.Enqueue((*root.Track)(nil))
	fe, ok := err.(FieldError)
	require.True(t, ok, "%T %v", err, err)
	assert.Equal(t, FieldError{Type: "*analytics.Track", Name: "(nil)"}, fe)
	require.NoError(t, c.Close())
	assert.Len(t, api.Delivered(), 2)
	out.mu.Lock()
	defer out.mu.Unlock()
	for _, m := range out.successes {
		switch m.(type) {
		case Track, Identify: // a Callback gets this package's types
		default:
			t.Errorf("Success got a %T", m)
		}
	}
}
