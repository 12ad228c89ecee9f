package analytics

import (
	"encoding/json"
	"errors"
	"math"
	"net"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// encodeMessage returns the JSON of m in a slice of its own, with id and ts
// as defaults for an unset MessageId and Timestamp.
func encodeMessage(m Message, id string, ts time.Time) ([]byte, error) {
	if m.id() == "" && id != "" {
		m = m.kept(id, time.Time{})
	}
	e := getEncoder()
	defer putEncoder(e)
	if _, err := e.encodeMessage(m, ts); err != nil {
		return nil, err
	}
	return append([]byte(nil), e.buf...), nil
}

// encodeMessage encodes m into e.buf, with ts as the default for an unset
// Timestamp and, for an unset MessageId, a new UUID v4 (then in e.id):
// the defaults of docs/SPEC.md §2, filled once, at Enqueue. It returns
// whether it generated the id. e.buf holds the JSON, which must be copied
// before e is reused. Enqueue does the same steps on each message's own
// type (enqueuing); this is them through the Message interface, for the
// tests and benchmarks that hold messages of any type.
func (e *encoder) encodeMessage(m Message, ts time.Time) (generated bool, err error) {
	e.reset()
	var id []byte
	if m.id() == "" {
		e.newID()
		id, generated = e.id[:], true
	}
	return generated, e.checkSize(m.encode(e, id, ts))
}

var fixedTime = time.Date(2026, 11, 29, 12, 34, 56, 789_123_456, time.UTC)

// decode encodes m as Enqueue does and decodes the JSON back.
func decode(t *testing.T, m Message) map[string]any {
	t.Helper()
	b, err := encodeMessage(m, "default-id", fixedTime)
	require.NoError(t, err, "encode %#v", m)
	var out map[string]any
	require.NoError(t, json.Unmarshal(b, &out), "encoding of %#v is JSON: %s", m, b)
	return out
}

// assertUUIDv4 checks that id is a random (version 4) UUID of the RFC 4122
// variant, written in the canonical form: lower case, with hyphens.
func assertUUIDv4(t *testing.T, id string) {
	t.Helper()
	u, err := uuid.Parse(id)
	if !assert.NoError(t, err, "messageId %q is a UUID", id) {
		return
	}
	assert.Equal(t, uuid.Version(4), u.Version(), "version of messageId %q", id)
	assert.Equal(t, uuid.RFC4122, u.Variant(), "variant of messageId %q", id)
	assert.Equal(t, u.String(), id, "messageId %q in the canonical form", id)
}

func TestValidationNamesTheField(t *testing.T) {
	tests := []struct {
		msg   Message
		field string
	}{
		{Track{UserId: "u"}, "analytics.Track.Event"},
		{Track{Event: "E"}, "analytics.Track.UserId"},
		{Identify{}, "analytics.Identify.UserId"},
		{Page{Name: "Home"}, "analytics.Page.UserId"},
		{Screen{Name: "Home"}, "analytics.Screen.UserId"},
		{Group{UserId: "u"}, "analytics.Group.GroupId"},
		{Group{GroupId: "g"}, "analytics.Group.UserId"},
		{Alias{PreviousId: "p"}, "analytics.Alias.UserId"},
		{Alias{UserId: "u"}, "analytics.Alias.PreviousId"},
	}
	for _, tt := range tests {
		err := tt.msg.Validate()
		assert.ErrorIs(t, err, ErrInvalidMessage, "%#v: Validate()", tt.msg)
		var fe *FieldError
		if !assert.ErrorAs(t, err, &fe, "%#v: Validate()", tt.msg) {
			continue
		}
		assert.Equal(t, tt.field, fe.Type+"."+fe.Name, "%#v: the field the FieldError names", tt.msg)
		assert.ErrorContains(t, err, tt.field, "%#v: Validate()", tt.msg)
	}
	valid := []Message{
		Track{UserId: "u", Event: "E"}, Track{AnonymousId: "a", Event: "E"},
		Identify{UserId: "u"}, Identify{AnonymousId: "a"},
		Page{UserId: "u"}, Screen{AnonymousId: "a"},
		Group{UserId: "u", GroupId: "g"}, Alias{UserId: "u", PreviousId: "p"},
	}
	for _, m := range valid {
		assert.NoError(t, m.Validate(), "%#v: Validate()", m)
	}
}

func TestSegmentFieldNames(t *testing.T) {
	props := NewProperties().Set("plan", "pro")
	traits := NewTraits().SetEmail("a@b.c")
	integ := NewIntegrations().DisableAll().Enable("Mixpanel")
	tests := []struct {
		msg  Message
		want map[string]any
	}{
		{Track{UserId: "u", AnonymousId: "a", Event: "Signed Up", Properties: props, Integrations: integ},
			map[string]any{"type": "track", "userId": "u", "anonymousId": "a", "event": "Signed Up",
				"properties": map[string]any{"plan": "pro"}, "integrations": map[string]any{"All": false, "Mixpanel": true}}},
		{Identify{UserId: "u", Traits: traits},
			map[string]any{"type": "identify", "userId": "u", "traits": map[string]any{"email": "a@b.c"}}},
		{Page{UserId: "u", Name: "Home", Category: "Docs", Properties: props},
			map[string]any{"type": "page", "userId": "u", "name": "Home", "category": "Docs", "properties": map[string]any{"plan": "pro"}}},
		{Screen{AnonymousId: "a", Name: "Main", Category: "App"},
			map[string]any{"type": "screen", "anonymousId": "a", "name": "Main", "category": "App"}},
		{Group{UserId: "u", GroupId: "g", Traits: traits},
			map[string]any{"type": "group", "userId": "u", "groupId": "g", "traits": map[string]any{"email": "a@b.c"}}},
		{Alias{UserId: "u", PreviousId: "p"},
			map[string]any{"type": "alias", "userId": "u", "previousId": "p"}},
	}
	for _, tt := range tests {
		got := decode(t, tt.msg)
		for k, v := range tt.want {
			assert.Equal(t, v, got[k], "%T: member %s", tt.msg, k)
		}
		for _, k := range []string{"messageId", "timestamp", "context"} {
			assert.Contains(t, got, k, "%T: members", tt.msg)
		}
		// Nothing but the Segment members.
		allowed := map[string]bool{"messageId": true, "timestamp": true, "context": true}
		for k := range tt.want {
			allowed[k] = true
		}
		for k := range got {
			assert.True(t, allowed[k], "%T: unexpected member %q", tt.msg, k)
		}
	}
}

func TestDefaultsFilledAtEnqueue(t *testing.T) {
	got := decode(t, Track{UserId: "u", Event: "E"})
	assert.Equal(t, "default-id", got["messageId"], "messageId: the default passed in")
	assert.Equal(t, "2026-11-29T12:34:56.789Z", got["timestamp"], "timestamp: RFC 3339, UTC, milliseconds")
	lib := got["context"].(map[string]any)["library"]
	assert.Equal(t, map[string]any{"name": "analytics-go", "version": Version}, lib, "context.library")

	// The caller's values are kept; a non-UTC timestamp is written in UTC.
	ts := time.Date(2020, 2, 3, 4, 5, 6, 7_000_000, time.FixedZone("X", 3600))
	got = decode(t, Track{UserId: "u", Event: "E", MessageId: "mine", Timestamp: ts})
	assert.Equal(t, "mine", got["messageId"], "the caller's messageId")
	assert.Equal(t, "2020-02-03T03:05:06.007Z", got["timestamp"], "the caller's timestamp, in UTC")
}

func TestEnqueueFillsUUIDv4AndNow(t *testing.T) {
	e := newEnv(t, newAPI())
	before := time.Now().UTC().Truncate(time.Millisecond)
	e.enqueue(Track{UserId: "u", Event: "E"}, Track{UserId: "u", Event: "E"})
	e.close()
	after := time.Now().UTC()
	reqs := e.api.Requests()
	require.Len(t, reqs, 1, "requests")
	require.Len(t, reqs[0].Events, 2, "events in the request")
	ids := reqs[0].MessageIDs()
	for _, id := range ids {
		assertUUIDv4(t, id)
	}
	assert.NotEqual(t, ids[0], ids[1], "the two events' messageIds")
	stamp, _ := reqs[0].Events[0]["timestamp"].(string)
	ts, err := time.Parse(time.RFC3339Nano, stamp)
	if assert.NoError(t, err, "timestamp %q", stamp) {
		assert.WithinRange(t, ts, before, after, "timestamp")
	}
	// The callback gets the message as sent, defaults filled.
	successes := e.out.Successes()
	require.NotEmpty(t, successes, "Success callbacks")
	assert.Equal(t, ids[0], MessageID(successes[0]), "messageId in the callback")
	require.IsType(t, Track{}, successes[0], "message in the callback")
	assert.False(t, successes[0].(Track).Timestamp.IsZero(), "the callback's message has a Timestamp")
}

func TestContextMergedWithLibrary(t *testing.T) {
	ctx := &Context{
		IP:        net.ParseIP("10.0.0.1"),
		UserAgent: "curl",
		Library:   LibraryInfo{Name: "impostor", Version: "9"},
		App:       AppInfo{Name: "app"},
		Location:  LocationInfo{City: "Paris"},
		Traits:    Traits{"plan": "pro"},
		Extra:     map[string]any{"custom": 1, "ip": "overridden?", "locale": "fr-FR"},
	}
	got := decode(t, Track{UserId: "u", Event: "E", Context: ctx})["context"].(map[string]any)
	want := map[string]any{
		"ip":        "10.0.0.1",
		"userAgent": "curl",
		"library":   map[string]any{"name": "analytics-go", "version": Version},
		"app":       map[string]any{"name": "app"},
		"location":  map[string]any{"city": "Paris"},
		"traits":    map[string]any{"plan": "pro"},
		"custom":    float64(1),
		"locale":    "fr-FR", // Extra fills a field that is unset
	}
	assert.Equal(t, want, got, "context")
	assert.Equal(t, "impostor", ctx.Library.Name, "the caller's Context, unchanged by encoding")
}

func TestUnencodableValuesAreRejected(t *testing.T) {
	cycle := map[string]any{}
	cycle["self"] = cycle
	tests := []struct {
		name  string
		msg   Message
		field string
	}{
		{"NaN", Track{UserId: "u", Event: "E", Properties: Properties{"x": math.NaN()}}, `Properties["x"]`},
		{"+Inf", Track{UserId: "u", Event: "E", Properties: Properties{"x": math.Inf(1)}}, `Properties["x"]`},
		{"-Inf float32", Identify{UserId: "u", Traits: Traits{"y": float32(math.Inf(-1))}}, `Traits["y"]`},
		{"channel", Track{UserId: "u", Event: "E", Properties: Properties{"c": make(chan int)}}, `Properties["c"]`},
		{"func", Page{UserId: "u", Properties: Properties{"f": func() {}}}, `Properties["f"]`},
		{"nested NaN", Track{UserId: "u", Event: "E", Properties: Properties{"a": []any{1, map[string]any{"b": math.NaN()}}}}, `Properties["a"][1]["b"]`},
		{"cycle", Track{UserId: "u", Event: "E", Properties: Properties{"loop": cycle}}, `Properties["loop"]`},
		{"NaN in a struct", Track{UserId: "u", Event: "E", Properties: Properties{"p": Product{Price: math.NaN()}}}, `Properties["p"]`},
		{"integrations", Alias{UserId: "u", PreviousId: "p", Integrations: Integrations{"x": make(chan int)}}, `Integrations["x"]`},
		{"context", Track{UserId: "u", Event: "E", Context: &Context{Location: LocationInfo{Latitude: math.NaN()}}}, `Context.location`},
		{"context extra", Track{UserId: "u", Event: "E", Context: &Context{Extra: map[string]any{"k": math.Inf(1)}}}, `Context.Extra["k"]`},
	}
	e := newEnv(t, newAPI())
	for _, tt := range tests {
		err := e.client.Enqueue(tt.msg)
		assert.ErrorIs(t, err, ErrInvalidMessage, "%s: Enqueue", tt.name)
		var fe *FieldError
		if !assert.ErrorAs(t, err, &fe, "%s: Enqueue", tt.name) {
			continue
		}
		assert.True(t, strings.HasPrefix(fe.Name, tt.field), "%s: field %q begins with %s", tt.name, fe.Name, tt.field)
		assert.ErrorContains(t, err, tt.field, "%s: Enqueue", tt.name)
	}
	// None reached the queue, and a valid event sent after them is
	// delivered alone.
	st := e.client.Stats()
	assert.Zero(t, st.QueueDepth, "events queued after the rejections")
	assert.Equal(t, int64(len(tests)), st.Rejected.Invalid, "events rejected as invalid")
	good := tracks("ok", 1)
	e.enqueue(good...)
	e.close()
	e.assertDeliveredOnce(good)
	assert.Len(t, e.api.Requests(), 1, "requests")
}

func TestMessageSizeLimit(t *testing.T) {
	// Find the padding that makes the encoding exactly MaxMessageBytes.
	msg := func(pad int) Message {
		return Track{UserId: "u", Event: "E", MessageId: "m", Properties: Properties{"pad": strings.Repeat("x", pad)}}
	}
	base, err := encodeMessage(msg(0), "", fixedTime)
	require.NoError(t, err)
	exact := MaxMessageBytes - len(base)
	b, err := encodeMessage(msg(exact), "", fixedTime)
	assert.NoError(t, err, "encoding a message of exactly MaxMessageBytes")
	assert.Equal(t, MaxMessageBytes, len(b), "bytes of a message at the limit")
	_, err = encodeMessage(msg(exact+1), "", fixedTime)
	assert.ErrorIs(t, err, ErrMessageTooLarge, "encoding a message of MaxMessageBytes+1")
	assert.ErrorContains(t, err, "32001 bytes", "the error names the size")

	e := newEnv(t, newAPI())
	assert.ErrorIs(t, e.client.Enqueue(msg(exact+1)), ErrMessageTooLarge, "Enqueue of an oversized message")
	assert.NoError(t, e.client.Enqueue(msg(exact)), "Enqueue of a message at the limit")
	e.close()
	st := e.client.Stats()
	assert.Equal(t, int64(1), st.Rejected.TooLarge, "events rejected as too large")
	assert.Equal(t, int64(1), st.Delivered, "events delivered")
}

func TestEncodedOnceAtEnqueue(t *testing.T) {
	e := newEnv(t, newAPI())
	props := Properties{"plan": "free", "list": []any{"a"}}
	e.enqueue(Track{UserId: "u", Event: "E", Properties: props})
	// Changing the caller's map afterwards does not change what is sent.
	props["plan"] = "pro"
	props["list"].([]any)[0] = "changed"
	props["added"] = true
	e.close()
	reqs := e.api.Requests()
	require.Len(t, reqs, 1, "requests")
	require.Len(t, reqs[0].Events, 1, "events in the request")
	assert.Equal(t, map[string]any{"plan": "free", "list": []any{"a"}}, reqs[0].Events[0]["properties"], "properties sent: the values at Enqueue")
}

func TestEncoderMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, true, false, "", "plain", "quote\" backslash\\ newline\n tab\t ctrl\x01 \x7f",
		"unicode é 日本 \u2028 \u2029", "bad utf8 \xff\xfe", 0, -1, int8(-8), int16(16), int32(-32), int64(math.MinInt64),
		uint(1), uint8(8), uint16(16), uint32(32), uint64(math.MaxUint64),
		0.0, 1.5, -2.25, 1e20, 1e21, 1e-6, 1e-7, 123456789.125, math.MaxFloat64, math.SmallestNonzeroFloat64,
		float32(1.1), float32(1e21), float32(1e-7),
		[]any{1, "a", nil}, []string{"x", "y"}, map[string]any{"b": 1, "a": []any{map[string]any{"z": 1, "y": 2}}},
		Properties{"k": "v"}, Traits{"k": 1}, Integrations{"All": true},
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC), Product{ID: "p", Price: 9.5}, json.Number("12.50"),
		map[string]int{"n": 1}, []int{1, 2}, struct{ A string }{"x"},
	}
	for _, v := range values {
		var e encoder
		if !assert.NoError(t, e.value(v), "%#v", v) {
			continue
		}
		want, err := json.Marshal(v)
		require.NoError(t, err, "json.Marshal(%#v)", v)
		// encoding/json also escapes <, > and & for HTML; none of the
		// values has them, so the bytes must be the same.
		assert.Equal(t, string(want), string(e.buf), "%#v", v)
	}
}

