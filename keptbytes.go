package analytics

import (
	"reflect"
	"time"
	"unsafe"
)

// keptBytes estimates the heap that msg, kept for the callback, holds: the
// copy Enqueue keeps, its MessageId, and the maps, slices, boxed values and
// strings it reaches. It counts against MaxQueueBytes, on top of the
// encoded bytes themselves.
//
// The strings are counted by the encoded JSON, which writes each of them
// once, quoted, with its key: less the members every message writes from no
// string of its own (type, timestamp, context.library). The rest is
// counted from msg: the message struct, its Context, every map by its slots
// (see mapBytes) and every value a map or slice holds in an interface by
// the box it takes. BenchmarkKeptMessage measures it against the real cost:
// TestKeptEstimateFollowsHeap holds it to within a stated factor for the
// shapes users send. It walks msg's maps once more after the encoder, in an
// Enqueue with a callback only.
func keptBytes(msg Message, encoded []byte) int {
	n := max(len(encoded)-envelopeBytes, 0)
	// The message struct (withDefaults hands back a value of one of the
	// six types, whose size this is) and what it reaches. Its free-form
	// maps are members of the message: at depth 1, as the encoder counts.
	switch m := msg.(type) {
	case Track:
		n += int(unsafe.Sizeof(m)) + contextKept(m.Context) + mapKept(m.Properties, 1) + mapKept(m.Integrations, 1)
	case Identify:
		n += int(unsafe.Sizeof(m)) + contextKept(m.Context) + mapKept(m.Traits, 1) + mapKept(m.Integrations, 1)
	case Page:
		n += int(unsafe.Sizeof(m)) + contextKept(m.Context) + mapKept(m.Properties, 1) + mapKept(m.Integrations, 1)
	case Screen:
		n += int(unsafe.Sizeof(m)) + contextKept(m.Context) + mapKept(m.Properties, 1) + mapKept(m.Integrations, 1)
	case Group:
		n += int(unsafe.Sizeof(m)) + contextKept(m.Context) + mapKept(m.Traits, 1) + mapKept(m.Integrations, 1)
	case Alias:
		n += int(unsafe.Sizeof(m)) + contextKept(m.Context) + mapKept(m.Integrations, 1)
	}
	return n
}

// contextKept is what a Context holds beyond its strings: its struct, its
// IP, its Traits and its Extra. Every Extra member counts, written or not
// (a field of the same name wins on the wire, but the member is kept); the
// encoder writes them inline, as members of the context itself, so they
// are at depth 0.
func contextKept(c *Context) int {
	if c == nil {
		return 0
	}
	n := contextBytes + mapKept(c.Traits, 1)
	if len(c.IP) > 0 {
		n += max(cap(c.IP), ipBytes)
	}
	if c.Extra != nil {
		n += mapBytes(len(c.Extra))
		for _, v := range c.Extra {
			n += valueKept(v, 0)
		}
	}
	return n
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

// valueKept is what v, held in an interface (as a map's or a []any's
// value), costs beyond the bytes of its strings: its box, and for a map or
// a slice the memory it reaches. depth is how many maps and slices hold v,
// as the encoder counts them. A type the encoder hands to encoding/json
// counts its own size, and its length for a slice or map, without looking
// inside (otherKept).
//
// The walk goes maxDepth levels down, as the encoder does, and no further:
// the encoder has refused anything deeper, except in a Context.Extra member
// that a field wins over, which it does not write; there a cycle (a map
// that holds itself) costs nothing more instead of overflowing the stack.
func valueKept(v any, depth int) int {
	switch v := v.(type) {
	case nil, bool:
		return 0
	case string:
		return boxBytes
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return numberBytes
	case map[string]any:
		return mapKept(v, depth+1)
	case Properties:
		return mapKept(v, depth+1)
	case Traits:
		return mapKept(v, depth+1)
	case Integrations:
		return mapKept(v, depth+1)
	case []any:
		n := sliceBoxBytes + cap(v)*boxBytes
		if depth < maxDepth {
			for _, e := range v {
				n += valueKept(e, depth+1)
			}
		}
		return n
	case []string:
		return sliceBoxBytes + cap(v)*boxBytes
	case time.Time:
		return int(unsafe.Sizeof(v))
	}
	return otherKept(v)
}

// mapKept is what m, at depth (counting m itself), holds: its slots, and
// its members, if the encoder goes that deep.
func mapKept(m map[string]any, depth int) int {
	if m == nil {
		return 0
	}
	n := mapBytes(len(m))
	if depth <= maxDepth {
		for _, v := range m {
			n += valueKept(v, depth)
		}
	}
	return n
}

// otherKept is valueKept for a type of the caller's: its box, and the
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
