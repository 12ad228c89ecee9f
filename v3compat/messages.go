package analytics

import (
	"errors"
	"fmt"
	"reflect"

	root "github.com/dualpath/analytics-go"
)

// Message is a message Enqueue takes: one of Track, Identify, Page, Screen,
// Group and Alias, or a pointer to one, of this package or of the root
// package. As in v3, any type with a Validate method implements it, and
// Enqueue refuses the types that are not those.
type Message interface {
	// Validate returns nil when the message is valid, else a FieldError
	// naming the field at fault.
	Validate() error
}

// Callback receives the final outcome of every message Enqueue accepted:
// exactly one call per message. The calls come from the client's upload
// goroutines, several at once; they must be safe for concurrent use and
// return quickly. The message is the one enqueued, with its MessageId and
// Timestamp filled (and DefaultContext merged); the error of Failure is the
// root package's *BatchError.
type Callback interface {
	// Success is called when the tracking API accepted msg (a 2xx).
	Success(msg Message)
	// Failure is called when msg will not be delivered; err says why.
	Failure(msg Message, err error)
}

// The six message types are the root package's structs, as types of
// their own so that their Validate returns a FieldError value, as v3's did:
// code that calls Validate and asserts err.(analytics.FieldError) works. A
// conversion, such as root.Track(m) with the root package imported as root,
// turns one into the root's type at no cost, and back.
type (
	// Track records an action a user performed. It needs Event, and
	// UserId or AnonymousId.
	Track root.Track
	// Identify ties a user to their traits. It needs UserId or
	// AnonymousId.
	Identify root.Identify
	// Page records a page view. It needs UserId or AnonymousId.
	Page root.Page
	// Screen records a screen view in an app. It needs UserId or
	// AnonymousId.
	Screen root.Screen
	// Group ties a user to a group (an account, a company). It needs
	// GroupId, and UserId or AnonymousId.
	Group root.Group
	// Alias merges two user identities. It needs UserId and PreviousId.
	Alias root.Alias
)

// Validate returns a FieldError when Event, or both UserId and AnonymousId,
// are missing.
func (m Track) Validate() error { return validate(root.Track(m)) }

// Validate returns a FieldError when both UserId and AnonymousId are
// missing.
func (m Identify) Validate() error { return validate(root.Identify(m)) }

// Validate returns a FieldError when both UserId and AnonymousId are
// missing.
func (m Page) Validate() error { return validate(root.Page(m)) }

// Validate returns a FieldError when both UserId and AnonymousId are
// missing.
func (m Screen) Validate() error { return validate(root.Screen(m)) }

// Validate returns a FieldError when GroupId, or both UserId and
// AnonymousId, are missing.
func (m Group) Validate() error { return validate(root.Group(m)) }

// Validate returns a FieldError when UserId or PreviousId is missing.
func (m Alias) Validate() error { return validate(root.Alias(m)) }

// The helpers and the context are the root package's.
type (
	// Properties are the free-form properties of a Track, Page or Screen,
	// with chainable setters.
	Properties = root.Properties
	// Traits are the free-form traits of an Identify or Group, with
	// chainable setters.
	Traits = root.Traits
	// Integrations selects the destinations of a message.
	Integrations = root.Integrations
	// Product is one product of the e-commerce spec, for SetProducts.
	Product = root.Product

	// Context is the message's context object, GroupID and Extra included.
	Context = root.Context
	// AppInfo is context.app.
	AppInfo = root.AppInfo
	// CampaignInfo is context.campaign.
	CampaignInfo = root.CampaignInfo
	// DeviceInfo is context.device.
	DeviceInfo = root.DeviceInfo
	// LibraryInfo is context.library, which the client always sets itself.
	LibraryInfo = root.LibraryInfo
	// LocationInfo is context.location.
	LocationInfo = root.LocationInfo
	// NetworkInfo is context.network.
	NetworkInfo = root.NetworkInfo
	// OSInfo is context.os.
	OSInfo = root.OSInfo
	// PageInfo is context.page.
	PageInfo = root.PageInfo
	// ReferrerInfo is context.referrer.
	ReferrerInfo = root.ReferrerInfo
	// ScreenInfo is context.screen.
	ScreenInfo = root.ScreenInfo
)

// NewProperties returns empty Properties.
func NewProperties() Properties { return root.NewProperties() }

