package analytics

import (
	"encoding/json"
	"errors"
	"math"
	"net"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"
)

// encodeMessage returns the JSON of m in a slice of its own, with id and ts
// as defaults for an unset MessageId and Timestamp.
func encodeMessage(m Message, id string, ts time.Time) ([]byte, error) {
	if m.id() == "" && id != "" {
		m = m.withDefaults(id, time.Time{})
	}
	e := getEncoder()
	defer putEncoder(e)
	if _, err := e.encodeMessage(m, ts); err != nil {
		return nil, err
	}
	return append([]byte(nil), e.buf...), nil
}

var fixedTime = time.Date(2026, 11, 29, 12, 34, 56, 789_123_456, time.UTC)

// decode encodes m as Enqueue does and decodes the JSON back.
func decode(t *testing.T, m Message) map[string]any {
	t.Helper()
	b, err := encodeMessage(m, "default-id", fixedTime)
	if err != nil {
		t.Fatalf("encode %#v: %v", m, err)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("encoding of %#v is not JSON: %v\n%s", m, err, b)
	}
	return out
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
		var fe *FieldError
		if !errors.Is(err, ErrInvalidMessage) || !errors.As(err, &fe) {
			t.Errorf("%#v: Validate() = %v, want a FieldError wrapping ErrInvalidMessage", tt.msg, err)
			continue
		}
		if got := fe.Type + "." + fe.Name; got != tt.field || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%#v: error %q names %s, want %s", tt.msg, err, got, tt.field)
		}
	}
	valid := []Message{
		Track{UserId: "u", Event: "E"}, Track{AnonymousId: "a", Event: "E"},
		Identify{UserId: "u"}, Identify{AnonymousId: "a"},
		Page{UserId: "u"}, Screen{AnonymousId: "a"},
		Group{UserId: "u", GroupId: "g"}, Alias{UserId: "u", PreviousId: "p"},
	}
	for _, m := range valid {
		if err := m.Validate(); err != nil {
			t.Errorf("%#v: Validate() = %v, want nil", m, err)
		}
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
			if !reflect.DeepEqual(got[k], v) {
				t.Errorf("%T: %s = %#v, want %#v", tt.msg, k, got[k], v)
			}
		}
		for _, k := range []string{"messageId", "timestamp", "context"} {
			if _, ok := got[k]; !ok {
				t.Errorf("%T: no %s in %v", tt.msg, k, got)
			}
		}
		// Nothing but the Segment members.
		allowed := map[string]bool{"messageId": true, "timestamp": true, "context": true}
		for k := range tt.want {
			allowed[k] = true
		}
		for k := range got {
			if !allowed[k] {
				t.Errorf("%T: unexpected member %q", tt.msg, k)
			}
		}
	}
}

func TestDefaultsFilledAtEnqueue(t *testing.T) {
	got := decode(t, Track{UserId: "u", Event: "E"})
	if got["messageId"] != "default-id" {
		t.Errorf("messageId = %v, want the default passed in", got["messageId"])
	}
	if got["timestamp"] != "2026-11-29T12:34:56.789Z" {
		t.Errorf("timestamp = %v, want RFC 3339 UTC with milliseconds", got["timestamp"])
	}
	lib := got["context"].(map[string]any)["library"]
	if !reflect.DeepEqual(lib, map[string]any{"name": "analytics-go", "version": Version}) {
		t.Errorf("context.library = %v", lib)
	}

	// The caller's values are kept; a non-UTC timestamp is written in UTC.
	ts := time.Date(2020, 2, 3, 4, 5, 6, 7_000_000, time.FixedZone("X", 3600))
	got = decode(t, Track{UserId: "u", Event: "E", MessageId: "mine", Timestamp: ts})
	if got["messageId"] != "mine" || got["timestamp"] != "2020-02-03T03:05:06.007Z" {
		t.Errorf("caller's messageId/timestamp not kept: %v %v", got["messageId"], got["timestamp"])
	}
}

