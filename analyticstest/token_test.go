package analyticstest

import (
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/testsupport"
)

const tokenHost = "http://auth.test"

// jwt signs claims with header, RS256 with key: what a client sends, made
// here by hand, not by the SDK, so that the mock is held to the protocol.
func jwt(t *testing.T, key *rsa.PrivateKey, header, claims map[string]any) string {
	t.Helper()
	enc := base64.RawURLEncoding
	h, err := json.Marshal(header)
	require.NoError(t, err)
	c, err := json.Marshal(claims)
	require.NoError(t, err)
	signed := enc.EncodeToString(h) + "." + enc.EncodeToString(c)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(nil, key, crypto.SHA256, sum[:])
	require.NoError(t, err)
	return signed + "." + enc.EncodeToString(sig)
}

// validClaims are the claims of a JWT the mock takes at now.
func validClaims(now time.Time, jti string) map[string]any {
	return map[string]any{"iss": "app", "sub": "app", "aud": tokenHost, "iat": now.Unix() - 5, "exp": now.Unix() + 55, "jti": jti}
}

var validHeader = map[string]any{"alg": "RS256", "typ": "JWT", "kid": "k1"}

// tokenForm is a token request's form with assertion.
func tokenForm(assertion string) url.Values {
	return url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {assertion},
		"scope":                 {"tracking_api:write"},
	}
}

// askToken posts form to s's token endpoint in memory and returns the
// response and its body.
func askToken(t *testing.T, s *Server, form url.Values) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, tokenHost+TokenPath, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, body, err := doRead(s.Client(nil), req)
	require.NoError(t, err)
	return resp, body
}

func oauthServer(ttl, skew time.Duration) *Server {
	app, _ := testsupport.RSAKeys()
	return New().OAuth(OAuth{ClientID: "app", KeyID: "k1", PublicKey: &app.Key.PublicKey, TTL: ttl, Skew: skew})
}

