package analytics

// Callback.Failure gets v3's errors, so that v3 code's type assertions and
// comparisons hold; FailureDetail gets the root's *BatchError too.

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	root "github.com/dualpath/analytics-go"
)

var errTest = errors.New("test error")

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// answering is a transport that answers status with body.
func answering(status int, body io.Reader) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{},
			Body: io.NopCloser(body), Request: r}, nil
	})
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

// failOnce sends one event through transport, closes, and returns what
// Failure and FailureDetail got.
func failOnce(t *testing.T, transport http.RoundTripper) (*root.BatchError, error) {
	t.Helper()
	var err error
	var batch *root.BatchError
	synctest.Test(t, func(t *testing.T) {
		out := &details{}
		c, nerr := NewWithConfig(testWriteKey, Config{Transport: transport, Callback: out, Logger: &lines{}})
		require.NoError(t, nerr)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		require.Len(t, out.failures, 1)
		err, batch = out.failures[0], out.all()[0]
	})
	return batch, err
}

func TestFailureGetsTheURLErrorOfATransportFailure(t *testing.T) {
	batch, err := failOnce(t, roundTripperFunc(func(*http.Request) (*http.Response, error) { return nil, errTest }))
	ue, ok := err.(*url.Error)
	require.True(t, ok, "want a *url.Error, got %T %v", err, err)
	assert.Same(t, errTest, ue.Err, "v3 code compares the *url.Error's Err")
	require.NotNil(t, batch)
	var te *root.TransportError
	require.ErrorAs(t, batch, &te)
	assert.Same(t, ue, te.Err, "the root's TransportError holds the same *url.Error")
}

func TestFailureGetsTheBodyReadError(t *testing.T) {
	batch, err := failOnce(t, answering(http.StatusBadRequest, errReader{errTest}))
	assert.Same(t, errTest, err, "v3 code compares the body's error")
	require.NotNil(t, batch)
	var he *root.HTTPError
	require.ErrorAs(t, batch, &he)
	assert.Equal(t, 400, he.StatusCode)
}

func TestFailureGetsV3sStatusError(t *testing.T) {
	batch, err := failOnce(t, answering(http.StatusBadRequest, strings.NewReader("nope")))
	assert.EqualError(t, err, "400 400 Bad Request", "v3's text")
	var be *root.BatchError
	require.ErrorAs(t, err, &be, "the root's error through Unwrap")
	assert.Same(t, batch, be)
	assert.ErrorIs(t, err, root.ErrFatalStatus)
}

// TestFailureGetsV3sStatusErrorForAnUnknownStatus: a status net/http has
// no text for is named as a net/http server names it in its status line.
func TestFailureGetsV3sStatusErrorForAnUnknownStatus(t *testing.T) {
	_, err := failOnce(t, answering(499, strings.NewReader("nope")))
	assert.EqualError(t, err, "499 499 status code 499", "v3's text for a status without a name")
}

// TestFailureWithoutDetail: a Callback without FailureDetail gets Failure,
// with v3's error.
func TestFailureWithoutDetail(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		out := &outcomes{}
		c, err := NewWithConfig(testWriteKey, Config{Transport: answering(503, strings.NewReader("")), Callback: out, Logger: &lines{}})
		require.NoError(t, err)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		require.Len(t, out.failures, 1)
		assert.EqualError(t, out.failures[0], "503 503 Service Unavailable")
	})
}

// TestUnencodableDefaultContextFailsEachEvent: as v3's, Enqueue accepts
// the event and Failure gets encoding/json's *json.MarshalerError, from a
// goroutine of the client's, so that a v3 program that waits for the
// callback right after Enqueue (v3's own cmd/cli does, on a channel) goes
// on.
func TestUnencodableDefaultContextFailsEachEvent(t *testing.T) {
	failed := make(chan error) // unbuffered: Failure must not run inside Enqueue
	cb := callbackFuncs{failure: func(_ Message, err error) { failed <- err }}
	c, err := NewWithConfig(testWriteKey, Config{
		Transport:      answering(200, strings.NewReader("")),
		Callback:       cb,
		Logger:         &lines{},
		DefaultContext: &Context{Extra: map[string]any{"invalid": func() {}}},
	})
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	got := <-failed
	var me *json.MarshalerError
	assert.ErrorAs(t, got, &me, "%T %v", got, got)
	require.NoError(t, c.Close())
}

// callbackFuncs is a Callback of two functions, as v3's tests write one.
type callbackFuncs struct {
	success func(Message)
	failure func(Message, error)
}

func (c callbackFuncs) Success(m Message) {
	if c.success != nil {
		c.success(m)
	}
}

func (c callbackFuncs) Failure(m Message, err error) {
	if c.failure != nil {
		c.failure(m, err)
	}
}