func TestV3StyleCodeCompiles(t *testing.T) {
	// The migration claim of docs/v3.md: v3 call sites compile unchanged.
	msgs := []Message{
		Track{UserId: "u", Event: "E", Properties: NewProperties().Set("plan", "pro").SetRevenue(9.99).SetCurrency("USD")},
		Identify{UserId: "u", Traits: NewTraits().SetName("Ada").SetEmail("ada@example.com").Set("plan", "pro")},
		Page{UserId: "u", Name: "Home", Properties: NewProperties().SetURL("https://example.com")},
		Group{UserId: "u", GroupId: "g", Traits: NewTraits().SetName("Acme")},
		Alias{UserId: "u", PreviousId: "anon"},
		Screen{UserId: "u", Name: "Main", Integrations: NewIntegrations().EnableAll().Disable("Salesforce")},
	}
	for _, m := range msgs {
		assert.NoError(t, m.Validate(), "%T: Validate", m)
		_, err := encodeMessage(m, "id", fixedTime)
		assert.NoError(t, err, "%T: encoding", m)
	}
}

func TestContextJSONRoundTrip(t *testing.T) {
	in := Context{IP: net.ParseIP("1.2.3.4"), Locale: "en", Extra: map[string]any{"custom": "x"}}
	b, err := json.Marshal(in)
	require.NoError(t, err, "json.Marshal")
	var out Context
	require.NoError(t, json.Unmarshal(b, &out), "json.Unmarshal(%s)", b)
	assert.True(t, out.IP.Equal(in.IP), "IP after a round trip of %s: %v", b, out.IP)
	assert.Equal(t, "en", out.Locale, "Locale after a round trip of %s", b)
	assert.Equal(t, map[string]any{"custom": "x"}, out.Extra, "Extra after a round trip of %s", b)
}

