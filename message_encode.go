package analytics

import (
	"crypto/rand"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"
)

// reset readies e for the next message.
func (e *encoder) reset() {
	e.buf, e.pairs, e.depth, e.over, e.kept = e.buf[:0], e.pairs[:0], 0, 0, 0
}

// checkSize returns err, the encoding's, or ErrMessageTooLarge for a
// message found too large before its end or over MaxMessageBytes once
// written.
func (e *encoder) checkSize(err error) error {
	switch {
	case e.over > 0:
		// Found too large before the end: what is left unwritten would
		// only add to the size.
		return fmt.Errorf("%w: at least %d bytes, the limit is %d", ErrMessageTooLarge, e.over, MaxMessageBytes)
	case err == nil && len(e.buf) > MaxMessageBytes:
		return fmt.Errorf("%w: %d bytes encoded, the limit is %d", ErrMessageTooLarge, len(e.buf), MaxMessageBytes)
	}
	return err
}

// newID writes a new random (version 4, RFC 9562) UUID into e.id.
func (e *encoder) newID() {
	// What uuid.NewRandomFromReader does, without handing u to an
	// io.Reader, through which it would escape to the heap.
	var u uuid.UUID
	e.random.fill(u[:])
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // the RFC 9562 variant
	// As u.String() writes it, without allocating a string per id: in
	// hex, with a dash before bytes 4, 6, 8 and 10.
	j := 0
	for i, b := range u {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			e.id[j] = '-'
			j++
		}
		e.id[j], e.id[j+1] = hexDigits[b>>4], hexDigits[b&0xF]
		j += 2
	}
}

// randomBytes hands out crypto/rand bytes, read from the system
// idsPerRead messageIds at a time. It is what bufio.Reader would be over
// crypto/rand.Reader, for less per id, and it clears the bytes it hands
// out: an id's randomness is used once and not kept. Measured against
// one crypto/rand read per id (issue 26): that costs Enqueue about 5%,
// EncodeTrack 7%.
type randomBytes struct {
	buf    [idsPerRead * len(uuid.UUID{})]byte
	unread int // the last unread bytes of buf
}

// idsPerRead is how many messageIds one read of crypto/rand serves.
const idsPerRead = 16

// fill fills p (at most the buffer's length) from the buffer, and the
// buffer from crypto/rand when what is left of it is too short.
func (r *randomBytes) fill(p []byte) {
	if r.unread < len(p) {
		_, _ = rand.Read(r.buf[:]) // crypto/rand.Read never fails: it crashes the program instead
		r.unread = len(r.buf)
	}
	from := len(r.buf) - r.unread
	n := copy(p, r.buf[from:])
	clear(r.buf[from : from+n])
	r.unread -= n
}

func (m Track) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.head("track", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("event", m.Event)
	return o.tail("analytics.Track", m.Context, m.Properties, nil, m.Integrations)
}

func (m Identify) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.head("identify", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	return o.tail("analytics.Identify", m.Context, nil, m.Traits, m.Integrations)
}

func (m Page) encode(e *encoder, id []byte, ts time.Time) error {
	return m.encodeAs(e, "page", "analytics.Page", id, ts)
}

// Screen's fields are Page's: a Screen is written as a Page is.
func (m Screen) encode(e *encoder, id []byte, ts time.Time) error {
	return Page(m).encodeAs(e, "screen", "analytics.Screen", id, ts)
}

// encodeAs is Page's and Screen's encode, with typ as the type and goType
// naming the Go type in errors.
func (m Page) encodeAs(e *encoder, typ, goType string, id []byte, ts time.Time) error {
	o := e.head(typ, m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("name", m.Name)
	o.str("category", m.Category)
	return o.tail(goType, m.Context, m.Properties, nil, m.Integrations)
}

func (m Group) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.head("group", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("groupId", m.GroupId)
	return o.tail("analytics.Group", m.Context, nil, m.Traits, m.Integrations)
}

func (m Alias) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.head("alias", m.MessageId, id, orTime(m.Timestamp, ts), "", m.UserId)
	o.str("previousId", m.PreviousId)
	return o.tail("analytics.Alias", m.Context, nil, nil, m.Integrations)
}

// head opens a message's object and writes the members every message
// starts with: the message's own MessageId, or else genID.
func (e *encoder) head(typ, id string, genID []byte, ts time.Time, anonymousID, userID string) object {
	// The first member, and the SDK's own: its name and value need no
	// escaping, and a message this short fits.
	b := append(e.buf, `{"type":"`...)
	b = append(b, typ...)
	e.buf = append(b, '"')
	o := object{e: e}
	if id != "" {
		o.str("messageId", id)
	} else {
		e.buf = appendPlainMember(e.buf, false, "messageId", genID)
	}
	o.time("timestamp", ts)
	o.str("anonymousId", anonymousID)
	o.str("userId", userID)
	return o
}

