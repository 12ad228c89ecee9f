package analytics

// WithV3Wire: the body in the shape segmentio/analytics-go v3 sent.

import (
	"encoding/json"
	"regexp"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// v3Body is a body as v3 wrote it, members decoded as they came.
type v3Body struct {
	MessageID string                       `json:"messageId"`
	SentAt    string                       `json:"sentAt"`
	Context   map[string]any               `json:"context"`
	Batch     []map[string]json.RawMessage `json:"batch"`
}

func decodeV3Body(t *testing.T, r analyticstest.Request) v3Body {
	t.Helper()
	var b v3Body
	require.NoError(t, json.Unmarshal(r.Body, &b), "%s", r.Body)
	return b
}

func TestV3WireShape(t *testing.T) {
	zone := time.FixedZone("CET", 3600)
	api := newAPI()
	e := newEnv(t, api, WithV3Wire(true), WithGzip(false), WithFlushAt(4))
	e.enqueue(
		Track{MessageId: "m0", UserId: "u", Event: "E", Timestamp: time.Date(2009, 11, 10, 23, 0, 0, 0, time.UTC)},
		Track{MessageId: "m1", UserId: "u", Event: "E", Timestamp: time.Date(2009, 11, 10, 23, 0, 0, 500_000_000, zone)},
		Identify{MessageId: "m2", UserId: "u", Context: &Context{Locale: "fr", Extra: map[string]any{"whatever": "here"}}},
		Track{MessageId: "m3", UserId: "u", Event: "E"},
	)
	e.close()
	reqs := api.Requests()
	require.Len(t, reqs, 1)
	b := decodeV3Body(t, reqs[0])
	assert.Equal(t, map[string]any{"library": map[string]any{"name": "analytics-go", "version": "3.0.0"}}, b.Context,
		"the library is on the batch, and v3's")
	assert.Regexp(t, uuidV4, b.MessageID, "the batch has a messageId")
	_, err := time.Parse(time.RFC3339Nano, b.SentAt)
	assert.NoError(t, err, "sentAt %q", b.SentAt)
	require.Len(t, b.Batch, 4)
	ts := func(i int) string { return string(b.Batch[i]["timestamp"]) }
	assert.Equal(t, `"2009-11-10T23:00:00Z"`, ts(0), "the caller's time, as encoding/json writes it")
	assert.Equal(t, `"2009-11-10T23:00:00.5+01:00"`, ts(1), "in its own zone, with the digits it has")
	var def time.Time
	require.NoError(t, json.Unmarshal(b.Batch[3]["timestamp"], &def), "the default timestamp is a JSON time")
	assert.NotContains(t, b.Batch[0], "context", "no context when the message has none")
	assert.NotContains(t, b.Batch[3], "context", "no context when the message has none")
	assert.JSONEq(t, `{"locale":"fr","whatever":"here"}`, string(b.Batch[2]["context"]), "the message's own context, without library")
}

// The batch keeps its messageId on each attempt, and each batch has its
// own.
func TestV3WireBatchMessageID(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Script(analyticstest.Status(503), analyticstest.Status(200), analyticstest.Status(200))
		e := newEnv(t, api, WithV3Wire(true), WithFlushAt(1), WithMaxConcurrentRequests(1), withExactBackoff())
		e.enqueue(tracks("a", 1)...)
		e.flush()
		e.enqueue(tracks("b", 1)...)
		e.close()
		reqs := api.Requests()
		require.Len(t, reqs, 3)
		ids := make([]string, len(reqs))
		for i, r := range reqs {
			ids[i] = decodeV3Body(t, r).MessageID
			assert.Regexp(t, uuidV4, ids[i], "request %d", i)
		}
		assert.Equal(t, ids[0], ids[1], "the retry sends the batch's messageId again")
		assert.NotEqual(t, ids[1], ids[2], "another batch, another messageId")
	})
}

// Off, the body is the SDK's own: the library in every message, times in
// UTC with milliseconds, no batch messageId.
func TestV3WireOffByDefault(t *testing.T) {
	api := newAPI()
	e := newEnv(t, api)
	e.enqueue(Track{MessageId: "m0", UserId: "u", Event: "E", Timestamp: time.Date(2009, 11, 10, 23, 0, 0, 0, time.UTC)})
	e.close()
	reqs := api.Requests()
	require.Len(t, reqs, 1)
	b := decodeV3Body(t, reqs[0])
	assert.Empty(t, b.MessageID)
	assert.Equal(t, `"2009-11-10T23:00:00.000Z"`, string(b.Batch[0]["timestamp"]))
	assert.Contains(t, string(b.Batch[0]["context"]), `"library"`)
	assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`, b.SentAt)
}

// A message's context on the v3 wire: v3 wrote the caller's Context as it
// was (an empty one as {}, a Library the caller set included, an Extra
// "library" when the field is unset), with no library of the SDK's.
func TestV3WireMessageContext(t *testing.T) {
	tests := []struct {
		name string
		ctx  *Context
		want string
	}{
		{"empty", &Context{}, `{}`},
		{"the caller's library", &Context{Library: LibraryInfo{Name: "mine"}}, `{"library":{"name":"mine"}}`},
		{"library in Extra", &Context{Extra: map[string]any{"library": "x", "k": 1}}, `{"k":1,"library":"x"}`},
		{"the field wins over Extra", &Context{Library: LibraryInfo{Version: "2"}, Extra: map[string]any{"library": "x"}}, `{"library":{"version":"2"}}`},
	}
	for _, tt := range tests {
		e := getEncoder()
		e.v3Wire = true
		_, err := e.encodeMessage(Track{MessageId: "m", UserId: "u", Event: "E", Context: tt.ctx}, fixedTime)
		require.NoError(t, err, tt.name)
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(e.buf, &got), tt.name)
		putEncoder(e)
		assert.JSONEq(t, tt.want, string(got["context"]), tt.name)
		assert.Equal(t, `"2026-11-29T12:34:56.789123456Z"`, string(got["timestamp"]), tt.name)
	}
}
