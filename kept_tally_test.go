package analytics

import (
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The estimate of a kept message, as keptBytes counted it before the
// encoder counted it (issue 20): a second walk over the message's maps
// once encoded. It is the reference the encoder's count must equal.
func walkKeptBytes(msg Message, encoded int) int {
	n := max(encoded-envelopeBytes, 0)
	switch m := msg.(type) {
	case Track:
		n += int(unsafe.Sizeof(m)) + walkContextKept(m.Context) + walkValueKept(m.Properties) + walkValueKept(m.Integrations)
	case Identify:
		n += int(unsafe.Sizeof(m)) + walkContextKept(m.Context) + walkValueKept(m.Traits) + walkValueKept(m.Integrations)
	case Page:
		n += int(unsafe.Sizeof(m)) + walkContextKept(m.Context) + walkValueKept(m.Properties) + walkValueKept(m.Integrations)
	case Screen:
		n += int(unsafe.Sizeof(m)) + walkContextKept(m.Context) + walkValueKept(m.Properties) + walkValueKept(m.Integrations)
	case Group:
		n += int(unsafe.Sizeof(m)) + walkContextKept(m.Context) + walkValueKept(m.Traits) + walkValueKept(m.Integrations)
	case Alias:
		n += int(unsafe.Sizeof(m)) + walkContextKept(m.Context) + walkValueKept(m.Integrations)
	}
	return n
}

func walkContextKept(c *Context) int {
	if c == nil {
		return 0
	}
	n := contextBytes + walkValueKept(c.Traits) + walkValueKept(c.Extra)
	if len(c.IP) > 0 {
		n += max(cap(c.IP), ipBytes)
	}
	return n
}

func walkValueKept(v any) int {
	switch v := v.(type) {
	case nil, bool:
		return 0
	case string:
		return boxBytes
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return boxBytes / 2
	case map[string]any:
		return walkMapKept(v)
	case Properties:
		return walkMapKept(v)
	case Traits:
		return walkMapKept(v)
	case Integrations:
		return walkMapKept(v)
	case []any:
		n := sliceBoxBytes + cap(v)*boxBytes
		for _, e := range v {
			n += walkValueKept(e)
		}
		return n
	case []string:
		return sliceBoxBytes + cap(v)*boxBytes
	case time.Time:
		return int(unsafe.Sizeof(v))
	}
	return otherKept(v)
}

func walkMapKept(m map[string]any) int {
	if m == nil {
		return 0
	}
	n := mapBytes(len(m))
	for _, v := range m {
		n += walkValueKept(v)
	}
	return n
}

type keptPoint struct{ X, Y int }

// tallyShapes are messages of every type and of every kind of value the
// encoder writes itself or hands to encoding/json, nested, empty and nil.
func tallyShapes() map[string]Message {
	ts := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	strs := make([]string, 2, 7)
	strs[0], strs[1] = "a", "b"
	anys := make([]any, 3, 5)
	anys[0], anys[1], anys[2] = "x", 1.5, map[string]any{"deep": []any{int8(1), uint64(2), nil, true}}
	p := keptPoint{1, 2}
	every := Properties{
		"s": "str", "b": true, "n": nil,
		"i": 1, "i8": int8(1), "i16": int16(1), "i32": int32(1), "i64": int64(1),
		"u": uint(1), "u8": uint8(1), "u16": uint16(1), "u32": uint32(1), "u64": uint64(1),
		"f32": float32(1.5), "f64": 2.5,
		"map":   map[string]any{"a": 1, "b": map[string]any{"c": []any{"d"}}},
		"props": Properties{"x": "y"}, "traits": Traits{"x": 1}, "integrations": Integrations{"All": false},
		"nilmap": map[string]any(nil), "nilprops": Properties(nil), "emptymap": map[string]any{},
		"anys": anys, "nilanys": []any(nil), "strs": strs, "nilstrs": []string(nil),
		"time": ts,
		// Types the encoder hands to encoding/json.
		"intmap": map[string]int{"a": 1, "b": 2}, "ints": make([]int, 3, 9), "bytes": []byte("raw"),
		"struct": p, "ptr": &p, "nilptr": (*keptPoint)(nil), "number": json.Number("12"),
		"array": [3]int{1, 2, 3}, "nested-typed": map[string][]string{"k": {"v"}},
	}
	big := Properties{}
	for i := range 40 {
		big["k"+strconv.Itoa(i)] = map[string]any{"v": i, "s": "s" + strconv.Itoa(i)}
	}
	ctx := &Context{
		IP:       net.IPv4(10, 0, 0, 1),
		App:      AppInfo{Name: "shop"},
		Library:  LibraryInfo{Name: "theirs"},
		Locale:   "en-US",
		Traits:   Traits{"email": "a@b.c", "tags": []any{"x", "y"}},
		Extra:    map[string]any{"requestId": "r-1", "nested": map[string]any{"a": []string{"b"}}, "n": 3},
		Timezone: "Europe/Paris",
	}
	shadowed := &Context{
		IP: net.ParseIP("2001:db8::1"), Locale: "fr-FR", Direct: true,
		Extra: map[string]any{
			// Members a field wins over: not written, but kept.
			"ip": "1.2.3.4", "locale": map[string]any{"deep": []any{"x", 1}}, "library": []string{"l"},
			"direct": Properties{"a": 1}, "app": keptPoint{}, "other": "written",
		},
	}
	shapes := map[string]Message{
		"track-bare":          Track{UserId: "u", Event: "e"},
		"track-every-value":   Track{UserId: "u", Event: "e", Properties: every, Integrations: Integrations{"All": true, "Amplitude": map[string]any{"session_id": 1}}},
		"track-big-map":       Track{UserId: "u", Event: "e", Properties: big},
		"track-empty-maps":    Track{UserId: "u", Event: "e", Properties: Properties{}, Integrations: Integrations{}},
		"track-context":       Track{UserId: "u", Event: "e", Context: ctx, Properties: Properties{"a": "b"}},
		"track-shadowed":      Track{UserId: "u", Event: "e", Context: shadowed},
		"track-empty-context": Track{UserId: "u", Event: "e", Context: &Context{Traits: Traits{}, Extra: map[string]any{}}},
		"track-id-time":       Track{MessageId: "m-1", Timestamp: ts, UserId: "u", Event: "e", Properties: Properties{"a": 1}},
		"track-pointer":       &Track{UserId: "u", Event: "e", Properties: every},
		"identify":            Identify{UserId: "u", Traits: Traits{"email": "a@b.c", "plan": []any{"pro", 2}}, Context: ctx},
		"identify-empty":      Identify{AnonymousId: "a", Traits: Traits{}},
		"page":                Page{UserId: "u", Name: "Home", Category: "c", Properties: every, Context: shadowed},
		"screen":              Screen{UserId: "u", Name: "Home", Properties: Properties{"x": anys}, Integrations: Integrations{"All": false}},
		"group":               Group{UserId: "u", GroupId: "g", Traits: Traits{"name": "Acme", "employees": 120, "deep": big}, Context: ctx},
		"alias":               Alias{UserId: "u", PreviousId: "p", Context: ctx, Integrations: Integrations{"x": every}},
		"alias-bare":          Alias{UserId: "u", PreviousId: "p"},
	}
	for _, s := range keepShapes {
		shapes["keep/"+s.name] = s.make(7)
	}
	return shapes
}

// What the encoder counts as it writes a message, with countKept, gives
// the estimate the second walk over the message gave, for every shape, on
// the default wire and on the v3 wire; without countKept it counts nothing.
func TestEncoderCountsWhatKeptBytesWalked(t *testing.T) {
	now := time.Now()
	for name, msg := range tallyShapes() {
		for _, v3 := range []bool{false, true} {
			e := getEncoder()
			e.v3Wire, e.countKept = v3, true
			generated, err := e.encodeMessage(msg, now)
			require.NoError(t, err, name)
			id := ""
			if generated {
				id = string(e.id[:])
			}
			value := msg.withDefaults(id, now)
			want := walkKeptBytes(value, len(e.buf))
			assert.Equal(t, want, keptBytes(value, e.buf, e.kept), "%s (v3 wire %v)", name, v3)

			e.countKept = false
			_, err = e.encodeMessage(msg, now)
			require.NoError(t, err, name)
			assert.Zero(t, e.kept, "%s: counted without countKept", name)
			putEncoder(e)
		}
	}
}

// Enqueue with a callback counts against MaxQueueBytes, for the message
// it keeps, what the second walk over the message gave; without a callback,
// nothing beyond the encoded bytes.
func TestEnqueueCountsKeptAsTheWalkDid(t *testing.T) {
	for _, callback := range []bool{true, false} {
		for name, msg := range tallyShapes() {
			opts := []Option{WithEndpoint("http://kept.test"), WithHTTPClient(&http.Client{Transport: discard{}}),
				WithFlushAt(100), WithFlushInterval(time.Hour)}
			if callback {
				opts = append(opts, WithCallback(CallbackFunc(func(Message, error) {})))
			}
			c, err := New("wk", opts...)
			require.NoError(t, err)
			require.NoError(t, c.Enqueue(msg), name)
			st := c.Stats()
			want := 0
			if callback {
				want = walkKeptBytes(msg.withDefaults(MessageID(msg), time.Now()), st.QueueBytes)
			}
			assert.Equal(t, want, st.QueueHeldBytes-st.QueueBytes, "%s (callback %v): held beyond the encoded bytes", name, callback)
			drain(c)
			require.NoError(t, c.Close())
		}
	}
}
