package analytics

import (
	"iter"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"
	"unsafe"
)

// Message is one of the six Segment message types: Track, Identify, Page,
// Screen, Group, Alias. Only this package's types implement it, and
// pointers to them (Enqueue takes either; a Callback gets the value).
type Message interface {
	// Validate reports a missing required field as a *FieldError.
	Validate() error

	// encode appends the message's JSON to e, using id and ts where the
	// message has no MessageId or Timestamp of its own.
	encode(e *encoder, id []byte, ts time.Time) error
	// kept returns what a Callback gets: a copy with Type, MessageId
	// and Timestamp filled that keeps nothing of the caller's (see Track's).
	kept(id string, ts time.Time) Message
	// id returns the MessageId field.
	id() string
}

// MessageID returns the MessageId of any message: in a Callback, the id
// the SDK filled at Enqueue. It returns "" for nil and for a nil pointer.
func MessageID(m Message) string {
	if m == nil || isNilPointer(m) {
		return ""
	}
	return m.id()
}

// isNilPointer reports whether m is a nil pointer, such as (*Track)(nil), on
// which Message's value methods would panic; Enqueue refuses it.
// The six message values, the usual case, are told apart without reflection.
func isNilPointer(m Message) bool {
	switch m.(type) {
	case Track, Identify, Page, Screen, Group, Alias:
		return false
	}
	v := reflect.ValueOf(m)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

func (m Track) id() string    { return m.MessageId }
func (m Identify) id() string { return m.MessageId }
func (m Page) id() string     { return m.MessageId }
func (m Screen) id() string   { return m.MessageId }
func (m Group) id() string    { return m.MessageId }
func (m Alias) id() string    { return m.MessageId }

// Track records an action a user performed. It needs Event, and UserId or
// AnonymousId.
type Track struct {
	// Type is ignored: the SDK always sends "track", and a Callback gets
	// the message with Type "track". It exists so code written for
	// segmentio/analytics-go v3 compiles unchanged.
	Type string `json:"type,omitempty"`

	MessageId    string       `json:"messageId,omitempty"`    // unique id the API de-duplicates on; a UUID v4 if empty
	AnonymousId  string       `json:"anonymousId,omitempty"`  // who, before sign-up; this or UserId is required
	UserId       string       `json:"userId,omitempty"`       // who, in your database
	Event        string       `json:"event"`                  // what happened, e.g. "Order Completed"; required
	Timestamp    time.Time    `json:"timestamp,omitzero"`     // when it happened; now if zero
	Context      *Context     `json:"context,omitempty"`      // extra information: IP, user agent, device, ...
	Properties   Properties   `json:"properties,omitempty"`   // free-form properties of the event
	Integrations Integrations `json:"integrations,omitempty"` // which destinations get it
}

// Identify ties a user to their traits. It needs UserId or AnonymousId.
type Identify struct {
	// Type is ignored: the SDK always sends "identify", and a Callback gets
	// the message with Type "identify".
	Type string `json:"type,omitempty"`

	MessageId    string       `json:"messageId,omitempty"`    // unique id the API de-duplicates on; a UUID v4 if empty
	AnonymousId  string       `json:"anonymousId,omitempty"`  // who, before sign-up; this or UserId is required
	UserId       string       `json:"userId,omitempty"`       // who, in your database
	Timestamp    time.Time    `json:"timestamp,omitzero"`     // when it happened; now if zero
	Context      *Context     `json:"context,omitempty"`      // extra information: IP, user agent, device, ...
	Traits       Traits       `json:"traits,omitempty"`       // free-form traits of the user or group
	Integrations Integrations `json:"integrations,omitempty"` // which destinations get it
}

// Page records a page view. It needs UserId or AnonymousId.
type Page struct {
	// Type is ignored: the SDK always sends "page", and a Callback gets
	// the message with Type "page".
	Type string `json:"type,omitempty"`

	MessageId    string       `json:"messageId,omitempty"`    // unique id the API de-duplicates on; a UUID v4 if empty
	AnonymousId  string       `json:"anonymousId,omitempty"`  // who, before sign-up; this or UserId is required
	UserId       string       `json:"userId,omitempty"`       // who, in your database
	Name         string       `json:"name,omitempty"`         // name of the page or screen
	Category     string       `json:"category,omitempty"`     // category of the page or screen
	Timestamp    time.Time    `json:"timestamp,omitzero"`     // when it happened; now if zero
	Context      *Context     `json:"context,omitempty"`      // extra information: IP, user agent, device, ...
	Properties   Properties   `json:"properties,omitempty"`   // free-form properties of the event
	Integrations Integrations `json:"integrations,omitempty"` // which destinations get it
}

// Screen records a screen view in an app. It needs UserId or AnonymousId.
type Screen struct {
	// Type is ignored: the SDK always sends "screen", and a Callback gets
	// the message with Type "screen".
	Type string `json:"type,omitempty"`

	MessageId    string       `json:"messageId,omitempty"`    // unique id the API de-duplicates on; a UUID v4 if empty
	AnonymousId  string       `json:"anonymousId,omitempty"`  // who, before sign-up; this or UserId is required
	UserId       string       `json:"userId,omitempty"`       // who, in your database
	Name         string       `json:"name,omitempty"`         // name of the page or screen
	Category     string       `json:"category,omitempty"`     // category of the page or screen
	Timestamp    time.Time    `json:"timestamp,omitzero"`     // when it happened; now if zero
	Context      *Context     `json:"context,omitempty"`      // extra information: IP, user agent, device, ...
	Properties   Properties   `json:"properties,omitempty"`   // free-form properties of the event
	Integrations Integrations `json:"integrations,omitempty"` // which destinations get it
}

// Group ties a user to a group (an account, a company). It needs GroupId,
// and UserId or AnonymousId.
type Group struct {
	// Type is ignored: the SDK always sends "group", and a Callback gets
	// the message with Type "group".
	Type string `json:"type,omitempty"`

	MessageId    string       `json:"messageId,omitempty"`    // unique id the API de-duplicates on; a UUID v4 if empty
	AnonymousId  string       `json:"anonymousId,omitempty"`  // who, before sign-up; this or UserId is required
	UserId       string       `json:"userId,omitempty"`       // who, in your database
	GroupId      string       `json:"groupId"`                // the group (account, company); required
	Timestamp    time.Time    `json:"timestamp,omitzero"`     // when it happened; now if zero
	Context      *Context     `json:"context,omitempty"`      // extra information: IP, user agent, device, ...
	Traits       Traits       `json:"traits,omitempty"`       // free-form traits of the user or group
	Integrations Integrations `json:"integrations,omitempty"` // which destinations get it
}

// Alias merges two user identities. It needs UserId and PreviousId.
type Alias struct {
	// Type is ignored: the SDK always sends "alias", and a Callback gets
	// the message with Type "alias".
	Type string `json:"type,omitempty"`

	MessageId    string       `json:"messageId,omitempty"`    // unique id the API de-duplicates on; a UUID v4 if empty
	PreviousId   string       `json:"previousId"`             // the identity being merged into UserId; required
	UserId       string       `json:"userId,omitempty"`       // the new identity; required
	Timestamp    time.Time    `json:"timestamp,omitzero"`     // when it happened; now if zero
	Context      *Context     `json:"context,omitempty"`      // extra information: IP, user agent, device, ...
	Integrations Integrations `json:"integrations,omitempty"` // which destinations get it
}

func required(typ, field string) error {
	return &FieldError{Type: typ, Name: field, Reason: "required"}
}

func needsIdentity(typ, userID, anonymousID string) error {
	if userID == "" && anonymousID == "" {
		return &FieldError{Type: typ, Name: "UserId", Reason: "UserId or AnonymousId required"}
	}
	return nil
}

// Validate checks that Event, and UserId or AnonymousId, are set.
func (m Track) Validate() error {
	if m.Event == "" {
		return required("analytics.Track", "Event")
	}
	return needsIdentity("analytics.Track", m.UserId, m.AnonymousId)
}

// Validate checks that UserId or AnonymousId is set.
func (m Identify) Validate() error {
	return needsIdentity("analytics.Identify", m.UserId, m.AnonymousId)
}

// Validate checks that UserId or AnonymousId is set.
func (m Page) Validate() error { return needsIdentity("analytics.Page", m.UserId, m.AnonymousId) }

// Validate checks that UserId or AnonymousId is set.
func (m Screen) Validate() error { return needsIdentity("analytics.Screen", m.UserId, m.AnonymousId) }

// Validate checks that GroupId, and UserId or AnonymousId, are set.
func (m Group) Validate() error {
	if m.GroupId == "" {
		return required("analytics.Group", "GroupId")
	}
	return needsIdentity("analytics.Group", m.UserId, m.AnonymousId)
}

// Validate checks that UserId and PreviousId are set.
func (m Alias) Validate() error {
	if m.UserId == "" {
		return required("analytics.Alias", "UserId")
	}
	if m.PreviousId == "" {
		return required("analytics.Alias", "PreviousId")
	}
	return nil
}

// The kept methods return what a Callback gets: a copy of the message
// with Type, MessageId (id when it has none) and Timestamp (ts when zero)
// filled, that shares no memory with the caller's message but the values
// inside its maps: its strings are copies, and its maps and Context are
// new ones holding the same members. So Enqueue keeps nothing the caller
// passed, and the caller's message, strings and maps may stay on its
// stack (see enqueue). Each field is copied by name into a new value: a
// copy of the whole message would make the compiler keep the caller's
// message on the heap.

func (m Track) kept(id string, ts time.Time) Message {
	return Track{Type: "track", MessageId: orClone(m.MessageId, id), AnonymousId: strings.Clone(m.AnonymousId),
		UserId: strings.Clone(m.UserId), Event: strings.Clone(m.Event), Timestamp: keptTime(m.Timestamp, ts),
		Context: m.Context.kept(), Properties: keptMap(m.Properties), Integrations: keptMap(m.Integrations)}
}

func (m Identify) kept(id string, ts time.Time) Message {
	return Identify{Type: "identify", MessageId: orClone(m.MessageId, id), AnonymousId: strings.Clone(m.AnonymousId),
		UserId: strings.Clone(m.UserId), Timestamp: keptTime(m.Timestamp, ts),
		Context: m.Context.kept(), Traits: keptMap(m.Traits), Integrations: keptMap(m.Integrations)}
}

func (m Page) kept(id string, ts time.Time) Message { return m.keptAs("page", id, ts) }

// Screen's fields are Page's: a Screen is kept as a Page is.
func (m Screen) kept(id string, ts time.Time) Message {
	return Screen(Page(m).keptAs("screen", id, ts))
}

// keptAs is Page's and Screen's kept, with typ as the Type.
func (m Page) keptAs(typ, id string, ts time.Time) Page {
	return Page{Type: typ, MessageId: orClone(m.MessageId, id), AnonymousId: strings.Clone(m.AnonymousId),
		UserId: strings.Clone(m.UserId), Name: strings.Clone(m.Name), Category: strings.Clone(m.Category),
		Timestamp: keptTime(m.Timestamp, ts), Context: m.Context.kept(), Properties: keptMap(m.Properties),
		Integrations: keptMap(m.Integrations)}
}

func (m Group) kept(id string, ts time.Time) Message {
	return Group{Type: "group", MessageId: orClone(m.MessageId, id), AnonymousId: strings.Clone(m.AnonymousId),
		UserId: strings.Clone(m.UserId), GroupId: strings.Clone(m.GroupId), Timestamp: keptTime(m.Timestamp, ts),
		Context: m.Context.kept(), Traits: keptMap(m.Traits), Integrations: keptMap(m.Integrations)}
}

func (m Alias) kept(id string, ts time.Time) Message {
	return Alias{Type: "alias", MessageId: orClone(m.MessageId, id), PreviousId: strings.Clone(m.PreviousId),
		UserId: strings.Clone(m.UserId), Timestamp: keptTime(m.Timestamp, ts),
		Context: m.Context.kept(), Integrations: keptMap(m.Integrations)}
}

// orClone returns a copy of s, or def when s is empty.
func orClone(s, def string) string {
	if s == "" {
		return def
	}
	return strings.Clone(s)
}

// keptMap returns a new map with m's members, nil for nil. It is
// maps.Clone but for the compiler: maps.Clone's runtime half is one it
// cannot see into, so passing it the caller's map moves that map to the
// heap.
func keptMap[M ~map[string]any](m M) M {
	if m == nil {
		return nil
	}
	k := make(M, len(m))
	for key, v := range m {
		k[key] = v
	}
	return k
}

// kept returns a copy of c, nil for nil, with maps and an IP of its own
// (the values inside the maps are c's).
func (c *Context) kept() *Context {
	if c == nil {
		return nil
	}
	k := *c
	k.IP, k.Traits, k.Extra = slices.Clone(c.IP), keptMap(c.Traits), keptMap(c.Extra)
	return &k
}

// keptTime returns t, or def when t is zero, as a time made anew from its
// instant and zone: the same instant, in UTC or Local when t is in one of
// them, else in a fixed zone of t's name and offset; without a monotonic
// clock reading when t is the caller's.
func keptTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	k := time.Unix(t.Unix(), int64(t.Nanosecond()))
	switch t.Location() {
	case time.UTC:
		return k.UTC()
	case time.Local:
		return k
	}
	return k.In(time.FixedZone(t.Zone()))
}

