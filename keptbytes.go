package analytics

import (
	"reflect"
	"time"
	"unsafe"
)

// keptBytes estimates the heap that msg, kept for the callback, holds: the
// copy Enqueue keeps, its MessageId, and the maps, slices, boxed values and
// strings it reaches. It counts against MaxQueueBytes, on top of the
// encoded bytes themselves (docs/SPEC.md §3).
//
// The strings are counted by the encoded JSON, which writes each of them
// once, quoted, with its key: less the members every message writes from no
// string of its own (type, timestamp, context.library). The rest is the
// message struct, and reached: what the encoder counted as it wrote msg
// with countKept (its Context, every map by its slots, see mapBytes, and
// every value a map or slice holds in an interface by the box it takes).
// BenchmarkKeptMessage measures it against the real cost:
// TestKeptEstimateFollowsHeap holds it to within a stated factor for the
// shapes users send. Counted as the encoder walks msg, it costs a few
// nanoseconds, not a second walk over msg's maps.
func keptBytes(msg Message, encoded []byte, reached int) int {
	// The message struct itself: withDefaults hands back a value of one of
	// the six types, whose size this is.
	return max(len(encoded)-envelopeBytes, 0) + reached + int(reflect.TypeOf(msg).Size())
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

// valueKept is what the encoder's value counts for v with countKept, for
// a value it does not write: a Context.Extra member that a field of the
// Context wins over. A type the encoder hands to encoding/json counts its
// own size, and its length for a slice or map, without looking inside.
// Since the encoder never sees such a value, its cycle check does not
// either: the walk stops maxDepth levels down, as the encoder would, so
// that a cycle in it (a map that holds itself) costs nothing more instead
// of overflowing the stack.
func valueKept(v any) int { return valueKeptAt(v, 0) }

func valueKeptAt(v any, depth int) int {
	switch v := v.(type) {
	case nil, bool:
		return 0
	case string:
		return boxBytes
	case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		return numberBytes
	case map[string]any:
		return mapKept(v, depth)
	case Properties:
		return mapKept(v, depth)
	case Traits:
		return mapKept(v, depth)
	case Integrations:
		return mapKept(v, depth)
	case []any:
		n := sliceBoxBytes + cap(v)*boxBytes
		if depth < maxDepth {
			for _, e := range v {
				n += valueKeptAt(e, depth+1)
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

func mapKept(m map[string]any, depth int) int {
	if m == nil {
		return 0
	}
	n := mapBytes(len(m))
	if depth < maxDepth {
		for _, v := range m {
			n += valueKeptAt(v, depth+1)
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