func FuzzEncodeProperties(f *testing.F) {
	f.Add(`{"a":1,"b":[true,null,"x"],"c":{"d":1.5e-7}}`)
	f.Add(`{"s":"\u2028\ud800 é"}`)
	f.Add(`{}`)
	f.Fuzz(func(t *testing.T, doc string) {
		var props map[string]any
		if json.Unmarshal([]byte(doc), &props) != nil {
			return
		}
		b, err := encodeMessage(Track{UserId: "u", Event: "E", Properties: props}, "id", fixedTime)
		if errors.Is(err, ErrMessageTooLarge) {
			return
		}
		require.NoError(t, err, "encoding JSON-decoded properties")
		var back map[string]any
		require.NoError(t, json.Unmarshal(b, &back), "the encoding is JSON:\n%s", b)
		if len(props) == 0 {
			return
		}
		want, _ := json.Marshal(props)
		got, _ := json.Marshal(back["properties"])
		require.Equal(t, string(want), string(got), "properties after encoding")
	})
}

func TestContextExtraKeepsLargeIntegers(t *testing.T) {
	var c Context
	require.NoError(t, json.Unmarshal([]byte(`{"locale":"en","big":12345678901234567890}`), &c))
	got := decode(t, Track{UserId: "u", Event: "E", Context: &c})["context"].(map[string]any)
	assert.Equal(t, float64(12345678901234567890), got["big"], "context.big")
	b, err := encodeMessage(Track{UserId: "u", Event: "E", Context: &c}, "id", fixedTime)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"big":12345678901234567890`, "the large integer, written as given")
}

func TestGeneratedIDsAreDistinctUUIDv4(t *testing.T) {
	e := &encoder{}
	seen := map[string]bool{}
	for range 100 { // more than one read of the random buffer
		e.newID()
		id := string(e.id[:])
		assertUUIDv4(t, id)
		require.False(t, seen[id], "id %q seen before", id)
		seen[id] = true
	}
}

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
		(*ownTrack)(nil), (*Spooled)(nil),
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
	ok, failed := e.out.Calls()
	assert.Zero(t, ok, "Success callbacks for refused messages")
	assert.Zero(t, failed, "Failure callbacks for refused messages")
}

// TestMessageOfAnotherTypeIsInvalid: a caller's type that embeds a
// message, and a Spooled, by value or by pointer, are refused with a
// *FieldError, counted as invalid and without a callback: Enqueue takes
// this package's six message types (and pointers to them) alone, so that
// it can call their methods on their own types.
func TestMessageOfAnotherTypeIsInvalid(t *testing.T) {
	track := Track{UserId: "u", Event: "E"}
	msgs := []Message{ownTrack{track}, &ownTrack{track}, Spooled{Type: "track", MessageId: "s1"}, &Spooled{Type: "track", MessageId: "s2"}}
	e := newEnv(t, newAPI())
	for _, m := range msgs {
		err := e.client.Enqueue(m)
		assert.ErrorIs(t, err, ErrInvalidMessage, "Enqueue(%T)", m)
		var fe *FieldError
		assert.ErrorAs(t, err, &fe, "Enqueue(%T)", m)
	}
	e.close()
	st := e.client.Stats()
	assert.Equal(t, int64(len(msgs)), st.Rejected.Invalid, "events rejected as invalid")
	assert.Zero(t, st.Enqueued, "events accepted")
	ok, failed := e.out.Calls()
	assert.Zero(t, ok+failed, "callbacks for refused messages")
}

// TestPointerMessageCallbackGetsTheValue: a pointer to a message is
// accepted, and its callback receives the message value, defaults filled,
// as for a message passed by value.
func TestPointerMessageCallbackGetsTheValue(t *testing.T) {
	e := newEnv(t, newAPI())
	e.enqueue(&Track{MessageId: "p1", UserId: "u", Event: "E"}, &Alias{MessageId: "p2", UserId: "u", PreviousId: "p"})
	e.close()
	successes := e.out.Successes()
	require.Len(t, successes, 2, "Success callbacks")
	for _, m := range successes {
		assert.Equal(t, reflect.Struct, reflect.TypeOf(m).Kind(), "kind of the %T the callback got: the message value", m)
		assert.NotEmpty(t, MessageID(m), "MessageID of the %T the callback got", m)
		if tr, ok := m.(Track); ok {
			assert.False(t, tr.Timestamp.IsZero(), "the callback's Track has its Timestamp filled")
		}
	}
}

// A generated messageId costs no allocation: its random bytes stay on the
// stack (they escaped through an io.Reader before).
func TestNewIDAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	e := getEncoder()
	defer putEncoder(e)
	assert.Zero(t, testing.AllocsPerRun(100, e.newID), "allocations of newID")
	u, err := uuid.Parse(string(e.id[:]))
	require.NoError(t, err, "the id newID wrote")
	assert.Equal(t, uuid.Version(4), u.Version(), "version")
	assert.Equal(t, uuid.RFC4122, u.Variant(), "variant")
}