// keptBytes estimates the heap that msg, kept for the callback, holds: the
// copy Enqueue keeps, its MessageId, and the maps, slices, boxed values and
// strings it reaches. It counts against MaxQueueBytes, on top of the
// encoded bytes themselves.
//
// The strings are counted by the encoded JSON, which writes each of them
// once, quoted, with its key: less the members every message writes from no
// string of its own (type, timestamp, context.library). The message struct
// is counted here, from msg. The rest is reached: what the encoder
// tallied, with countKept, as it wrote msg: its Context and the slots of
// its maps (by tail), every value a map or slice holds in an interface, by
// boxKept, and every Context.Extra member a field wins over, by valueKept.
// BenchmarkKeptMessage measures the estimate against the real cost:
// TestKeptEstimateFollowsHeap holds it to within a stated factor for the
// shapes users send. Tallied as the encoder goes, it costs a type switch
// per value, where a second walk over msg's maps cost 8 to 10% more per
// Enqueue with a callback (instructions, with 5 and 20 properties).
func keptBytes(msg Message, encoded []byte, reached int) int {
	// The message struct: kept hands back a value of one of the six
	// types, whose size this is.
	return max(len(encoded)-envelopeBytes, 0) + reached + int(reflect.TypeOf(msg).Size())
}

// contextKept is what a copy of c (Context.kept) holds beyond its strings
// and its maps' members: its struct, its IP, and the slots of its Traits
// and Extra. The copy's IP is a clone, as long as c's.
func contextKept(c *Context) int {
	if c == nil {
		return 0
	}
	n := contextBytes + slotsKept(c.Traits) + slotsKept(c.Extra)
	if len(c.IP) > 0 {
		n += max(len(c.IP), ipBytes)
	}
	return n
}

