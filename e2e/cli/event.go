package main

import (
	"encoding"
	"encoding/json"
	"errors"
	"net"
	"reflect"
	"slices"
	"strings"
	"time"

	analytics "github.com/dualpath/analytics-go"
)

// eventTypes are the accepted values of an event's type, as the Segment
// spec spells them; matching is case-sensitive.
var eventTypes = []string{"track", "identify", "page", "screen", "group", "alias"}

// eventFields are the Segment fields the CLI knows. Each is type-checked on
// every event, whatever its type; one its message type lacks is ignored.
var eventFields = []string{
	"type", "userId", "anonymousId", "messageId", "timestamp", "event",
	"properties", "traits", "name", "category", "groupId", "previousId",
	"context", "integrations",
}

// stringFields are the eventFields whose value is a string.
var stringFields = []string{
	"userId", "anonymousId", "messageId", "event", "name", "category",
	"groupId", "previousId",
}

// fields is an event's members, decoded and type-checked.
type fields struct {
	str          map[string]string
	timestamp    time.Time
	properties   analytics.Properties
	traits       analytics.Traits
	integrations analytics.Integrations
	context      *analytics.Context
}

func decodeEvent(v any, path string, w *warnings) (event, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return event{}, wantErr(path, "an object", v)
	}
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(eventFields, k) {
			w.unknown("event field", k, path)
		}
	}

	typPath := join(path, "type")
	typ, present := obj["type"]
	name, ok := typ.(string)
	switch {
	case !present:
		return event{}, inputErr(typPath, "required, one of %s", strings.Join(eventTypes, ", "))
	case !ok:
		return event{}, wantErr(typPath, "a string", typ)
	case !slices.Contains(eventTypes, name):
		return event{}, inputErr(typPath, "unknown event type %q, want one of %s", short(name), strings.Join(eventTypes, ", "))
	}

	f, err := decodeFields(obj, path)
	if err != nil {
		return event{}, err
	}
	return event{path: path, msg: f.message(name)}, nil
}

func decodeFields(obj map[string]any, path string) (fields, error) {
	f := fields{str: map[string]string{}}
	for _, k := range stringFields {
		s, err := optString(obj, path, k)
		if err != nil {
			return fields{}, err
		}
		f.str[k] = s
	}

	ts, err := optString(obj, path, "timestamp")
	if err != nil {
		return fields{}, err
	}
	if ts != "" {
		// RFC3339Nano parses RFC 3339 with or without a fraction.
		if f.timestamp, err = time.Parse(time.RFC3339Nano, ts); err != nil {
			return fields{}, inputErr(join(path, "timestamp"), "want an RFC 3339 time, got %q", short(ts))
		}
	}

	maps := []struct {
		key string
		set func(map[string]any)
	}{
		{"properties", func(m map[string]any) { f.properties = m }},
		{"traits", func(m map[string]any) { f.traits = m }},
		{"integrations", func(m map[string]any) { f.integrations = m }},
	}
	for _, m := range maps {
		obj, err := optObject(obj, path, m.key)
		if err != nil {
			return fields{}, err
		}
		if obj != nil {
			m.set(obj)
		}
	}

	ctx, err := optObject(obj, path, "context")
	if err != nil {
		return fields{}, err
	}
	if ctx != nil {
		if f.context, err = decodeContext(ctx, join(path, "context")); err != nil {
			return fields{}, err
		}
	}
	return f, nil
}

// message builds the SDK message of type typ, leaving out the fields that
// type does not have.
func (f fields) message(typ string) analytics.Message {
	s := f.str
	switch typ {
	case "track":
		return analytics.Track{
			MessageId: s["messageId"], AnonymousId: s["anonymousId"], UserId: s["userId"],
			Event: s["event"], Timestamp: f.timestamp, Context: f.context,
			Properties: f.properties, Integrations: f.integrations,
		}
	case "identify":
		return analytics.Identify{
			MessageId: s["messageId"], AnonymousId: s["anonymousId"], UserId: s["userId"],
			Timestamp: f.timestamp, Context: f.context,
			Traits: f.traits, Integrations: f.integrations,
		}
	case "page":
		return analytics.Page{
			MessageId: s["messageId"], AnonymousId: s["anonymousId"], UserId: s["userId"],
			Name: s["name"], Category: s["category"], Timestamp: f.timestamp, Context: f.context,
			Properties: f.properties, Integrations: f.integrations,
		}
	case "screen":
		return analytics.Screen{
			MessageId: s["messageId"], AnonymousId: s["anonymousId"], UserId: s["userId"],
			Name: s["name"], Category: s["category"], Timestamp: f.timestamp, Context: f.context,
			Properties: f.properties, Integrations: f.integrations,
		}
	case "group":
		return analytics.Group{
			MessageId: s["messageId"], AnonymousId: s["anonymousId"], UserId: s["userId"],
			GroupId: s["groupId"], Timestamp: f.timestamp, Context: f.context,
			Traits: f.traits, Integrations: f.integrations,
		}
	default: // "alias": decodeEvent accepts no other type
		return analytics.Alias{
			MessageId: s["messageId"], PreviousId: s["previousId"], UserId: s["userId"],
			Timestamp: f.timestamp, Context: f.context, Integrations: f.integrations,
		}
	}
}

// decodeContext turns a context object into an analytics.Context through
// its UnmarshalJSON, which keeps unknown members in Extra.
func decodeContext(obj map[string]any, path string) (*analytics.Context, error) {
	// net.IP's own error says neither where nor what was wanted.
	if ip, ok := obj["ip"].(string); ok && ip != "" && net.ParseIP(ip) == nil {
		return nil, inputErr(join(path, "ip"), "want an IP address, got %q", short(ip))
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		return nil, inputErr(path, "%v", err) // not reached: obj came from JSON
	}
	var c analytics.Context
	if err := json.Unmarshal(raw, &c); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			return nil, inputErr(join(path, te.Field), "want %s, got %s", jsonKind(te.Type), te.Value)
		}
		return nil, inputErr(path, "%v", err)
	}
	// UnmarshalJSON decodes free-form members through float64; put back
	// the json.Number values so that large integers arrive unrounded.
	for k := range c.Extra {
		c.Extra[k] = obj[k]
	}
	if t, ok := obj["traits"].(map[string]any); ok {
		c.Traits = t
	}
	return &c, nil
}

var textUnmarshaler = reflect.TypeFor[encoding.TextUnmarshaler]()

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	if reflect.PointerTo(t).Implements(textUnmarshaler) {
		return "a string"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return t.String()
}
