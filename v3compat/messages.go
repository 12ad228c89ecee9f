package analytics

import (
	"errors"
	"fmt"

	root "github.com/dualpath/analytics-go"
)

// Message is a message Enqueue takes: one of Track, Identify, Page, Screen,
// Group and Alias, or a pointer to one. As in v3, any type with a Validate
// method implements it, and Enqueue refuses the types that are not the six.
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

// The message types and their helpers are the root package's.
type (
	// Track records an action a user performed; see the root package.
	Track = root.Track
	// Identify ties a user to their traits; see the root package.
	Identify = root.Identify
	// Page records a page view; see the root package.
	Page = root.Page
	// Screen records a screen view in an app; see the root package.
	Screen = root.Screen
	// Group ties a user to a group; see the root package.
	Group = root.Group
	// Alias merges two user identities; see the root package.
	Alias = root.Alias

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
	var m root.Message
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
	return validate(m)
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
// checking it. As in v3, msg is validated before its type is checked.
func message(msg Message) (root.Message, error) {
	var m root.Message
	switch v := msg.(type) {
	case nil:
		return nil, FieldError{Type: "analytics.Message", Name: "(nil)"}
	case Track, Identify, Page, Screen, Group, Alias:
		m = v.(root.Message)
	case *Track:
		m = deref(v)
	case *Identify:
		m = deref(v)
	case *Page:
		m = deref(v)
	case *Screen:
		m = deref(v)
	case *Group:
		m = deref(v)
	case *Alias:
		m = deref(v)
	default:
		if err := msg.Validate(); err != nil {
			return nil, err
		}
		return nil, fmt.Errorf("%w: messages of type %T cannot be enqueued", root.ErrInvalidMessage, msg)
	}
	if m == nil {
		return nil, FieldError{Type: fmt.Sprintf("%T", msg), Name: "(nil)"}
	}
	return m, validate(m)
}

// deref returns the message p points to, or nil for a nil pointer.
func deref[M root.Message](p *M) root.Message {
	if p == nil {
		return nil
	}
	return *p
}