// tail writes the members after the head (context, then the free-form
// maps, those a message has not being nil) and closes the object. A value
// JSON cannot hold becomes a *FieldError naming typ, the field and the
// path inside it. With v3Wire, a message without a Context has no context
// member, as in v3. With countKept, it tallies what the message kept for
// the callback holds beyond its strings and its maps' members: its
// Context and the slots of its maps (see keptBytes).
func (o *object) tail(typ string, ctx *Context, properties Properties, traits Traits, integrations Integrations) error {
	e := o.e
	if e.countKept {
		e.kept += contextKept(ctx) + slotsKept(properties) + slotsKept(traits) + slotsKept(integrations)
	}
	switch {
	case ctx == nil && !e.v3Wire:
		// The most common context, the SDK's library alone: one append.
		o.name("context")
		e.buf = append(e.buf, libraryContextJSON...)
	case ctx != nil:
		o.name("context")
		if err := e.encodeContext(ctx); err != nil {
			return fieldError(typ, "Context", err)
		}
	}
	for i, m := range [...]map[string]any{properties, traits, integrations} {
		if len(m) == 0 {
			continue
		}
		o.name(messageMaps[i].key)
		if err := e.object(m); err != nil {
			return fieldError(typ, messageMaps[i].field, err)
		}
	}
	o.close()
	return nil
}

// messageMaps are the JSON keys and the Go field names of a message's
// maps, in the order tail writes them. The names are constants, so that
// an error keeps no string of the caller's message (Enqueue keeps none;
// see enqueue).
var messageMaps = [...]struct{ key, field string }{
	{"properties", "Properties"}, {"traits", "Traits"}, {"integrations", "Integrations"},
}

// fieldError is err, of the field of a message of type typ, as the
// *FieldError within makes it.
func fieldError(typ, field string, err error) error {
	fe := within(field, err)
	fe.Type = typ
	return fe
}

// encodeContext writes the context c, not nil (tail writes a message's
// without one): the SDK's library, then the caller's members. With v3Wire
// the library is the batch's alone (the envelope's context), and a library
// the caller set is written as it is, as v3 did.
func (e *encoder) encodeContext(c *Context) error {
	e.buf = append(e.buf, '{')
	w := contextWriter{o: object{e: e, empty: true}}
	if !e.v3Wire {
		w.member("library")
		e.buf = append(e.buf, libraryJSON...)
	}
	contextPart(&w, "app", c.App)
	contextPart(&w, "campaign", c.Campaign)
	contextPart(&w, "device", c.Device)
	if e.v3Wire {
		contextPart(&w, "library", c.Library)
	}
	contextPart(&w, "location", c.Location)
	contextPart(&w, "network", c.Network)
	contextPart(&w, "os", c.OS)
	contextPart(&w, "page", c.Page)
	contextPart(&w, "referrer", c.Referrer)
	contextPart(&w, "screen", c.Screen)
	if w.err != nil {
		return w.err
	}
	if len(c.IP) > 0 {
		w.str("ip", c.IP.String())
	}
	if c.Direct {
		w.member("direct")
		e.buf = append(e.buf, "true"...)
	}
	w.str("locale", c.Locale)
	w.str("groupId", c.GroupID)
	w.str("timezone", c.Timezone)
	w.str("userAgent", c.UserAgent)
	if len(c.Traits) > 0 {
		w.member("traits")
		if err := e.object(c.Traits); err != nil {
			return within(".Traits", err)
		}
	}
	if len(c.Extra) > 0 {
		written := w.written[:w.n]
		// Members other than those written take at least `,"":0` each:
		// refuse before sorting their keys.
		if !e.fits(5 * (len(c.Extra) - len(written))) {
			return nil
		}
		keys := slices.AppendSeq(make([]string, 0, len(c.Extra)), maps.Keys(c.Extra))
		slices.Sort(keys)
		for _, k := range keys {
			if slices.Contains(written, k) {
				if e.countKept {
					e.kept += valueKept(c.Extra[k], 0) // kept, though a field wins on the wire
				}
				continue
			}
			w.o.key(k)
			if err := e.value(c.Extra[k]); err != nil {
				return within(".Extra["+strconv.Quote(k)+"]", err)
			}
		}
	}
	w.o.close()
	return nil
}

// contextWriter writes the members of a Context, keeping the names of
// those written, which win over the Extra members of the same names, and
// the first error of its struct members.
type contextWriter struct {
	o       object
	written [len(contextFields)]string
	n       int // of written
	err     error
}

// member writes the name of a member, and keeps it.
func (w *contextWriter) member(name string) {
	w.written[w.n] = name
	w.n++
	w.o.name(name)
}

// str writes a string member, unless empty.
func (w *contextWriter) str(name, v string) {
	if v != "" {
		w.member(name)
		w.o.e.string(v)
	}
}

// contextPart writes the struct member name of a Context, unless it is
// zero or an earlier one failed, through encoding/json: only a member that
// is set is boxed, each a small allocation.
func contextPart[T comparable](w *contextWriter, name string, v T) {
	var zero T
	if w.err != nil || v == zero {
		return
	}
	w.member(name)
	if err := w.o.e.marshal(v); err != nil {
		w.err = within("."+name, err)
	}
}

// libraryJSON is context.library as every message carries it.
const libraryJSON = `{"name":"analytics-go","version":"` + Version + `"}`

// libraryContextJSON is the context tail writes for a message without
// one (the library alone), as one constant, and the batch's context on the
// default wire.
const libraryContextJSON = `{"library":` + libraryJSON + `}`

// v3LibraryJSON is context.library as segmentio/analytics-go v3 sent it on
// each batch, whatever its release (v3.3.0 still said 3.0.0): the batch's
// library on the v3 wire (WithV3Wire).
const v3LibraryJSON = `{"name":"analytics-go","version":"3.0.0"}`

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
