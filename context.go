package analytics

import (
	"bytes"
	"encoding/json"
	"maps"
	"net"
	"slices"
)

// Context is the Segment context object: extra information about the message
// (https://segment.com/docs/connections/spec/common/#context). Its library
// member is the SDK's own: the SDK sets it at Enqueue; with WithV3Wire the
// SDK's library is on the batch instead, and a library the caller set is
// sent as it is.
// Members the struct has no field for go in Extra; they are written inline,
// and a field that is set wins over an Extra member of the same name.
type Context struct {
	App       AppInfo      `json:"app,omitzero"`        // the app sending the event
	Campaign  CampaignInfo `json:"campaign,omitzero"`   // the marketing campaign (UTM parameters)
	Device    DeviceInfo   `json:"device,omitzero"`     // the device
	Library   LibraryInfo  `json:"library,omitzero"`    // the SDK sets its own on every message (WithV3Wire: on the batch only)
	Location  LocationInfo `json:"location,omitzero"`   // where the user is
	Network   NetworkInfo  `json:"network,omitzero"`    // the network connection
	OS        OSInfo       `json:"os,omitzero"`         // the operating system
	Page      PageInfo     `json:"page,omitzero"`       // the web page
	Referrer  ReferrerInfo `json:"referrer,omitzero"`   // what referred the user
	Screen    ScreenInfo   `json:"screen,omitzero"`     // the screen
	IP        net.IP       `json:"ip,omitempty"`        // the user's IP address
	Direct    bool         `json:"direct,omitempty"`    // send to destinations directly
	Locale    string       `json:"locale,omitempty"`    // e.g. "en-US"
	GroupID   string       `json:"groupId,omitempty"`   // the group (account) the message belongs to
	Timezone  string       `json:"timezone,omitempty"`  // e.g. "Europe/Paris"
	UserAgent string       `json:"userAgent,omitempty"` // the user's browser or client
	Traits    Traits       `json:"traits,omitempty"`    // traits of the user

	// Extra holds members the struct has no field for.
	Extra map[string]any `json:"-"` // written inline, not as a member "extra"
}

// AppInfo is context.app.
type AppInfo struct {
	Name      string `json:"name,omitempty"`      // context.app.name
	Version   string `json:"version,omitempty"`   // context.app.version
	Build     string `json:"build,omitempty"`     // context.app.build
	Namespace string `json:"namespace,omitempty"` // context.app.namespace
}

// CampaignInfo is context.campaign.
type CampaignInfo struct {
	Name    string `json:"name,omitempty"`    // context.campaign.name
	Source  string `json:"source,omitempty"`  // context.campaign.source
	Medium  string `json:"medium,omitempty"`  // context.campaign.medium
	Term    string `json:"term,omitempty"`    // context.campaign.term
	Content string `json:"content,omitempty"` // context.campaign.content
}

// DeviceInfo is context.device.
type DeviceInfo struct {
	Id            string `json:"id,omitempty"`            // context.device.id
	Manufacturer  string `json:"manufacturer,omitempty"`  // context.device.manufacturer
	Model         string `json:"model,omitempty"`         // context.device.model
	Name          string `json:"name,omitempty"`          // context.device.name
	Type          string `json:"type,omitempty"`          // context.device.type
	Version       string `json:"version,omitempty"`       // context.device.version
	AdvertisingID string `json:"advertisingId,omitempty"` // context.device.advertisingId
}

// LibraryInfo is context.library: the SDK sets it to its own name and
// Version on every message (with WithV3Wire, on the batch instead, and the
// caller's is sent as it is).
type LibraryInfo struct {
	Name    string `json:"name,omitempty"`    // context.library.name
	Version string `json:"version,omitempty"` // context.library.version
}

// LocationInfo is context.location.
type LocationInfo struct {
	City      string  `json:"city,omitempty"`      // context.location.city
	Country   string  `json:"country,omitempty"`   // context.location.country
	Region    string  `json:"region,omitempty"`    // context.location.region
	Latitude  float64 `json:"latitude,omitempty"`  // context.location.latitude
	Longitude float64 `json:"longitude,omitempty"` // context.location.longitude
	Speed     float64 `json:"speed,omitempty"`     // context.location.speed
}

// NetworkInfo is context.network.
type NetworkInfo struct {
	Bluetooth bool   `json:"bluetooth,omitempty"` // context.network.bluetooth
	Cellular  bool   `json:"cellular,omitempty"`  // context.network.cellular
	WIFI      bool   `json:"wifi,omitempty"`      // context.network.wifi
	Carrier   string `json:"carrier,omitempty"`   // context.network.carrier
}

// OSInfo is context.os.
type OSInfo struct {
	Name    string `json:"name,omitempty"`    // context.os.name
	Version string `json:"version,omitempty"` // context.os.version
}

// PageInfo is context.page.
type PageInfo struct {
	Hash     string `json:"hash,omitempty"`     // context.page.hash
	Path     string `json:"path,omitempty"`     // context.page.path
	Referrer string `json:"referrer,omitempty"` // context.page.referrer
	Search   string `json:"search,omitempty"`   // context.page.search
	Title    string `json:"title,omitempty"`    // context.page.title
	URL      string `json:"url,omitempty"`      // context.page.url
}

// ReferrerInfo is context.referrer.
type ReferrerInfo struct {
	Type string `json:"type,omitempty"` // context.referrer.type
	Name string `json:"name,omitempty"` // context.referrer.name
	URL  string `json:"url,omitempty"`  // context.referrer.url
	Link string `json:"link,omitempty"` // context.referrer.link
}

// ScreenInfo is context.screen.
type ScreenInfo struct {
	Density int `json:"density,omitempty"` // context.screen.density
	Width   int `json:"width,omitempty"`   // context.screen.width
	Height  int `json:"height,omitempty"`  // context.screen.height
}

// contextFields are the member names Context writes from its fields; an
// Extra member of the same name is written only when the field is unset.
var contextFields = [...]string{
	"app", "campaign", "device", "library", "location", "network", "os", "page",
	"referrer", "screen", "ip", "direct", "locale", "groupId", "timezone", "userAgent", "traits",
}

// MarshalJSON writes the context as it goes on the wire, Extra inline.
// (The library member is the caller's here; Enqueue sets the SDK's.)
func (c Context) MarshalJSON() ([]byte, error) {
	type plain Context
	b, err := json.Marshal(plain(c))
	if err != nil || len(c.Extra) == 0 {
		return b, err
	}
	// Unmarshal keeps the entries of a map it decodes into: the fields'
	// members replace the Extra members of their names.
	m := maps.Clone(c.Extra)
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a context object, putting members the struct has no
// field for in Extra.
func (c *Context) UnmarshalJSON(b []byte) error {
	type plain Context
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	// json.Number keeps large integers exact; encoding writes it back as
	// it came. b is valid JSON: Unmarshal has checked it.
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return err
	}
	*c = Context(p)
	maps.DeleteFunc(m, func(k string, _ any) bool { return slices.Contains(contextFields[:], k) })
	if len(m) > 0 {
		c.Extra = m
	}
	return nil
}