// A valid JWT gets a token as Segment's server answers one, dated by the
// mock's clock; a batch with it is taken, with the write key in its body.
func TestTokenIssuedAndAccepted(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		s := oauthServer(2*time.Minute, time.Hour)
		resp, body := askToken(t, s, tokenForm(jwt(t, app.Key, validHeader, validClaims(time.Now().Add(time.Hour), "j1"))))
		require.Equal(t, 200, resp.StatusCode, body)
		assert.Equal(t, time.Now().Add(time.Hour).UTC().Format(http.TimeFormat), resp.Header.Get("Date"), "Date, by the mock's clock")
		var answer struct {
			AccessToken string `json:"access_token"`
			TokenType   string `json:"token_type"`
			ExpiresIn   int    `json:"expires_in"`
			Scope       string `json:"scope"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &answer))
		assert.NotEmpty(t, answer.AccessToken)
		assert.Equal(t, "Bearer", answer.TokenType)
		assert.Equal(t, 120, answer.ExpiresIn)
		assert.Equal(t, "tracking_api:write", answer.Scope)

		batch := []byte(`{"batch":[{"type":"track","event":"E","userId":"u"}],"writeKey":"wk"}`)
		bearer := http.Header{"Authorization": {"Bearer " + answer.AccessToken}}
		resp, body, err := post(s.Client(nil), "http://tracking.test/v1/batch", batch, bearer)
		require.NoError(t, err)
		assert.Equal(t, 200, resp.StatusCode, body)

		resp, _, err = post(s.Client(nil), "http://tracking.test/v1/batch", []byte(`{"batch":[]}`), bearer)
		require.NoError(t, err)
		assert.Equal(t, 400, resp.StatusCode, "a batch with a token and no writeKey")

		resp, _, err = post(s.Client(nil), "http://tracking.test/v1/batch", batch, nil)
		require.NoError(t, err)
		assert.Equal(t, 401, resp.StatusCode, "Basic credentials alone")

		time.Sleep(2 * time.Minute)
		resp, body, err = post(s.Client(nil), "http://tracking.test/v1/batch", batch, bearer)
		require.NoError(t, err)
		assert.Equal(t, 401, resp.StatusCode, "an expired token")
		assert.Contains(t, resp.Header.Get("Www-Authenticate"), `error="invalid_token"`)
		assert.Contains(t, body, "expired")

		assert.Len(t, s.TokenRequests(), 1, "token requests")
		assert.Equal(t, []int{200, 400, 401, 401}, statusesOf(s.Requests()), "batches")
	})
}

func statusesOf(reqs []Request) []int {
	var out []int
	for _, r := range reqs {
		out = append(out, r.Status)
	}
	return out
}

// Every part of a token request is judged; each fault gets its own OAuth
// error, and the request is recorded with it. Each form is made just
// before it is sent, its times from that instant.
func TestTokenRefusals(t *testing.T) {
	app, wrong := testsupport.RSAKeys()
	n := 0
	// with is a valid JWT at now, edited, with a jti of its own.
	with := func(now time.Time, edit func(h, c map[string]any)) string {
		n++
		h, c := maps.Clone(validHeader), validClaims(now, "jti-"+strconv.Itoa(n))
		edit(h, c)
		return jwt(t, app.Key, h, c)
	}
	claim := func(edit func(now time.Time, h, c map[string]any)) func(time.Time) url.Values {
		return func(now time.Time) url.Values {
			return tokenForm(with(now, func(h, c map[string]any) { edit(now, h, c) }))
		}
	}
	field := func(key, value string) func(time.Time) url.Values { // a valid form but for key
		return func(now time.Time) url.Values {
			f := tokenForm(with(now, func(h, c map[string]any) {}))
			f.Set(key, value)
			return f
		}
	}
	tests := []struct {
		name   string
		form   func(now time.Time) url.Values
		status int
		code   string
	}{
		{"grant_type", field("grant_type", "password"), 400, "unsupported_grant_type"},
		{"client_assertion_type", field("client_assertion_type", "x"), 400, "invalid_request"},
		{"scope", field("scope", "all"), 400, "invalid_scope"},
		{"not a JWT", func(time.Time) url.Values { return tokenForm("abc") }, 400, "invalid_request"},
		{"alg", claim(func(_ time.Time, h, c map[string]any) { h["alg"] = "HS256" }), 400, "invalid_request"},
		{"typ", claim(func(_ time.Time, h, c map[string]any) { h["typ"] = "JOSE" }), 400, "invalid_request"},
		{"kid", claim(func(_ time.Time, h, c map[string]any) { h["kid"] = "k2" }), 401, "invalid_client"},
		{"signature", func(now time.Time) url.Values {
			return tokenForm(jwt(t, wrong.Key, validHeader, validClaims(now, "j-wrong")))
		}, 401, "invalid_client"},
		{"iss", claim(func(_ time.Time, h, c map[string]any) { c["iss"] = "other" }), 401, "invalid_client"},
		{"sub", claim(func(_ time.Time, h, c map[string]any) { c["sub"] = "other" }), 401, "invalid_client"},
		{"aud", claim(func(_ time.Time, h, c map[string]any) { c["aud"] = "https://oauth2.segment.io" }), 400, "invalid_grant"},
		{"iat ahead", claim(func(now time.Time, h, c map[string]any) { c["iat"] = now.Unix() + 600 }), 400, "invalid_request"},
		{"exp past", claim(func(now time.Time, h, c map[string]any) { c["exp"] = now.Unix() }), 400, "invalid_request"},
		{"too long", claim(func(now time.Time, h, c map[string]any) { c["exp"] = now.Unix() + 3600 }), 400, "invalid_grant"},
		{"no jti", claim(func(_ time.Time, h, c map[string]any) { delete(c, "jti") }), 400, "invalid_grant"},
	}
	s := oauthServer(0, 0)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := askToken(t, s, tt.form(time.Now()))
			assert.Equal(t, tt.status, resp.StatusCode, body)
			var e struct{ Error, ErrorDescription string }
			require.NoError(t, json.Unmarshal([]byte(body), &e), body)
			assert.Equal(t, tt.code, e.Error, body)
			reqs := s.TokenRequests()
			assert.ErrorContains(t, reqs[len(reqs)-1].Err, tt.code, "recorded with why")
		})
	}
	t.Run("jti reused", func(t *testing.T) {
		assertion := jwt(t, app.Key, validHeader, validClaims(time.Now(), "once"))
		resp, _ := askToken(t, s, tokenForm(assertion))
		require.Equal(t, 200, resp.StatusCode)
		resp, body := askToken(t, s, tokenForm(assertion))
		assert.Equal(t, 400, resp.StatusCode)
		assert.Contains(t, body, "invalid_grant")
	})
	t.Run("content type", func(t *testing.T) {
		resp, _, err := post(s.Client(nil), tokenHost+TokenPath, []byte("{}"), nil)
		require.NoError(t, err)
		assert.Equal(t, 415, resp.StatusCode)
	})
	t.Run("the times Segment's Python SDK reads", func(t *testing.T) {
		now := time.Now()
		_, body := askToken(t, s, tokenForm(with(now, func(h, c map[string]any) { c["iat"], c["exp"] = now.Unix()-100, now.Unix()-50 })))
		assert.Contains(t, body, `"error_description":"Token is expired"`)
		_, body = askToken(t, s, tokenForm(with(now, func(h, c map[string]any) { c["iat"], c["exp"] = now.Unix()+100, now.Unix()+150 })))
		assert.Contains(t, body, `"error_description":"Token used before issued"`)
	})
}

// The token script answers first, dated; RevokeTokens refuses the tokens
// issued; Reset forgets the tokens and the token record, but not OAuth.
func TestTokenScriptRevokeAndReset(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		s := oauthServer(0, 0).TokenScript(Answer{Status: 429, Header: http.Header{"X-Ratelimit-Reset": {"5"}}})
		resp, _ := askToken(t, s, tokenForm(jwt(t, app.Key, validHeader, validClaims(time.Now(), "a"))))
		assert.Equal(t, 429, resp.StatusCode, "the script's answer")
		assert.Equal(t, "5", resp.Header.Get("X-Ratelimit-Reset"))
		assert.NotEmpty(t, resp.Header.Get("Date"), "dated")

		resp, body := askToken(t, s, tokenForm(jwt(t, app.Key, validHeader, validClaims(time.Now(), "b"))))
		require.Equal(t, 200, resp.StatusCode, body)
		var answer struct {
			AccessToken string `json:"access_token"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &answer))
		batch := []byte(`{"batch":[],"writeKey":"wk"}`)
		bearer := http.Header{"Authorization": {"Bearer " + answer.AccessToken}}
		s.RevokeTokens()
		resp, _, err := post(s.Client(nil), "http://tracking.test/v1/batch", batch, bearer)
		require.NoError(t, err)
		assert.Equal(t, 401, resp.StatusCode, "a revoked token")

		s.Reset()
		assert.Empty(t, s.TokenRequests(), "token requests after Reset")
		resp, _ = askToken(t, s, tokenForm(jwt(t, app.Key, validHeader, validClaims(time.Now(), "c"))))
		assert.Equal(t, 200, resp.StatusCode, "OAuth outlives Reset")
	})
}

// A script's "tokenResponses" load into the token script.
func TestScriptTokenResponses(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		sc, err := ParseScript([]byte(`{"tokenResponses": [{"status": 503}, {"action": "drop"}]}`))
		require.NoError(t, err)
		require.Len(t, sc.TokenResponses, 2)
		assert.Equal(t, 503, sc.TokenResponses[0].Status)
		assert.True(t, sc.TokenResponses[1].Drop)
		_, err = ParseScript([]byte(`{"tokenResponses": [{"status": 9}]}`))
		assert.ErrorContains(t, err, "tokenResponses[0]")

		s := oauthServer(0, 0).Load(sc)
		resp, _ := askToken(t, s, tokenForm(jwt(t, app.Key, validHeader, validClaims(time.Now(), "d"))))
		assert.Equal(t, 503, resp.StatusCode, "the loaded token script")
	})
}
