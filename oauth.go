package analytics

import (
	"cmp"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"strings"

	"github.com/dualpath/analytics-go/consumer"
)

// Segment's OAuth 2.0 authorization servers, one a region: an access token
// is valid only in the region of the server that issued it (Segment docs,
// "OAuth 2.0", "Obtain the access token").
const (
	// OAuthAuthServer is Segment's in the US (Oregon), the default, for
	// the endpoint https://api.segment.io.
	OAuthAuthServer = "https://oauth2.segment.io"
	// OAuthAuthServerEU is Segment's in the EU (Dublin), for a workspace
	// whose endpoint is https://events.eu1.segmentapis.com.
	OAuthAuthServerEU = "https://oauth2.eu1.segmentapis.com"
)

// OAuth is the OAuth 2.0 client of a source that requires it (WithOAuth):
// an OAuth app of the workspace holds the public half of an RSA key; the
// client holds the private half, the app's id and the key's id. The
// client signs a JWT with the key (RS256) and trades it at the auth server
// for an access token, which every upload then carries in place of the
// write key's Basic credentials (docs/oauth.md). Its String and GoString
// never show the private key, nor does its JSON.
type OAuth struct {
	// ClientID is the OAuth app's id (ANALYTICS_OAUTH_CLIENT_ID).
	ClientID string
	// KeyID is the id of the public key registered in the app
	// (ANALYTICS_OAUTH_KEY_ID).
	KeyID string
	// PrivateKey is the private key in PEM: an RSA key of at least 2048
	// bits, PKCS #1 ("BEGIN RSA PRIVATE KEY") or PKCS #8 ("BEGIN PRIVATE
	// KEY"), not encrypted. Give it here or in PrivateKeyFile.
	PrivateKey string `json:"-"`
	// PrivateKeyFile is a file that holds the private key in PEM, read by
	// New (ANALYTICS_OAUTH_PRIVATE_KEY_FILE).
	PrivateKeyFile string
	// AuthServer is the authorization server's URL; empty means
	// OAuthAuthServer. Tokens come from AuthServer + "/token"
	// (ANALYTICS_OAUTH_AUTH_SERVER).
	AuthServer string
}

// String shows o with its private key, if any, as [REDACTED].
func (o OAuth) String() string {
	key := ""
	if o.PrivateKey != "" {
		key = "[REDACTED]"
	}
	return fmt.Sprintf("{ClientID:%q KeyID:%q PrivateKey:%q PrivateKeyFile:%q AuthServer:%q}", o.ClientID, o.KeyID, key, o.PrivateKeyFile, o.AuthServer)
}

// GoString is String, for %#v.
func (o OAuth) GoString() string { return "analytics.OAuth" + o.String() }

// uploaderOAuth returns the Uploader's OAuth client of o, nil when o is
// the zero OAuth (OAuth off), or the OptionError that says what is wrong
// with it, without showing the key.
func (o OAuth) uploaderOAuth() (*consumer.OAuth, error) {
	if o == (OAuth{}) {
		return nil, nil
	}
	switch {
	case o.ClientID == "":
		return nil, invalidOption("OAuth", "ClientID must not be empty: it is the OAuth app's id")
	case o.KeyID == "":
		return nil, invalidOption("OAuth", "KeyID must not be empty: it is the id of the public key registered in the OAuth app")
	case o.PrivateKey == "" && o.PrivateKeyFile == "":
		return nil, invalidOption("OAuth", "no private key: give its PEM as PrivateKey or its file as PrivateKeyFile")
	case o.PrivateKey != "" && o.PrivateKeyFile != "":
		return nil, invalidOption("OAuth", "both PrivateKey and PrivateKeyFile are set: give one")
	}
	server := strings.TrimRight(cmp.Or(o.AuthServer, OAuthAuthServer), "/")
	if err := validateEndpoint(server); err != nil {
		return nil, invalidOption("OAuth", "AuthServer %v", err)
	}
	data, where := []byte(o.PrivateKey), "PrivateKey"
	if o.PrivateKeyFile != "" {
		var err error
		if data, err = os.ReadFile(o.PrivateKeyFile); err != nil {
			return nil, invalidOption("OAuth", "PrivateKeyFile: %v", err) // names the file, never its content
		}
		where = "PrivateKeyFile " + o.PrivateKeyFile
	}
	key, why := parseRSAKey(data)
	if why != "" {
		return nil, invalidOption("OAuth", "%s is %s", where, why)
	}
	return &consumer.OAuth{ClientID: o.ClientID, KeyID: o.KeyID, Key: key, AuthServer: server}, nil
}

// parseRSAKey reads the first PEM block of data as an RSA private key, or
// says what it is instead. Nothing of the block's content is quoted.
func parseRSAKey(data []byte) (*rsa.PrivateKey, string) {
	block, _ := pem.Decode(data)
	var key any
	var err error
	switch {
	case block == nil:
		return nil, "not PEM: want a block that begins -----BEGIN PRIVATE KEY----- or -----BEGIN RSA PRIVATE KEY-----"
	case block.Type == "ENCRYPTED PRIVATE KEY" || block.Headers["Proc-Type"] != "":
		return nil, "an encrypted key: give it decrypted (openssl pkey -in encrypted.pem -out private.pem)"
	case strings.HasSuffix(block.Type, "PUBLIC KEY"):
		return nil, "a public key: give the private key, whose public half is registered in the OAuth app"
	case block.Type == "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	case block.Type == "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return nil, fmt.Sprintf("a PEM block of type %q, not an RSA private key (PRIVATE KEY or RSA PRIVATE KEY)", block.Type)
	}
	rsaKey, ok := key.(*rsa.PrivateKey)
	switch {
	case err != nil:
		return nil, fmt.Sprintf("not a valid %s in PEM", block.Type)
	case !ok:
		return nil, fmt.Sprintf("a %T, not an RSA key: Segment's OAuth signs with RS256", key)
	case rsaKey.N.BitLen() < 2048:
		return nil, fmt.Sprintf("a %d-bit RSA key: RS256 wants 2048 bits or more", rsaKey.N.BitLen())
	}
	return rsaKey, ""
}
