package analytics

import (
	"encoding"
	"encoding/json"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/dualpath/analytics-go/internal/defaults"
)

// maxDepth bounds the nesting of maps and slices in a message. Deeper means
// a cycle, or a payload no tracking API accepts.
const maxDepth = 64

// encoder appends the JSON of one message to buf. Message fields and the
// common value types (strings, numbers, bools, maps of them, slices) are
// written directly; anything else goes through encoding/json. Map keys are
// sorted, as encoding/json does, so the same message always encodes to the
// same bytes.
//
// Encoding stops as soon as the message is known to be over MaxMessageBytes
// (docs/SPEC.md §2), so that refusing a message costs in proportion to the
// limit, not to the message: a string, map or slice whose least possible
// encoding does not fit in what is left is refused before it is walked
// (before a map's keys are sorted), and a map or slice stops at the member
// that passes the limit. A value refused so is not written, and its write
// returns no error: over records the message as too large (fits), the
// walks of maps and slices stop at it (stopped), and checkSize turns it
// into ErrMessageTooLarge, whatever else the encoding returned.
type encoder struct {
	buf   []byte
	pairs []pair // scratch for sorting map members
	depth int
	// id is the messageId written for a message without one: a UUID v4
	// that newID draws from random and writes here in its text form.
	id [36]byte
	// random is this encoder's own buffer of crypto/rand bytes (not
	// uuid.EnableRandPool's, which the whole process shares under a lock).
	random randomBytes
	// over, once the message is known to be too large, is a lower bound
	// on its encoded size; 0 until then.
	over int
	// times writes timestamps; those of a burst share their second's text.
	times timeCache
	// v3Wire writes the message as segmentio/analytics-go v3 did
	// (WithV3Wire): no context.library, a context only when the message
	// has one, timestamps as encoding/json writes a time.Time. The caller
	// sets it before each message (reset).
	v3Wire bool
	// countKept makes the encoder tally in kept, for keptBytes, what each
	// value it writes costs the message kept for the callback (boxKept),
	// and each Context.Extra member it leaves unwritten (valueKept): the
	// estimate's rules are message.go's (keptBytes), the encoder only shows it the
	// values as it meets them. The caller sets it before each
	// message (reset).
	countKept bool
	kept      int
}

// pair is one member of a map being written.
type pair struct {
	k string
	v any
}

var encoders = sync.Pool{New: func() any { return &encoder{buf: make([]byte, 0, 1024)} }}

// fits reports whether n more bytes keep the message within
// MaxMessageBytes. When they do not, it records the message as too large.
func (e *encoder) fits(n int) bool {
	if len(e.buf)+n <= MaxMessageBytes {
		return true
	}
	if e.over == 0 {
		e.over = len(e.buf) + n
	}
	return false
}

// stopped reports whether the message is known to be too large: already
// over MaxMessageBytes, or found so by fits.
func (e *encoder) stopped() bool { return !e.fits(0) || e.over > 0 }

func getEncoder() *encoder { return encoders.Get().(*encoder) }

func putEncoder(e *encoder) {
	if cap(e.buf) <= 64<<10 { // do not pin a huge buffer in the pool
		clear(e.pairs[:cap(e.pairs)])
		e.v3Wire, e.countKept = false, false
		encoders.Put(e)
	}
}

// object writes the members of one JSON object, inserting commas.
type object struct {
	e     *encoder
	empty bool
}

func (o *object) close() { o.e.buf = append(o.e.buf, '}') }

// key writes a member name from the caller's data, escaped as any JSON
// string, with the comma before it when needed and the colon after it.
func (o *object) key(k string) {
	// A plain key that fits, comma included, is written as name writes
	// it; any other, by string, which escapes it or finds it too large.
	if len(o.e.buf)+len(k)+3 <= MaxMessageBytes && plainPrefix(k) == len(k) {
		o.name(k)
		return
	}
	if !o.empty {
		o.e.buf = append(o.e.buf, ',')
	}
	o.empty = false
	o.e.string(k)
	o.e.buf = append(o.e.buf, ':')
}

