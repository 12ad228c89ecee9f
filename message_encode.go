package analytics

import (
	"strings"
	"time"
)

// tail writes the members after the head (context, then the free-form
// maps) and closes the object. A value JSON cannot hold becomes a
// *FieldError naming typ, the field and the path inside it (SPEC §2);
// errStop (the message is too large) passes through as it is. With v3Wire,
// a message without a Context has no context member, as in v3 (SPEC §4).
func (o *object) tail(typ string, ctx *Context, maps ...namedMap) error {
	if ctx != nil || !o.e.v3Wire {
		o.name("context")
		if err := o.e.encodeContext(ctx); err != nil {
			return fieldError(typ, "Context", err)
		}
	}
	for _, m := range maps {
		if err := o.fields(m.key, m.m); err != nil {
			return fieldError(typ, m.field, err)
		}
	}
	o.close()
	return nil
}

type namedMap struct {
	key, field string
	m          map[string]any
}

func fieldError(typ, field string, err error) error {
	if err == errStop {
		return err // too large, not invalid
	}
	name := field
	if ve, ok := err.(*valueError); ok {
		name, err = field+ve.path, ve.err
	}
	return &FieldError{Type: typ, Name: name, Reason: strings.TrimPrefix(err.Error(), "json: ")}
}

func (m Track) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.openObject()
	o.head("track", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("event", m.Event)
	return o.tail("analytics.Track", m.Context,
		namedMap{"properties", "Properties", m.Properties},
		namedMap{"integrations", "Integrations", m.Integrations})
}

func (m Identify) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.openObject()
	o.head("identify", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	return o.tail("analytics.Identify", m.Context,
		namedMap{"traits", "Traits", m.Traits},
		namedMap{"integrations", "Integrations", m.Integrations})
}

func (m Page) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.openObject()
	o.head("page", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("name", m.Name)
	o.str("category", m.Category)
	return o.tail("analytics.Page", m.Context,
		namedMap{"properties", "Properties", m.Properties},
		namedMap{"integrations", "Integrations", m.Integrations})
}

func (m Screen) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.openObject()
	o.head("screen", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("name", m.Name)
	o.str("category", m.Category)
	return o.tail("analytics.Screen", m.Context,
		namedMap{"properties", "Properties", m.Properties},
		namedMap{"integrations", "Integrations", m.Integrations})
}

func (m Group) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.openObject()
	o.head("group", m.MessageId, id, orTime(m.Timestamp, ts), m.AnonymousId, m.UserId)
	o.str("groupId", m.GroupId)
	return o.tail("analytics.Group", m.Context,
		namedMap{"traits", "Traits", m.Traits},
		namedMap{"integrations", "Integrations", m.Integrations})
}

func (m Alias) encode(e *encoder, id []byte, ts time.Time) error {
	o := e.openObject()
	o.head("alias", m.MessageId, id, orTime(m.Timestamp, ts), "", m.UserId)
	o.str("previousId", m.PreviousId)
	return o.tail("analytics.Alias", m.Context,
		namedMap{"integrations", "Integrations", m.Integrations})
}

func or(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

func orTime(t, def time.Time) time.Time {
	if t.IsZero() {
		return def
	}
	return t
}