func TestEnqueueFillsUUIDv4AndNow(t *testing.T) {
	e := newEnv(t, newAPI())
	before := time.Now().UTC().Truncate(time.Millisecond)
	e.enqueue(Track{UserId: "u", Event: "E"}, Track{UserId: "u", Event: "E"})
	e.close()
	after := time.Now().UTC()
	reqs := e.api.Requests()
	if len(reqs) != 1 || len(reqs[0].Events) != 2 {
		t.Fatalf("requests %+v", reqs)
	}
	uuidV4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	ids := reqs[0].MessageIDs()
	for _, id := range ids {
		if !uuidV4.MatchString(id) {
			t.Errorf("messageId %q is not a UUID v4", id)
		}
	}
	if ids[0] == ids[1] {
		t.Error("two events share a messageId")
	}
	ts, err := time.Parse(time.RFC3339Nano, reqs[0].Events[0]["timestamp"].(string))
	if err != nil || ts.Before(before) || ts.After(after) {
		t.Errorf("timestamp %v (%v) not between %v and %v", ts, err, before, after)
	}
	// The callback gets the message as sent, defaults filled.
	e.out.mu.Lock()
	defer e.out.mu.Unlock()
	if got := messageID(e.out.successes[0]); got != ids[0] {
		t.Errorf("callback messageId %q, sent %q", got, ids[0])
	}
	if e.out.successes[0].(Track).Timestamp.IsZero() {
		t.Error("callback message has no Timestamp")
	}
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
	if !reflect.DeepEqual(got, want) {
		t.Errorf("context = %#v\nwant      %#v", got, want)
	}
	if ctx.Library.Name != "impostor" {
		t.Error("encoding changed the caller's Context")
	}
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
		var fe *FieldError
		if !errors.Is(err, ErrInvalidMessage) || !errors.As(err, &fe) {
			t.Errorf("%s: Enqueue = %v, want a FieldError wrapping ErrInvalidMessage", tt.name, err)
			continue
		}
		if !strings.HasPrefix(fe.Name, tt.field) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: error %q names %q, want %s", tt.name, err, fe.Name, tt.field)
		}
	}
	// None reached the queue, and a valid event sent after them is
	// delivered alone.
	if st := e.client.Stats(); st.QueueDepth != 0 || st.Rejected.Invalid != int64(len(tests)) {
		t.Fatalf("stats after rejections: %+v", st)
	}
	good := tracks("ok", 1)
	e.enqueue(good...)
	e.close()
	e.assertDeliveredOnce(good)
	if n := len(e.api.Requests()); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

func TestMessageSizeLimit(t *testing.T) {
	// Find the padding that makes the encoding exactly MaxMessageBytes.
	msg := func(pad int) Message {
		return Track{UserId: "u", Event: "E", MessageId: "m", Properties: Properties{"pad": strings.Repeat("x", pad)}}
	}
	base, err := encodeMessage(msg(0), "", fixedTime)
	if err != nil {
		t.Fatal(err)
	}
	exact := MaxMessageBytes - len(base)
	if b, err := encodeMessage(msg(exact), "", fixedTime); err != nil || len(b) != MaxMessageBytes {
		t.Fatalf("message of exactly %d bytes: %d bytes, %v", MaxMessageBytes, len(b), err)
	}
	_, err = encodeMessage(msg(exact+1), "", fixedTime)
	if !errors.Is(err, ErrMessageTooLarge) || !strings.Contains(err.Error(), "32001 bytes") {
		t.Fatalf("message of %d bytes: %v, want ErrMessageTooLarge naming the size", MaxMessageBytes+1, err)
	}

	e := newEnv(t, newAPI())
	if err := e.client.Enqueue(msg(exact + 1)); !errors.Is(err, ErrMessageTooLarge) {
		t.Fatalf("Enqueue of an oversized message = %v", err)
	}
	if err := e.client.Enqueue(msg(exact)); err != nil {
		t.Fatalf("Enqueue of a message at the limit = %v", err)
	}
	e.close()
	if st := e.client.Stats(); st.Rejected.TooLarge != 1 || st.Delivered != 1 {
		t.Fatalf("stats %+v", st)
	}
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
	got := e.api.Requests()[0].Events[0]["properties"]
	if !reflect.DeepEqual(got, map[string]any{"plan": "free", "list": []any{"a"}}) {
		t.Fatalf("sent properties %v, want the values at Enqueue", got)
	}
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
		if err := e.value(v); err != nil {
			t.Errorf("%#v: %v", v, err)
			continue
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		// encoding/json also escapes <, > and & for HTML; none of the
		// values has them, so the bytes must be the same.
		if string(e.buf) != string(want) {
			t.Errorf("%#v:\n got  %s\n want %s", v, e.buf, want)
		}
	}
}

