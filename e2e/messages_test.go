package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

func TestEveryMessageTypeWithItsFields(t *testing.T) {
	t.Parallel()
	api := analyticstest.New()
	url := startMock(t, api)
	events := []event{
		{"type": "track", "userId": "u1", "event": "Signed Up", "properties": map[string]any{"plan": "pro"}, "messageId": "t1"},
		{"type": "identify", "anonymousId": "a1", "traits": map[string]any{"email": "a@example.com"}, "messageId": "i1"},
		{"type": "page", "userId": "u1", "name": "Home", "category": "Docs", "properties": map[string]any{"path": "/"}, "messageId": "p1"},
		{"type": "screen", "userId": "u1", "name": "Main", "category": "App", "messageId": "s1"},
		{"type": "group", "userId": "u1", "groupId": "g1", "traits": map[string]any{"name": "Acme"}, "messageId": "g1"},
		{"type": "alias", "userId": "u1", "previousId": "a1", "messageId": "al1"},
	}
	r := runCLI(t, url, fast(), events...)
	r.expect(t, true, 6, 0)
	require.Equal(t, 1, r.SentBatches)
	got := map[string]map[string]any{}
	for _, e := range requests(t, api, 1)[0].Events {
		id, ok := e["messageId"].(string)
		require.True(t, ok, "an event without a messageId: %v", e)
		got[id] = e
	}
	for _, want := range events {
		id := want["messageId"].(string)
		e := got[id]
		require.NotNil(t, e, "event %s not received", id)
		for k, v := range want {
			assert.Equal(t, v, e[k], "%s: %s", id, k)
		}
		lib, _ := e["context"].(map[string]any)["library"].(map[string]any)
		assert.Equal(t, "analytics-go", lib["name"], "%s: context.library.name", id)
		assert.NotNil(t, e["timestamp"], "%s: no timestamp", id)
	}
}

func TestRequiredFieldsAreEnforced(t *testing.T) {
	t.Parallel()
	missing := []struct {
		e     event
		field string
	}{
		{event{"type": "track", "userId": "u"}, "Event"},
		{event{"type": "track", "event": "E"}, "UserId"},
		{event{"type": "identify"}, "UserId"},
		{event{"type": "page", "name": "Home"}, "UserId"},
		{event{"type": "screen"}, "UserId"},
		{event{"type": "group", "userId": "u"}, "GroupId"},
		{event{"type": "alias", "userId": "u"}, "PreviousId"},
		{event{"type": "alias", "previousId": "p"}, "UserId"},
	}
	api := analyticstest.New()
	url := startMock(t, api)
	events := tracks("ok", 2)
	for _, m := range missing {
		events = append(events, m.e)
	}
	r := runCLI(t, url, fast(), events...)
	r.expect(t, false, 2, len(missing))
	require.Equal(t, 1, r.code, "exit code")
	for _, m := range missing {
		r.expectError(t, m.field)
	}
	// Only the valid events were sent.
	assert.Equal(t, []string{"ok-0", "ok-1"}, requests(t, api, 1)[0].MessageIDs(), "only the two valid events are sent")
}

func TestMessageIDAndTimestampKept(t *testing.T) {
	t.Parallel()
	api := analyticstest.New()
	url := startMock(t, api)
	r := runCLI(t, url, fast(),
		event{"type": "track", "userId": "u", "event": "E", "messageId": "given-id", "timestamp": "2024-05-06T07:08:09.123Z"},
		event{"type": "track", "userId": "u", "event": "E"})
	r.expect(t, true, 2, 0)
	evs := requests(t, api, 1)[0].Events
	require.Len(t, evs, 2)
	assert.Equal(t, "given-id", evs[0]["messageId"], "the given messageId is kept")
	assert.Equal(t, "2024-05-06T07:08:09.123Z", evs[0]["timestamp"], "the given timestamp is kept")
	id, _ := evs[1]["messageId"].(string)
	assert.Len(t, id, 36, "a filled messageId is a UUID")
	assert.NotNil(t, evs[1]["timestamp"], "the timestamp is filled")
}

func TestAuthContentTypeAndGzip(t *testing.T) {
	t.Parallel()
	for _, gzip := range []bool{true, false} {
		t.Run(fmt.Sprintf("gzip=%v", gzip), func(t *testing.T) {
			t.Parallel()
			api := analyticstest.New()
			url := startMock(t, api)
			runCLI(t, url, fast("gzip", gzip), tracks("m", 3)...).expect(t, true, 3, 0)
			req := requests(t, api, 1)[0]
			h := req.Header
			assert.Equal(t, "Basic "+base64.StdEncoding.EncodeToString([]byte(writeKey+":")), h.Get("Authorization"))
			assert.Equal(t, "application/json", h.Get("Content-Type"))
			assert.True(t, strings.HasPrefix(h.Get("User-Agent"), "analytics-go/"), "User-Agent %q", h.Get("User-Agent"))
			assert.Equal(t, gzip, h.Get("Content-Encoding") == "gzip", "Content-Encoding %q with gzip %v", h.Get("Content-Encoding"), gzip)
			assert.NoError(t, req.Err, "body not decoded")
			assert.Len(t, req.Events, 3, "events decoded from the body")
		})
	}
}

