package analytics

// The wire is v3's: plain JSON, context.library on the batch alone, times
// as encoding/json writes them, a messageId on the batch.

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// v3Batch is the body as a v3 user's test double decodes it.
type v3Batch struct {
	MessageId string    `json:"messageId"`
	SentAt    time.Time `json:"sentAt"`
	Batch     []Track   `json:"batch"`
	Context   *Context  `json:"context"`
}

// A test double written for v3, an httptest server that decodes the body
// as plain JSON into v3's types and compares the messages with
// analytics.Track values (messageId aside), works unchanged.
func TestWireDecodesAsV3s(t *testing.T) {
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
	}))
	defer srv.Close()
	c, err := NewWithConfig(testWriteKey, Config{Endpoint: srv.URL, BatchSize: 2, Logger: &lines{}})
	require.NoError(t, err)
	at := time.Date(2009, time.November, 10, 23, 0, 0, 0, time.UTC)
	props := Properties{"application": "Segment Desktop", "version": "1.1.0"}
	require.NoError(t, c.Enqueue(Track{UserId: "123456", Event: "Download", Timestamp: at, Properties: props}))
	require.NoError(t, c.Enqueue(&Track{UserId: "123456", Event: "Download", Context: &Context{Extra: map[string]any{"whatever": "here"}}}))
	require.NoError(t, c.Close())

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, bodies, 1)
	var b v3Batch
	require.NoError(t, json.Unmarshal(bodies[0], &b), "plain JSON: %q", bodies[0])
	assert.Equal(t, &Context{Library: LibraryInfo{Name: "analytics-go", Version: "3.0.0"}}, b.Context, "the library is the batch's, v3's own")
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`, b.MessageId, "the batch's messageId")
	assert.False(t, b.SentAt.IsZero())
	require.Len(t, b.Batch, 2)
	for i := range b.Batch {
		assert.NotEmpty(t, b.Batch[i].MessageId)
		b.Batch[i].MessageId = ""
	}
	assert.Equal(t, Track{Type: "track", UserId: "123456", Event: "Download", Timestamp: at, Properties: props}, b.Batch[0])
	assert.Equal(t, &Context{Extra: map[string]any{"whatever": "here"}}, b.Batch[1].Context, "the message's own context, no library")
	assert.False(t, b.Batch[1].Timestamp.IsZero(), "the default timestamp")
	assert.Contains(t, string(bodies[0]), `"timestamp":"2009-11-10T23:00:00Z"`, "the caller's time as encoding/json writes it")
}

// Times are written as encoding/json writes a time.Time: in the time's
// zone, with as many fraction digits as it has.
func TestWireTimestamps(t *testing.T) {
	api := analyticstest.New()
	c, _, _ := newTestClient(t, api, Config{BatchSize: 3})
	zone := time.FixedZone("", -7*3600)
	for _, at := range []time.Time{
		time.Date(2015, time.July, 10, 23, 0, 0, 0, time.UTC),
		time.Date(2015, time.July, 10, 23, 0, 0, 120_000_000, zone),
		time.Date(2015, time.July, 10, 23, 0, 0, 123_456_789, time.UTC),
	} {
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E", Timestamp: at}))
	}
	require.NoError(t, c.Close())
	reqs := api.Requests()
	require.Len(t, reqs, 1)
	var got []string
	for _, e := range reqs[0].Events {
		got = append(got, e["timestamp"].(string))
	}
	assert.Equal(t, []string{"2015-07-10T23:00:00Z", "2015-07-10T23:00:00.12-07:00", "2015-07-10T23:00:00.123456789Z"}, got)
	_, err := time.Parse(time.RFC3339Nano, reqs[0].SentAt)
	assert.NoError(t, err)
}

// Config.Gzip turns gzip on; by default bodies are plain JSON.
func TestWireGzip(t *testing.T) {
	for _, on := range []bool{false, true} {
		api := analyticstest.New()
		c, _, out := newTestClient(t, api, Config{Gzip: on})
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		reqs := api.Requests()
		require.Len(t, reqs, 1)
		want := ""
		if on {
			want = "gzip"
		}
		assert.Equal(t, want, reqs[0].Header.Get("Content-Encoding"), "Gzip %v", on)
		ok, _ := out.counts()
		assert.Equal(t, 1, ok, "Gzip %v", on)
	}
}
