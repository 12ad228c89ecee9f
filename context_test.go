package analytics

import (
	"encoding/json"
	"net"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fullContext sets every member of a Context but GroupID, with an Extra
// member named like a field ("groupId") and two others.
func fullContext() *Context {
	return &Context{
		App:       AppInfo{Name: "app", Version: "1.2", Build: "7", Namespace: "com.example"},
		Campaign:  CampaignInfo{Name: "spring", Source: "news", Medium: "email", Term: "t", Content: "c"},
		Device:    DeviceInfo{Id: "d1", Manufacturer: "Acme", Model: "X", Name: "x1", Type: "phone", Version: "3", AdvertisingID: "ad"},
		Library:   LibraryInfo{Name: "impostor", Version: "9"},
		Location:  LocationInfo{City: "Paris", Country: "FR", Region: "IDF", Latitude: 48.85, Longitude: 2.35, Speed: 1.5},
		Network:   NetworkInfo{Bluetooth: true, Cellular: true, WIFI: true, Carrier: "Orange"},
		OS:        OSInfo{Name: "Linux", Version: "6"},
		Page:      PageInfo{Hash: "#h", Path: "/p", Referrer: "r", Search: "?q", Title: "T", URL: "https://example.com/p"},
		Referrer:  ReferrerInfo{Type: "t", Name: "n", URL: "u", Link: "l"},
		Screen:    ScreenInfo{Density: 2, Width: 800, Height: 600},
		IP:        net.ParseIP("10.0.0.1"),
		Direct:    true,
		Locale:    "fr-FR",
		Timezone:  "Europe/Paris",
		UserAgent: "curl/8",
		Traits:    Traits{"plan": "pro", "seats": 3},
		Extra:     map[string]any{"zz": 1, "aa": "x", "groupId": "from-extra"},
	}
}

// fullContextJSON is the encoding of fullContext's message as it was before
// Context had GroupID: adding the field changed no byte of it.
const fullContextJSON = `{"type":"track","messageId":"id-1","timestamp":"2026-11-29T12:34:56.789Z","userId":"u","event":"E",` +
	`"context":{"library":{"name":"analytics-go","version":"` + Version + `"},` +
	`"app":{"name":"app","version":"1.2","build":"7","namespace":"com.example"},` +
	`"campaign":{"name":"spring","source":"news","medium":"email","term":"t","content":"c"},` +
	`"device":{"id":"d1","manufacturer":"Acme","model":"X","name":"x1","type":"phone","version":"3","advertisingId":"ad"},` +
	`"location":{"city":"Paris","country":"FR","region":"IDF","latitude":48.85,"longitude":2.35,"speed":1.5},` +
	`"network":{"bluetooth":true,"cellular":true,"wifi":true,"carrier":"Orange"},` +
	`"os":{"name":"Linux","version":"6"},` +
	`"page":{"hash":"#h","path":"/p","referrer":"r","search":"?q","title":"T","url":"https://example.com/p"},` +
	`"referrer":{"type":"t","name":"n","url":"u","link":"l"},` +
	`"screen":{"density":2,"width":800,"height":600},` +
	`"ip":"10.0.0.1","direct":true,"locale":"fr-FR","timezone":"Europe/Paris","userAgent":"curl/8",` +
	`"traits":{"plan":"pro","seats":3},"aa":"x","groupId":"from-extra","zz":1}}`

func TestContextEncodingWithoutGroupIDIsUnchanged(t *testing.T) {
	b, err := encodeMessage(Track{UserId: "u", Event: "E", Context: fullContext()}, "id-1", fixedTime)
	require.NoError(t, err)
	assert.Equal(t, fullContextJSON, string(b))
}

func TestContextGroupID(t *testing.T) {
	ctx := fullContext()
	ctx.GroupID = "acme"
	got := decode(t, Track{UserId: "u", Event: "E", Context: ctx})["context"].(map[string]any)
	assert.Equal(t, "acme", got["groupId"], "the field wins over Extra's member of the same name")

	got = decode(t, Track{UserId: "u", Event: "E", Context: &Context{GroupID: "g1"}})["context"].(map[string]any)
	assert.Equal(t, map[string]any{
		"library": map[string]any{"name": "analytics-go", "version": Version},
		"groupId": "g1",
	}, got)
}

func TestContextGroupIDIsSent(t *testing.T) {
	e := newEnv(t, newAPI())
	e.enqueue(
		Track{UserId: "u", Event: "E", Context: &Context{GroupID: "g1"}},
		Identify{UserId: "u", Context: &Context{GroupID: "g2", Locale: "en"}},
	)
	e.close()
	reqs := e.api.Requests()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Events, 2)
	for i, want := range []string{"g1", "g2"} {
		ctx, _ := reqs[0].Events[i]["context"].(map[string]any)
		assert.Equal(t, want, ctx["groupId"], "event %d", i)
	}
}

func TestContextGroupIDJSON(t *testing.T) {
	b, err := json.Marshal(Context{GroupID: "g", Locale: "en"})
	require.NoError(t, err)
	assert.JSONEq(t, `{"groupId":"g","locale":"en"}`, string(b))

	var c Context
	require.NoError(t, json.Unmarshal([]byte(`{"groupId":"g","custom":1}`), &c))
	assert.Equal(t, "g", c.GroupID)
	assert.NotContains(t, c.Extra, "groupId", "a member with a field does not go to Extra")
	assert.Contains(t, c.Extra, "custom")
}
