package analytics

import (
	"strings"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

// Config.OAuth is the root's WithOAuth: the uploads carry the mock's
// token, and the write key in their bodies.
func TestConfigOAuth(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := analyticstest.New().OAuth(analyticstest.OAuth{ClientID: "app", KeyID: "k", PublicKey: &app.Key.PublicKey})
		c, _, out := newTestClient(t, api, Config{
			Endpoint: "http://tracking.test",
			OAuth:    OAuth{ClientID: "app", KeyID: "k", PrivateKey: app.PKCS1, AuthServer: "http://auth.test"},
		})
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		ok, failed := out.counts()
		assert.Equal(t, 1, ok, "delivered")
		assert.Zero(t, failed, "failed")
		require.Len(t, api.TokenRequests(), 1, "token requests")
		require.Len(t, api.Requests(), 1, "batches")
		assert.True(t, strings.HasPrefix(api.Requests()[0].Header.Get("Authorization"), "Bearer "), "the batch carries the token")
	})
}

// An OAuth the root refuses is a ConfigError naming Config.OAuth, whose
// text shows no key.
func TestConfigOAuthRefused(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	_, err := NewWithConfig(testWriteKey, Config{OAuth: OAuth{KeyID: "k", PrivateKey: app.PKCS8}, Transport: analyticstest.New()})
	var ce ConfigError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, "OAuth", ce.Field)
	assert.Contains(t, err.Error(), "ClientID must not be empty")
	assert.Contains(t, err.Error(), `PrivateKey:"[REDACTED]"`, "the value, its key redacted")
	assert.NotContains(t, err.Error(), strings.Split(app.PKCS8, "\n")[1], "a line of the key")
}
