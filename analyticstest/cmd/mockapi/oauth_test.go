package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

// With -oauth-*, the mock is the source's auth server too: the SDK gets
// its token from it and delivers, over a real socket; a batch with Basic
// credentials alone is refused 401; the token request is printed.
func TestRunOAuth(t *testing.T) {
	app := testsupport.NewRSAKey()
	pub := filepath.Join(t.TempDir(), "public.pem")
	require.NoError(t, os.WriteFile(pub, []byte(testsupport.PublicKeyPEM(&app.Key.PublicKey)), 0o600))
	url, stdout := started(t, "-oauth-public-key", pub, "-oauth-client-id", "app", "-oauth-key-id", "k1", "-oauth-ttl", "2m")

	assert.Equal(t, 401, send(t, url+"/v1/batch", oneTrack), "a batch without a token")
	assert.Contains(t, stdout.next(t), "status=401", "printed")

	c, err := analytics.New("wk", analytics.WithEndpoint(url), analytics.WithHTTPClient(client(t)),
		analytics.WithLogger(slog.New(slog.DiscardHandler)),
		analytics.WithOAuth(analytics.OAuth{ClientID: "app", KeyID: "k1", PrivateKey: app.PKCS8, AuthServer: url}))
	require.NoError(t, err)
	require.NoError(t, c.Enqueue(analytics.Track{MessageId: "m2", UserId: "u", Event: "E"}))
	require.NoError(t, c.Close())
	assert.Equal(t, "POST /token events=0 status=200", stdout.next(t), "the token request, printed")
	assert.Equal(t, "track messageId=m2 userId=u event=E status=200", stdout.next(t), "the batch, printed")
	assert.EqualValues(t, 1, c.Stats().Delivered, "delivered")
}

// The OAuth flags go together, and the key must be an RSA public key.
func TestRunOAuthFlagErrors(t *testing.T) {
	dir := t.TempDir()
	notKey := filepath.Join(dir, "not.pem")
	require.NoError(t, os.WriteFile(notKey, []byte("hello"), 0o600))
	for _, args := range [][]string{
		{"-oauth-client-id", "app"},
		{"-oauth-public-key", notKey, "-oauth-client-id", "app"},
		{"-oauth-public-key", notKey, "-oauth-client-id", "app", "-oauth-key-id", "k"},
		{"-oauth-public-key", filepath.Join(dir, "none.pem"), "-oauth-client-id", "app", "-oauth-key-id", "k"},
	} {
		err := run(context.Background(), append([]string{"-addr", "127.0.0.1:0"}, args...), io.Discard, io.Discard)
		var usage usageError
		assert.ErrorAs(t, err, &usage, "%q", args)
		assert.True(t, strings.Contains(err.Error(), "-oauth"), "%q: %v", args, err)
	}
}
