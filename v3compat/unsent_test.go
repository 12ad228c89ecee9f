package analytics

// Every Config v3 accepted gives a working client: one v3 could not send
// with fails each event at send time, as v3's did, and NewWithConfig
// refuses only what v3 refused.

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// TestEmptyWriteKeyGivesAClientWhoseEventsFail: v3 code written as
// `client, _ := analytics.NewWithConfig(key, cfg)` does not panic on an
// empty key; each event fails with ErrEmptyWriteKey, logged once.
func TestEmptyWriteKeyGivesAClientWhoseEventsFail(t *testing.T) {
	log, out := &lines{}, &outcomes{}
	api := analyticstest.New()
	c, err := NewWithConfig("", Config{Transport: api, Logger: log, Callback: out})
	require.NoError(t, err)
	require.NotNil(t, c)
	for range 3 {
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	}
	assert.Equal(t, FieldError{Type: "analytics.Track", Name: "Event", Value: ""}, c.Enqueue(Track{UserId: "u"}),
		"a message is checked first, as by a working client")
	require.NoError(t, c.Close())
	assert.Equal(t, ErrClosed, c.Close())
	assert.Equal(t, ErrClosed, c.Enqueue(Track{UserId: "u", Event: "E"}))

	assert.Empty(t, api.Requests(), "nothing is sent")
	ok, failed := out.counts()
	assert.Zero(t, ok)
	require.Equal(t, 3, failed)
	for _, e := range out.failures {
		assert.Same(t, ErrEmptyWriteKey, e)
	}
	logged := log.all()
	require.Len(t, logged, 1, "logged once: %q", logged)
	assert.Contains(t, logged[0], "write key is empty")
}

func TestNewWithEmptyWriteKey(t *testing.T) {
	c := New("")
	require.NotNil(t, c, "New always returns a Client, as in v3")
	assert.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}), "as in v3, the event fails later")
	assert.NoError(t, c.Close())
}

// TestEndpointsV3AcceptedFailAtSendTime: an Endpoint v3 accepted and
// could not send to gives a client whose events fail with the *url.Error
// v3's got.
func TestEndpointsV3AcceptedFailAtSendTime(t *testing.T) {
	tests := []struct {
		endpoint string
		text     string
	}{
		{"://localhost:80", `parse "://localhost:80/v1/batch": missing protocol scheme`},
		{"ftp://api.example.com", `Post "ftp://api.example.com/v1/batch": unsupported protocol scheme "ftp"`},
		{"localhost:8080", `Post "localhost:8080/v1/batch": unsupported protocol scheme "localhost"`},
		{"http://", `Post "http:///v1/batch": http: no Host in request URL`},
		{"ftp://user:hunter2@example.com", `Post "ftp://user:xxxxx@example.com/v1/batch": unsupported protocol scheme "ftp"`},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			log, out := &lines{}, &outcomes{}
			c, err := NewWithConfig(testWriteKey, Config{Endpoint: tt.endpoint, Logger: log, Callback: out})
			require.NoError(t, err)
			require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
			require.NoError(t, c.Close())
			_, failed := out.counts()
			require.Equal(t, 1, failed)
			var ue *url.Error
			require.ErrorAs(t, out.failures[0], &ue, "%T", out.failures[0])
			assert.Same(t, ue, out.failures[0], "the *url.Error itself, as v3 code asserts it")
			assert.EqualError(t, ue, tt.text)
			logged := log.all()
			require.Len(t, logged, 1, "logged once: %q", logged)
			assert.NotContains(t, strings.Join(logged, "\n"), "hunter2")
		})
	}
}

// TestConfigsV3AcceptedWork: a BatchSize or an Interval over the root's
// bounds, which v3 accepted, is taken as the bound.
func TestConfigsV3AcceptedWork(t *testing.T) {
	api := analyticstest.New()
	c, _, out := newTestClient(t, api, Config{BatchSize: 20_000, Interval: 30 * 24 * time.Hour})
	require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
	require.NoError(t, c.Close())
	ok, _ := out.counts()
	assert.Equal(t, 1, ok)
}

// TestNewWithConfigRefusesWhatV3Refused: a negative Interval or BatchSize
// is NewWithConfig's error, even with an empty write key.
func TestNewWithConfigRefusesWhatV3Refused(t *testing.T) {
	for _, cfg := range []Config{{Interval: -time.Second}, {BatchSize: -1}} {
		for _, key := range []string{"k", ""} {
			c, err := NewWithConfig(key, cfg)
			assert.Nil(t, c)
			_, ok := err.(ConfigError)
			assert.True(t, ok, "key %q, %+v: want a ConfigError, got %T %v", key, cfg, err, err)
		}
	}
}