// name writes a member name that needs no escaping (the SDK's own).
func (o *object) name(k string) {
	b := o.e.buf // a local: appends to o.e.buf would reload it each time
	if !o.empty {
		b = append(b, ',')
	}
	o.empty = false
	b = append(b, '"')
	b = append(b, k...)
	o.e.buf = append(b, '"', ':')
}

// str writes a string member, omitted when empty.
func (o *object) str(k, v string) {
	if v != "" {
		o.name(k)
		o.e.string(v)
	}
}

// appendPlainMember appends the member "k":"v" to b, after a comma unless
// it is the first: k and v need no escaping, and the caller has checked
// that they fit (or writes a generated messageId, which does).
func appendPlainMember[V string | []byte](b []byte, first bool, k string, v V) []byte {
	if !first {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, k...)
	b = append(b, '"', ':', '"')
	b = append(b, v...)
	return append(b, '"')
}

// time writes a timestamp member in the wire layout, omitted when zero:
// UTC with milliseconds, or with v3Wire as encoding/json writes t (RFC
// 3339 in t's location, with as many fraction digits as t has).
func (o *object) time(k string, t time.Time) {
	if !t.IsZero() {
		o.name(k)
		b := append(o.e.buf, '"')
		if o.e.v3Wire {
			b = t.AppendFormat(b, time.RFC3339Nano)
		} else {
			b = o.e.times.append(b, t)
		}
		o.e.buf = append(b, '"')
	}
}

// timeCache writes times in the wire layout, defaults.TimeLayout, keeping
// the text of the second it wrote last: the events of a burst share it,
// and a time costs a copy and three digits instead of a calendar
// computation. The zero value is ready to use. Measured against
// AppendFormat on every call (issue 26): Enqueue 671 against 854 ns,
// EncodeTrack 376 against 541.
type timeCache struct {
	sec    int64                          // the Unix second of text
	text   [len(defaults.TimeLayout)]byte // that second's text, milliseconds aside
	filled bool
}