// NewTraits returns empty Traits.
func NewTraits() Traits { return root.NewTraits() }

// NewIntegrations returns empty Integrations.
func NewIntegrations() Integrations { return root.NewIntegrations() }

// FieldGetter is a message held as fields by name, such as a decoded JSON
// object, for ValidateFields.
type FieldGetter interface {
	// GetField returns the value of field (a Segment name: "type",
	// "userId", ...) and whether it is set.
	GetField(field string) (any, bool)
}

// ValidateFields checks a message held as fields as Enqueue would check the
// message of its "type": it returns nil or a FieldError. A "type" that is
// not one of the six message types is a FieldError for the field Type of
// "analytics.Event".
func ValidateFields(msg FieldGetter) error {
	str := func(field string) string {
		v, _ := msg.GetField(field)
		s, _ := v.(string)
		return s
	}
	typ, _ := msg.GetField("type")
	var m Message
	switch typ {
	case "track":
		m = Track{UserId: str("userId"), AnonymousId: str("anonymousId"), Event: str("event")}
	case "identify":
		m = Identify{UserId: str("userId"), AnonymousId: str("anonymousId")}
	case "page":
		m = Page{UserId: str("userId"), AnonymousId: str("anonymousId")}
	case "screen":
		m = Screen{UserId: str("userId"), AnonymousId: str("anonymousId")}
	case "group":
		m = Group{UserId: str("userId"), AnonymousId: str("anonymousId"), GroupId: str("groupId")}
	case "alias":
		m = Alias{UserId: str("userId"), PreviousId: str("previousId")}
	default:
		return FieldError{Type: "analytics.Event", Name: "Type", Value: typ}
	}
	return m.Validate()
}

// validate runs m's checks, returning a failure as a FieldError value.
func validate(m root.Message) error {
	err := m.Validate()
	if err == nil {
		return nil
	}
	var fe *root.FieldError
	if errors.As(err, &fe) {
		return fieldError(fe)
	}
	return err
}

// message returns msg as the root message it is, dereferenced, after
// checking it. It takes the root's message types too. As in v3, a message
// of another type is validated before it is refused.
func message(msg Message) (root.Message, error) {
	var m root.Message
	switch v := msg.(type) {
	case nil:
		return nil, FieldError{Type: "analytics.Message", Name: "(nil)"}
	case Track:
		m = root.Track(v)
	case Identify:
		m = root.Identify(v)
	case Page:
		m = root.Page(v)
	case Screen:
		m = root.Screen(v)
	case Group:
		m = root.Group(v)
	case Alias:
		m = root.Alias(v)
	case *Track:
		if v != nil {
			m = root.Track(*v)
		}
	case *Identify:
		if v != nil {
			m = root.Identify(*v)
		}
	case *Page:
		if v != nil {
			m = root.Page(*v)
		}
	case *Screen:
		if v != nil {
			m = root.Screen(*v)
		}
	case *Group:
		if v != nil {
			m = root.Group(*v)
		}
	case *Alias:
		if v != nil {
			m = root.Alias(*v)
		}
	case root.Message:
		switch rv := reflect.ValueOf(v); {
		case rv.Kind() != reflect.Pointer:
			m = v
		case !rv.IsNil():
			m, _ = rv.Elem().Interface().(root.Message)
		}
	default:
		if err := msg.Validate(); err != nil {
			return nil, err
		}
		return nil, customTypeError{fmt.Sprintf("%T", msg)}
	}
	if m == nil {
		return nil, FieldError{Type: fmt.Sprintf("%T", msg), Name: "(nil)"}
	}
	return m, validate(m)
}

// customTypeError is Enqueue's error for a Message of a type of the
// caller's own, with v3's text. errors.Is(err, ErrInvalidMessage) of the
// root package is true.
type customTypeError struct{ typ string }

func (e customTypeError) Error() string {
	return "messages with custom types cannot be enqueued: " + e.typ
}

func (e customTypeError) Is(target error) bool { return target == root.ErrInvalidMessage }

// v3Message returns the root's message m as this package's type, for a
// Callback.
func v3Message(m root.Message) Message {
	switch m := m.(type) {
	case root.Track:
		return Track(m)
	case root.Identify:
		return Identify(m)
	case root.Page:
		return Page(m)
	case root.Screen:
		return Screen(m)
	case root.Group:
		return Group(m)
	case root.Alias:
		return Alias(m)
	}
	return m
}