func TestInvalidAndOversizedEventsRejectedOthersDelivered(t *testing.T) {
	t.Parallel()
	api := analyticstest.New()
	url := startMock(t, api)
	events := append(tracks("ok", 3),
		event{"type": "track", "userId": "u", "event": "Big", "properties": map[string]any{"pad": strings.Repeat("x", 33_000)}},
		event{"type": "track", "userId": "u"},
	)
	events = append(events, tracks("ok2", 2)...)
	r := runCLI(t, url, fast(), events...)
	r.expect(t, false, 5, 2)
	r.expectError(t, "too large")
	r.expectError(t, "Event")
	assert.Len(t, api.Delivered(), 5, "events delivered to the server")
}

func TestNoBodyOverTheBatchLimit(t *testing.T) {
	t.Parallel()
	api := analyticstest.New()
	url := startMock(t, api)
	pad := strings.Repeat("z", 25_000)
	var events []event
	for i := range 80 {
		events = append(events, event{"type": "track", "userId": "u", "event": "E", "messageId": fmt.Sprint(i), "properties": map[string]any{"pad": pad}})
	}
	runCLI(t, url, fast("gzip", false), events...).expect(t, true, 80, 0)
	reqs := api.Requests()
	require.GreaterOrEqual(t, len(reqs), 5, "requests for 2 MB of events")
	for i, r := range reqs {
		assert.LessOrEqual(t, len(r.Body), 500_000, "the body of request %d", i+1)
	}
	assert.Len(t, api.Delivered(), 80, "distinct events delivered")
}

func TestBadInputExitsTwoAndSendsNothing(t *testing.T) {
	t.Parallel()
	api := analyticstest.New()
	url := startMock(t, api)
	cases := map[string]string{
		"not JSON":            `{"writeKey": `,
		"unknown event type":  `{"writeKey":"k","apiHost":"` + url + `","sequences":[{"events":[{"type":"purchase","userId":"u"}]}]}`,
		"wrong value type":    `{"writeKey":"k","apiHost":"` + url + `","sequences":[{"events":[{"type":"track","userId":5,"event":"E"}]}]}`,
		"wrong config type":   `{"writeKey":"k","apiHost":"` + url + `","sequences":[],"config":{"flushAt":"ten"}}`,
		"invalid config":      `{"writeKey":"k","apiHost":"` + url + `","sequences":[],"config":{"maxRetries":-1}}`,
		"no write key":        `{"apiHost":"` + url + `","sequences":[]}`,
		"negative delay":      `{"writeKey":"k","apiHost":"` + url + `","sequences":[{"delayMs":-5,"events":[]}]}`,
		"properties a string": `{"writeKey":"k","apiHost":"` + url + `","sequences":[{"events":[{"type":"track","userId":"u","event":"E","properties":"x"}]}]}`,
	}
	for name, in := range cases {
		r := runRaw(t, in)
		assert.Equal(t, 2, r.code, "%s: exit code", name)
		assert.NotEmpty(t, strings.TrimSpace(r.stderr), "%s: no reason on stderr", name)
		// The same reason, as the error of a run that sent nothing.
		assert.False(t, r.Success, name)
		assert.Zero(t, r.SentBatches, name)
		if assert.NotNil(t, r.Error, "%s: no error on stdout", name) {
			assert.True(t, strings.HasPrefix(*r.Error, "bad input: "), "%s: error %q", name, *r.Error)
			assert.Contains(t, r.stderr, *r.Error, "%s: stderr and stdout give different reasons", name)
			assert.Equal(t, []string{*r.Error}, r.Errors, name)
		}
	}
	assert.Equal(t, 0, len(api.Requests()), "requests sent for bad input")
}

func TestSequencesWithDelays(t *testing.T) {
	t.Parallel()
	api := analyticstest.New()
	url := startMock(t, api)
	launched := time.Now() // before the CLI starts, on the mock's clock
	r := runInput(t, input{WriteKey: writeKey, APIHost: url, Config: fast("flushAt", 2),
		Sequences: []sequence{{Events: tracks("a", 2)}, {DelayMs: 300, Events: tracks("b", 2)}}})
	r.expect(t, true, 4, 0)
	reqs := requests(t, api, 2)
	// Each sequence is a batch of its own (flushAt 2); under load they may
	// arrive in either order.
	first, second := batchOf(t, reqs, "a-0", "a-1"), batchOf(t, reqs, "b-0", "b-1")
	// The client's own record: the SDK stamps an event when it is
	// enqueued, so the second sequence's stamps are 300 ms after the
	// first's, less 1 ms for stamps truncated to the millisecond on a wall
	// clock that NTP may slew. (The gap between the two arrivals is not
	// the wait: the first request may be stamped late, after the client
	// started waiting.)
	enqueued := clientStamp(t, second.Events[0]).Sub(clientStamp(t, first.Events[1]))
	assert.GreaterOrEqual(t, enqueued, 299*time.Millisecond, "the second sequence was enqueued too soon after the first")
	// And on the mock's clock: the CLI started after launched and waited
	// 300 ms before it enqueued the second sequence, whose batch arrived
	// after that.
	assert.GreaterOrEqual(t, second.At.Sub(launched), 300*time.Millisecond, "the second sequence's batch arrived too soon")
}