// slotsKept is the memory of m's slots, 0 for a nil map.
func slotsKept(m map[string]any) int {
	if m == nil {
		return 0
	}
	return mapBytes(len(m))
}

// envelopeBytes is what every encoded message writes from no string it
// holds: its type's member, the timestamp (a time.Time, in the struct) and
// context.library (the SDK's constant). The MessageId's member is left
// counted, for the id string.
const envelopeBytes = len(`{"type":"track","timestamp":"2006-01-02T15:04:05.000Z","context":{"library":` + libraryJSON + `}}`)

// The sizes of what a message reaches, in bytes, on a 64-bit platform.
const (
	// contextBytes is a Context struct as the allocator rounds it.
	contextBytes = (int(unsafe.Sizeof(Context{})) + 63) &^ 63
	// boxBytes is what a string takes to be held in an interface (its
	// header, boxed); a bool or nil nothing.
	boxBytes = 16
	// numberBytes is what a number takes to be held in an interface.
	numberBytes = boxBytes / 2
	// sliceBoxBytes is a slice header, boxed.
	sliceBoxBytes = 24
	// ipBytes is a net.IP as net.ParseIP and net.IPv4 make it.
	ipBytes = 16
)

// boxKept is what v, held in an interface (as a map's or a []any's
// value), costs beyond the bytes of its strings, by itself: its box, a
// map's slots, a slice's header and array; not what the members of a map
// or slice reach, which the encoder tallies as it writes each. A
// []string's strings are not boxed, but the encoder writes each through an
// interface and tallies it as boxed: its array counts less them. A type
// the encoder hands to encoding/json counts by otherKept, without looking
// inside.
func boxKept(v any) int {
	switch v := v.(type) {
	case nil, bool:
		return 0
	case string:
		return boxBytes
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return numberBytes
	case map[string]any:
		return slotsKept(v)
	case Properties:
		return slotsKept(v)
	case Traits:
		return slotsKept(v)
	case Integrations:
		return slotsKept(v)
	case []any:
		return sliceBoxBytes + cap(v)*boxBytes
	case []string:
		return sliceBoxBytes + (cap(v)-len(v))*boxBytes
	case time.Time:
		return int(unsafe.Sizeof(v))
	}
	return otherKept(v)
}

