package analytics

import (
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func TestMergeContext(t *testing.T) {
	def := &Context{
		App:     AppInfo{Name: "svc", Version: "1"},
		OS:      OSInfo{Name: "linux"},
		IP:      net.ParseIP("10.0.0.1"),
		Locale:  "en-US",
		GroupID: "acme",
		Traits:  Traits{"plan": "pro"},
		Extra:   map[string]any{"region": "eu", "tier": "gold", "timezone": "UTC"},
	}
	tests := []struct {
		name string
		msg  *Context
		want *Context
	}{
		{"no context", nil, def},
		{"the message's members win, whole", &Context{App: AppInfo{Name: "web"}, Locale: "fr-FR", Extra: map[string]any{"tier": "silver"}},
			&Context{App: AppInfo{Name: "web"}, OS: OSInfo{Name: "linux"}, IP: net.ParseIP("10.0.0.1"), Locale: "fr-FR",
				GroupID: "acme", Traits: Traits{"plan": "pro"}, Extra: map[string]any{"region": "eu", "tier": "silver", "timezone": "UTC"}}},
		{"a member set in the message's Extra wins over the default's field", &Context{Extra: map[string]any{"groupId": "other", "os": "bsd"}},
			&Context{App: AppInfo{Name: "svc", Version: "1"}, IP: net.ParseIP("10.0.0.1"), Locale: "en-US",
				Traits: Traits{"plan": "pro"}, Extra: map[string]any{"region": "eu", "tier": "gold", "timezone": "UTC", "groupId": "other", "os": "bsd"}}},
		{"every field", &Context{GroupID: "g", Direct: true, Traits: Traits{"x": 1}, UserAgent: "ua", Timezone: "Europe/Paris"},
			&Context{App: AppInfo{Name: "svc", Version: "1"}, OS: OSInfo{Name: "linux"}, IP: net.ParseIP("10.0.0.1"), Locale: "en-US",
				GroupID: "g", Direct: true, Traits: Traits{"x": 1}, UserAgent: "ua", Timezone: "Europe/Paris",
				Extra: map[string]any{"region": "eu", "tier": "gold", "timezone": "UTC"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var before *Context
			if tt.msg != nil {
				c := *tt.msg
				before = &c
			}
			got := mergeContext(tt.msg, def)
			assert.Equal(t, tt.want, got)
			assert.NotSame(t, def, got)
			assert.Equal(t, before, tt.msg, "the message's context is not changed")
		})
	}
	assert.Equal(t, map[string]any{"region": "eu", "tier": "gold", "timezone": "UTC"}, def.Extra, "the default is not changed")
}

// DefaultContext reaches every message type on the wire, merged with the
// message's own context; the library is the SDK's.
func TestDefaultContextIsSent(t *testing.T) {
	api := analyticstest.New()
	def := &Context{App: AppInfo{Name: "svc"}, GroupID: "acme", Library: LibraryInfo{Name: "mine"}}
	c, _, _ := newTestClient(t, api, Config{DefaultContext: def})
	def.App.Name = "changed after NewWithConfig"
	msgs := []Message{
		Track{UserId: "u", Event: "E", Context: &Context{Locale: "fr"}},
		Identify{UserId: "u"},
		&Page{UserId: "u"},
		Screen{UserId: "u"},
		Group{UserId: "u", GroupId: "g", Context: &Context{GroupID: "own"}},
		Alias{UserId: "u", PreviousId: "p"},
		root.Track{UserId: "u", Event: "root"},
		&root.Screen{UserId: "u"},
	}
	for _, m := range msgs {
		require.NoError(t, c.Enqueue(m))
	}
	require.NoError(t, c.Close())
	reqs := api.Requests()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Events, len(msgs))
	library := map[string]any{"name": "analytics-go", "version": "3.0.0"} // v3's, as every v3 release sent it
	assert.Equal(t, map[string]any{"library": library}, reqs[0].Context, "the library is the batch's, as in v3")
	for i, e := range reqs[0].Events {
		want := map[string]any{"app": map[string]any{"name": "svc"}, "groupId": "acme"}
		switch i {
		case 0:
			want["locale"] = "fr"
		case 4:
			want["groupId"] = "own"
		}
		assert.Equal(t, want, e["context"], "event %d (%s)", i, e["type"])
	}
}
