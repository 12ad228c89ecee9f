package analytics

import (
	"maps"

	root "github.com/dualpath/analytics-go"
)

// contextMembers are the members of a context that have a field, by their
// JSON name: whether a context sets it, and how to copy it. Library is not
// one: the client always writes its own.
var contextMembers = []struct {
	name string
	set  func(*Context) bool
	copy func(dst, src *Context)
}{
	{"app", func(c *Context) bool { return c.App != AppInfo{} }, func(d, s *Context) { d.App = s.App }},
	{"campaign", func(c *Context) bool { return c.Campaign != CampaignInfo{} }, func(d, s *Context) { d.Campaign = s.Campaign }},
	{"device", func(c *Context) bool { return c.Device != DeviceInfo{} }, func(d, s *Context) { d.Device = s.Device }},
	{"location", func(c *Context) bool { return c.Location != LocationInfo{} }, func(d, s *Context) { d.Location = s.Location }},
	{"network", func(c *Context) bool { return c.Network != NetworkInfo{} }, func(d, s *Context) { d.Network = s.Network }},
	{"os", func(c *Context) bool { return c.OS != OSInfo{} }, func(d, s *Context) { d.OS = s.OS }},
	{"page", func(c *Context) bool { return c.Page != PageInfo{} }, func(d, s *Context) { d.Page = s.Page }},
	{"referrer", func(c *Context) bool { return c.Referrer != ReferrerInfo{} }, func(d, s *Context) { d.Referrer = s.Referrer }},
	{"screen", func(c *Context) bool { return c.Screen != ScreenInfo{} }, func(d, s *Context) { d.Screen = s.Screen }},
	{"ip", func(c *Context) bool { return len(c.IP) > 0 }, func(d, s *Context) { d.IP = s.IP }},
	{"direct", func(c *Context) bool { return c.Direct }, func(d, s *Context) { d.Direct = s.Direct }},
	{"locale", func(c *Context) bool { return c.Locale != "" }, func(d, s *Context) { d.Locale = s.Locale }},
	{"groupId", func(c *Context) bool { return c.GroupID != "" }, func(d, s *Context) { d.GroupID = s.GroupID }},
	{"timezone", func(c *Context) bool { return c.Timezone != "" }, func(d, s *Context) { d.Timezone = s.Timezone }},
	{"userAgent", func(c *Context) bool { return c.UserAgent != "" }, func(d, s *Context) { d.UserAgent = s.UserAgent }},
	{"traits", func(c *Context) bool { return len(c.Traits) > 0 }, func(d, s *Context) { d.Traits = s.Traits }},
}

// mergeContext returns a new context with every member of msg, and each
// member of def that msg does not set, whether msg sets it by its field or
// in Extra. Members are taken whole: a message's App replaces the default's
// App. Neither argument is changed; the result may share their maps and IP,
// which the client only reads.
func mergeContext(msg, def *Context) *Context {
	if msg == nil {
		c := *def
		return &c
	}
	out := *msg
	for _, m := range contextMembers {
		if _, inExtra := msg.Extra[m.name]; !m.set(msg) && !inExtra {
			m.copy(&out, def)
		}
	}
	if len(def.Extra) > 0 {
		out.Extra = maps.Clone(def.Extra)
		maps.Copy(out.Extra, msg.Extra)
	}
	return &out
}

// contextOf returns m's Context.
func contextOf(m root.Message) *Context {
	switch m := m.(type) {
	case root.Track:
		return m.Context
	case root.Identify:
		return m.Context
	case root.Page:
		return m.Context
	case root.Screen:
		return m.Context
	case root.Group:
		return m.Context
	case root.Alias:
		return m.Context
	}
	return nil
}

// withContext returns a copy of m with its Context set to c.
func withContext(m root.Message, c *Context) root.Message {
	switch m := m.(type) {
	case root.Track:
		m.Context = c
		return m
	case root.Identify:
		m.Context = c
		return m
	case root.Page:
		m.Context = c
		return m
	case root.Screen:
		m.Context = c
		return m
	case root.Group:
		m.Context = c
		return m
	case root.Alias:
		m.Context = c
		return m
	}
	return m
}