func TestV3StyleCodeCompiles(t *testing.T) {
	// The README's migration claim: v3 call sites compile unchanged.
	msgs := []Message{
		Track{UserId: "u", Event: "E", Properties: NewProperties().Set("plan", "pro").SetRevenue(9.99).SetCurrency("USD")},
		Identify{UserId: "u", Traits: NewTraits().SetName("Ada").SetEmail("ada@example.com").Set("plan", "pro")},
		Page{UserId: "u", Name: "Home", Properties: NewProperties().SetURL("https://example.com")},
		Group{UserId: "u", GroupId: "g", Traits: NewTraits().SetName("Acme")},
		Alias{UserId: "u", PreviousId: "anon"},
		Screen{UserId: "u", Name: "Main", Integrations: NewIntegrations().EnableAll().Disable("Salesforce")},
	}
	for _, m := range msgs {
		if err := m.Validate(); err != nil {
			t.Errorf("%T: %v", m, err)
		}
		if _, err := encodeMessage(m, "id", fixedTime); err != nil {
			t.Errorf("%T: %v", m, err)
		}
	}
}

func TestContextJSONRoundTrip(t *testing.T) {
	in := Context{IP: net.ParseIP("1.2.3.4"), Locale: "en", Extra: map[string]any{"custom": "x"}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out Context
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if !out.IP.Equal(in.IP) || out.Locale != "en" || out.Extra["custom"] != "x" {
		t.Fatalf("round trip of %s gave %+v", b, out)
	}
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
		if err != nil {
			if errors.Is(err, ErrMessageTooLarge) {
				return
			}
			t.Fatalf("JSON-decoded properties failed to encode: %v", err)
		}
		var back map[string]any
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("encoding is not JSON: %v\n%s", err, b)
		}
		if len(props) == 0 {
			return
		}
		want, _ := json.Marshal(props)
		got, _ := json.Marshal(back["properties"])
		if string(got) != string(want) {
			t.Fatalf("properties changed:\n got  %s\n want %s", got, want)
		}
	})
}

func TestContextExtraKeepsLargeIntegers(t *testing.T) {
	var c Context
	if err := json.Unmarshal([]byte(`{"locale":"en","big":12345678901234567890}`), &c); err != nil {
		t.Fatal(err)
	}
	got := decode(t, Track{UserId: "u", Event: "E", Context: &c})["context"].(map[string]any)
	if got["big"] != float64(12345678901234567890) {
		t.Fatalf("context = %v", got)
	}
	b, _ := encodeMessage(Track{UserId: "u", Event: "E", Context: &c}, "id", fixedTime)
	if !strings.Contains(string(b), `"big":12345678901234567890`) {
		t.Fatalf("large integer not written as given: %s", b)
	}
}

func TestGeneratedIDsAreDistinctUUIDv4(t *testing.T) {
	uuidV4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	e := &encoder{}
	seen := map[string]bool{}
	for range 100 { // more than one read of the random buffer
		e.newID()
		id := string(e.id[:])
		if !uuidV4.MatchString(id) || seen[id] {
			t.Fatalf("id %q: not a UUID v4, or seen before", id)
		}
		seen[id] = true
	}
}
