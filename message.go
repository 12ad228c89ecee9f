package analytics

import (
	"reflect"
	"time"
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
	// withDefaults returns a copy with Type, MessageId and Timestamp
	// filled: the message a Callback gets.
	withDefaults(id string, ts time.Time) Message
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

func (m Track) withDefaults(id string, ts time.Time) Message {
	m.Type, m.MessageId, m.Timestamp = "track", or(m.MessageId, id), orTime(m.Timestamp, ts)
	return m
}

func (m Identify) withDefaults(id string, ts time.Time) Message {
	m.Type, m.MessageId, m.Timestamp = "identify", or(m.MessageId, id), orTime(m.Timestamp, ts)
	return m
}

func (m Page) withDefaults(id string, ts time.Time) Message {
	m.Type, m.MessageId, m.Timestamp = "page", or(m.MessageId, id), orTime(m.Timestamp, ts)
	return m
}

func (m Screen) withDefaults(id string, ts time.Time) Message {
	m.Type, m.MessageId, m.Timestamp = "screen", or(m.MessageId, id), orTime(m.Timestamp, ts)
	return m
}

func (m Group) withDefaults(id string, ts time.Time) Message {
	m.Type, m.MessageId, m.Timestamp = "group", or(m.MessageId, id), orTime(m.Timestamp, ts)
	return m
}

func (m Alias) withDefaults(id string, ts time.Time) Message {
	m.Type, m.MessageId, m.Timestamp = "alias", or(m.MessageId, id), orTime(m.Timestamp, ts)
	return m
}