// append appends t as t.UTC().AppendFormat(dst, defaults.TimeLayout) does.
func (c *timeCache) append(dst []byte, t time.Time) []byte {
	t = t.UTC()
	if year := t.Year(); year < 0 || year > 9999 {
		return t.AppendFormat(dst, defaults.TimeLayout) // beyond four digits: not cached
	}
	if sec := t.Unix(); !c.filled || sec != c.sec {
		t.AppendFormat(c.text[:0], defaults.TimeLayout)
		c.sec, c.filled = sec, true
	}
	const secondLen = len("2006-01-02T15:04:05.")
	ms := t.Nanosecond() / int(time.Millisecond)
	dst = append(dst, c.text[:secondLen]...)
	return append(dst, byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// object writes a map with sorted keys, so that the same map always
// encodes to the same bytes.
func (e *encoder) object(m map[string]any) error {
	if e.depth++; e.depth > maxDepth {
		return fmt.Errorf("nested more than %d levels deep (a cycle?)", maxDepth)
	}
	// Each member takes at least `"":0` and a comma.
	if !e.fits(5*len(m) + 1) {
		return nil
	}
	if len(m) <= smallMap {
		return e.smallObject(m)
	}
	start := len(e.pairs)
	for k, v := range m {
		e.pairs = append(e.pairs, pair{k, v})
	}
	pairs := e.pairs[start:]
	slices.SortFunc(pairs, func(a, b pair) int { return strings.Compare(a.k, b.k) })
	err := e.members(pairs, nil)
	clear(pairs)
	e.pairs = e.pairs[:start]
	return err
}

// smallObject is object for a map of at most smallMap members, the most
// common: they are gathered in an array on the stack and sorted by index
// (keyOrder), so that neither the gathering nor the sort stores a pointer
// where the collector must see it (a write barrier each), and nothing is
// left to clear. e.depth is counted and m fits, as object checked.
func (e *encoder) smallObject(m map[string]any) error {
	var members [smallMap]pair
	n := 0
	for k, v := range m {
		if n == smallMap {
			break // m grew while read: a data race of the caller's
		}
		members[n] = pair{k, v}
		n++
	}
	var order [smallMap]uint8
	keyOrder(members[:n], &order)
	return e.members(members[:n], order[:n])
}

// members writes an object of the members of a map, in the order of
// order (their indices), or as they are when order is nil, and ends the
// depth object counted.
func (e *encoder) members(members []pair, order []uint8) error {
	b := append(e.buf, '{')
	for j := range members {
		p := &members[j]
		if order != nil {
			p = &members[order[j]]
		}
		// A plain key with a plain string value that fit, the most common
		// member, is written at once into b, a local: one store of e.buf
		// per map instead of several per member. Measured against the
		// general path (issue 26): that costs Enqueue 6-8%.
		if v, ok := p.v.(string); ok && len(b)+len(p.k)+len(v)+6 <= MaxMessageBytes &&
			plainPrefix(p.k) == len(p.k) && plainPrefix(v) == len(v) {
			if e.countKept {
				e.kept += boxKept(p.v)
			}
			b = appendPlainMember(b, j == 0, p.k, v)
			continue
		}
		e.buf = b
		o := object{e: e, empty: j == 0}
		o.key(p.k)
		if err := e.value(p.v); err != nil {
			return within("["+strconv.Quote(p.k)+"]", err)
		}
		if e.stopped() {
			return nil
		}
		b = e.buf
	}
	e.buf = append(b, '}')
	e.depth--
	return nil
}

// smallMap is the most members of a map that object sorts on the stack.
const smallMap = 8

// keyOrder writes into order the indices of p's members (at most
// smallMap) sorted by key. An insertion sort with the comparison inlined
// orders a few members several times faster than the library's sort
// through a comparison function; it compares the keys' first 8 bytes as
// one number (keyPrefix), the strings only where those are equal, and
// moves indices, not members. Measured against slices.SortFunc of the
// pairs by key (issue 26): that costs Enqueue and EncodeTrack 6-8%.
func keyOrder(p []pair, order *[smallMap]uint8) {
	var pre [smallMap]uint64
	for i := range p {
		pre[i] = keyPrefix(p[i].k)
	}
	for i := range p {
		// The indices before i's place that sort after it move up one,
		// and it goes in the gap.
		xp, j := pre[i], i
		for ; j > 0; j-- {
			q := order[j-1]
			if xp > pre[q] || xp == pre[q] && p[i].k > p[q].k {
				break
			}
			order[j] = q
		}
		order[j] = uint8(i)
	}
}

// keyPrefix is k's first 8 bytes as a big-endian number, zero-padded: a
// < b between the prefixes of two keys means the keys sort so too, and
// equal prefixes leave the order to the strings.
func keyPrefix(k string) uint64 {
	n := len(k)
	switch {
	case n >= 8:
		return bits.ReverseBytes64(word(k))
	case n >= 4:
		// The first 4 bytes and the last 4, overlapping: the bytes both
		// hold are the same, so or-ing them is exact.
		return uint64(bits.ReverseBytes32(word4(k)))<<32 | uint64(bits.ReverseBytes32(word4(k[n-4:])))<<(8*(8-n))
	}
	var x uint64
	for i := range n {
		x |= uint64(k[i]) << (56 - 8*i)
	}
	return x
}

func (e *encoder) array(n int, at func(i int) any) error {
	if e.depth++; e.depth > maxDepth {
		return fmt.Errorf("nested more than %d levels deep (a cycle?)", maxDepth)
	}
	// Each element takes at least one byte and a comma.
	if !e.fits(2*n + 1) {
		return nil
	}
	e.buf = append(e.buf, '[')
	for i := range n {
		if i > 0 {
			e.buf = append(e.buf, ',')
		}
		if err := e.value(at(i)); err != nil {
			return within("["+strconv.Itoa(i)+"]", err)
		}
		if e.stopped() {
			return nil
		}
	}
	e.buf = append(e.buf, ']')
	e.depth--
	return nil
}

// within prefixes the path of err, a value JSON cannot hold, with one more
// step from the outside. The error becomes a *FieldError at the value
// itself, its Reason err's text and its Name the path built as the
// encoder unwinds, such as ["items"][2]; fieldError adds the field and
// the message type.
func within(step string, err error) *FieldError {
	fe, ok := err.(*FieldError)
	if !ok {
		fe = &FieldError{Reason: strings.TrimPrefix(err.Error(), "json: ")}
	}
	fe.Name = step + fe.Name
	return fe
}

// value writes any JSON value. The common types are written directly.
func (e *encoder) value(v any) error {
	if e.countKept {
		e.kept += boxKept(v)
	}
	switch v := v.(type) {
	case string:
		e.string(v)
	case nil:
		e.buf = append(e.buf, "null"...)
	case bool:
		e.buf = strconv.AppendBool(e.buf, v)
	case int:
		e.buf = strconv.AppendInt(e.buf, int64(v), 10)
	case int8, int16, int32, int64:
		e.buf = strconv.AppendInt(e.buf, reflect.ValueOf(v).Int(), 10)
	case uint, uint8, uint16, uint32, uint64:
		e.buf = strconv.AppendUint(e.buf, reflect.ValueOf(v).Uint(), 10)
	case float64:
		return e.float(v, 64)
	case float32:
		return e.float(float64(v), 32)
	case map[string]any:
		return e.object(v)
	case Properties:
		return e.object(v)
	case Traits:
		return e.object(v)
	case Integrations:
		return e.object(v)
	case []any:
		return e.array(len(v), func(i int) any { return v[i] })
	case []string:
		return e.array(len(v), func(i int) any { return v[i] })
	case time.Time:
		// As encoding/json writes it, so values round-trip.
		b, err := v.MarshalJSON()
		if err != nil {
			return err
		}
		e.buf = append(e.buf, b...)
	default:
		return e.marshal(v)
	}
	return nil
}

// marshal falls back on encoding/json, which reports channels, funcs, NaN
// inside structs and pointer cycles as errors. A string, map or slice too
// long to fit is refused before encoding/json walks it; anything else is
// measured once marshalled, and not copied if it does not fit.
func (e *encoder) marshal(v any) error {
	if e.over > 0 {
		return nil
	}
	// The bound holds only where encoding/json writes the value itself.
	if n := leastMarshalled(v); len(e.buf)+n > MaxMessageBytes && !customJSON(reflect.TypeOf(v)) {
		e.over = len(e.buf) + n
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if !e.fits(len(b)) {
		return nil
	}
	e.buf = append(e.buf, b...)
	return nil
}

// leastMarshalled is a lower bound on the length of json.Marshal(v) for a
// v that encoding/json writes itself, read from its length alone: a string
// writes at least its bytes (a json.Number writes them unquoted); a slice
// or array of n elements at least n+2 (n bytes are 4n/3 in base64); a map
// of n members at least 5n+1, its keys being strings or integers.
func leastMarshalled(v any) int {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.String:
		return rv.Len()
	case reflect.Slice, reflect.Array:
		return rv.Len() + 2
	case reflect.Map:
		switch rv.Type().Key().Kind() {
		case reflect.String, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
			reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
			return 5*rv.Len() + 1
		}
	}
	return 0
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// customJSON reports whether a method of t writes its JSON, so that the
// length of a value of t bounds nothing.
func customJSON(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// float writes f as encoding/json does, refusing NaN and ±Inf.
func (e *encoder) float(f float64, bits int) error {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return fmt.Errorf("json: unsupported value: %v", strconv.FormatFloat(f, 'g', -1, bits))
	}
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) ||
		bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	e.buf = strconv.AppendFloat(e.buf, f, format, -1, bits)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(e.buf)
		if n >= 4 && e.buf[n-4] == 'e' && e.buf[n-3] == '-' && e.buf[n-2] == '0' {
			e.buf[n-2] = e.buf[n-1]
			e.buf = e.buf[:n-1]
		}
	}
	return nil
}

const hexDigits = "0123456789abcdef"

// plain holds true for the bytes a JSON string holds as they are:
// printable ASCII except '"' and '\\'. One lookup per byte instead of four
// comparisons.
var plain = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// plainPrefix returns the length of the longest prefix of s that a JSON
// string holds as it is (plain bytes). It looks at 8 bytes at a time, then
// byte by byte from the first word that has a byte to escape.
//
// A string of 4 to 7 bytes is one test: its first 4 bytes and its last 4
// (overlapping) make the word. Past the last whole word of a longer one,
// the 8 bytes that end it (overlapping the word before) are one more.
// Only a string that has a byte to escape, or is under 4 bytes, is looked
// at byte by byte. Measured against a byte loop over plain (issue 26):
// about the same on short strings, and the loop 25% slower on an event
// of long ones (BenchmarkEncodeTrackLongStrings: 485 against 605 ns).
func plainPrefix(s string) int {
	n, i := len(s), 0
	switch {
	case n >= 8:
		for ; i+8 <= n; i += 8 {
			if !plainWord(word(s[i : i+8])) {
				break
			}
		}
		if i == n || i == n&^7 && plainWord(word(s[n-8:])) {
			return n
		}
	case n >= 4:
		if plainWord(uint64(word4(s[:4])) | uint64(word4(s[n-4:]))<<32) {
			return n
		}
	}
	for i < n && plain[s[i]] {
		i++
	}
	return i
}

// word reads the first 8 bytes of w as a little-endian uint64: one load,
// with the one bounds check of w[7].
func word(w string) uint64 {
	_ = w[7]
	return uint64(w[0]) | uint64(w[1])<<8 | uint64(w[2])<<16 | uint64(w[3])<<24 |
		uint64(w[4])<<32 | uint64(w[5])<<40 | uint64(w[6])<<48 | uint64(w[7])<<56
}

// word4 reads the first 4 bytes of w as a little-endian uint32.
func word4(w string) uint32 {
	_ = w[3]
	return uint32(w[0]) | uint32(w[1])<<8 | uint32(w[2])<<16 | uint32(w[3])<<24
}

// plainWord reports whether the 8 bytes of w are all plain: none at or
// above 0x80, none below 0x20, none '"' or '\\'. The tests are the classic
// word-at-a-time ones (has a zero byte, has a byte less than n), exact for
// the word as a whole.
func plainWord(w uint64) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	bad := w | // a byte at or above 0x80
		(w-ones*0x20) & ^w | // a byte below 0x20
		(quote-ones) & ^quote | // a '"'
		(backslash-ones) & ^backslash // a '\\'
	return bad&highs == 0
}