// valueKept is what the encoder would tally for v and all it reaches, for
// a value it does not write: a Context.Extra member that a field of the
// Context wins over. depth is how many maps and slices hold v, as the
// encoder counts them. Since the encoder never sees such a value, its
// cycle check does not either: the walk goes maxDepth levels down, as the
// encoder would, and no further, so that a cycle in it (a map that holds
// itself) costs nothing more instead of overflowing the stack.
func valueKept(v any, depth int) int {
	n := boxKept(v)
	var members iter.Seq[any]
	switch v := v.(type) {
	case map[string]any:
		members = maps.Values(v)
	case Properties:
		members = maps.Values(v)
	case Traits:
		members = maps.Values(v)
	case Integrations:
		members = maps.Values(v)
	case []any:
		members = slices.Values(v)
	case []string:
		return n + len(v)*boxBytes // as the encoder tallies its strings
	}
	if members != nil && depth < maxDepth {
		for m := range members {
			n += valueKept(m, depth+1)
		}
	}
	return n
}

// otherKept is boxKept for a type of the caller's: its box, and the
// elements of a slice or the slots of a map, by their size.
func otherKept(v any) int {
	rv := reflect.ValueOf(v)
	n := int(rv.Type().Size())
	switch rv.Kind() {
	case reflect.Slice:
		n += rv.Cap() * int(rv.Type().Elem().Size())
	case reflect.Map:
		n += mapBytes(rv.Len())
	case reflect.Pointer:
		if !rv.IsNil() {
			n += int(rv.Type().Elem().Size())
		}
	}
	return n
}

// mapBytes is the memory of a map of n members of a string key and an
// interface value, as Go (1.24 and later) lays it out: a header and one
// group of 8 slots up to 8 members (336 bytes), then a table of groups of
// 8 slots, a power of two of them, kept at most 7/8 full, at 36 bytes a
// slot. Measured: 336 bytes for 1 to 8 members, 664 for 9 to 14, 1,240 for
// 15 to 28, 2,392 for 29 to 56.
func mapBytes(n int) int {
	if n <= 8 {
		return 336
	}
	slots := 16
	for n > slots/8*7 {
		slots *= 2
	}
	return 88 + 36*slots
}