// string writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as in
// encoding/json; U+2028 and U+2029 are escaped so the output is safe in
// JavaScript too.
func (e *encoder) string(s string) {
	// Escaping never makes a string shorter: one too long to fit is not
	// written, and the message is refused.
	if !e.fits(len(s) + 2) {
		return
	}
	// Most strings are plain ASCII: copy them in one go.
	i := plainPrefix(s)
	if i == len(s) {
		b := append(e.buf, '"')
		b = append(b, s...)
		e.buf = append(b, '"')
		return
	}
	e.escaped(s, i)
}

// escaped writes s as a JSON string, s[:i] being plain; string has
// checked that it fits.
func (e *encoder) escaped(s string, i int) {
	e.buf = append(e.buf, '"')
	start := 0
	for i < len(s) {
		c := s[i]
		if c < utf8.RuneSelf && plain[c] {
			i++
			continue
		}
		// A byte to escape decodes as itself; a byte that is not UTF-8, as
		// RuneError of size 1.
		r, size := utf8.DecodeRuneInString(s[i:])
		if size > 1 && r != '\u2028' && r != '\u2029' {
			i += size // a rune written as it is
			continue
		}
		e.buf = append(e.buf, s[start:i]...)
		switch r {
		case '"', '\\':
			e.buf = append(e.buf, '\\', c)
		case '\n':
			e.buf = append(e.buf, '\\', 'n')
		case '\r':
			e.buf = append(e.buf, '\\', 'r')
		case '\t':
			e.buf = append(e.buf, '\\', 't')
		case '\u2028', '\u2029':
			e.buf = append(e.buf, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		case utf8.RuneError: // a byte that is not UTF-8 (size 1)
			e.buf = append(e.buf, `\ufffd`...)
		default: // a control byte
			e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
		}
		i += size
		start = i
	}
	e.buf = append(e.buf, s[start:]...)
	e.buf = append(e.buf, '"')
}
