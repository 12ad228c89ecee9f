package analyticstest

import (
	"bytes"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// TokenPath is where the Server issues OAuth 2.0 access tokens once OAuth
// is set: the SDK asks its auth server's URL + TokenPath.
const TokenPath = "/token"

// The token requests the Server takes, as Segment's authorization server
// does (Segment docs, "OAuth 2.0", "Obtain the access token").
const (
	grantClientCredentials = "client_credentials"
	assertionJWTBearer     = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
	scopeTrackingWrite     = "tracking_api:write"
	// jwtLeeway is how far in the future a JWT's iat may be, by the
	// Server's clock; jwtMaxLife is the most its exp may be after its iat.
	jwtLeeway  = 5 * time.Second
	jwtMaxLife = time.Minute
	// defaultTokenTTL is the life of the Server's tokens when OAuth.TTL is 0.
	defaultTokenTTL = time.Hour
	// maxTokenBodyBytes bounds a token request's body: a form with a JWT.
	maxTokenBodyBytes = 64 << 10
)

// OAuth is the OAuth app the Server's token endpoint stands for (see
// Server.OAuth): the JWTs it takes, the tokens it issues, its clock.
type OAuth struct {
	// ClientID is the app's id: a JWT's iss and sub.
	ClientID string
	// KeyID is the id of the public key registered in the app: a JWT's kid.
	KeyID string
	// PublicKey verifies a JWT's RS256 signature.
	PublicKey *rsa.PublicKey
	// Audience is the aud a JWT must have; "" means the URL the token
	// request was sent to, less TokenPath: "http://" + its Host.
	Audience string
	// TTL is the life of the tokens it issues (expires_in, whole seconds);
	// 0 means an hour.
	TTL time.Duration
	// Skew is how far the Server's clock is ahead of the machine's
	// (negative: behind): it judges a JWT's iat and exp, and its tokens'
	// expiry, by it, and writes it in the Date of its token answers.
	Skew time.Duration
}

// OAuth sets the app the Server's token endpoint (POST TokenPath) stands
// for, and from then on refuses, as a source that requires OAuth does,
// every batch without an access token it issued that has not expired nor
// been revoked (401, with WWW-Authenticate: Bearer), and every batch with
// one whose body has no writeKey (400). Set again, it changes the app and
// the clock and keeps the tokens issued. Like Lenient, Reset and Load keep
// it; a Lenient Server issues tokens but checks no batch's.
//
// A token request is answered by TokenScript's next answer, if any (with
// the Server's Date added), or else judged: a form (415 otherwise) with
// grant_type client_credentials, client_assertion_type the JWT bearer URN,
// scope tracking_api:write and a client_assertion JWT whose header has alg
// RS256, typ JWT and kid KeyID, whose signature verifies with PublicKey,
// whose iss and sub are ClientID, aud Audience, iat at most 5 s ahead of
// the Server's clock, exp after it and at most a minute after iat, and
// whose jti was never used before. Taken, it gets 200 and a JSON
// {"access_token", "token_type": "Bearer", "expires_in", "scope"} with a
// new opaque token; refused, 400 or 401 and an OAuth error
// {"error", "error_description"} (RFC 6749 §5.2): invalid_request (with
// "Token is expired" or "Token used before issued" for a JWT whose times
// are off the Server's clock, the descriptions Segment's Python SDK reads),
// invalid_client, invalid_grant, invalid_scope or unsupported_grant_type.
func (s *Server) OAuth(o OAuth) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.oauth = &o
	if s.tokens == nil {
		s.tokens, s.jtis = map[string]time.Time{}, map[string]bool{}
	}
	return s
}

// TokenScript queues answers to token requests, one each, after those
// already queued; the token requests after them are judged (see OAuth).
// An answer's Header is added to the Server's Date: a 429 with
// X-RateLimit-Reset, say.
func (s *Server) TokenScript(answers ...Answer) *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokenScript = append(s.tokenScript, answers...)
	return s
}

// RevokeTokens revokes every token issued so far: a batch that carries one
// is refused 401, as after a revocation in Segment's app.
func (s *Server) RevokeTokens() *Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.tokens)
	return s
}

// TokenRequests returns every token request recorded so far, in order,
// with its status (and Err, why it was refused). Requests leaves them out.
func (s *Server) TokenRequests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.tokenRequests...)
}

// isToken reports whether r is a token request: OAuth is set and r's path
// is TokenPath.
func (s *Server) isToken(r *http.Request) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.oauth != nil && r.URL.Path == TokenPath
}

// token reads a token request and picks its answer: the token script's
// next, else the verdict on its JWT, dated by the Server's clock.
func (s *Server) token(r *http.Request) (Request, Answer) {
	req := newRequest(r)
	f := req.read(r, maxTokenBodyBytes)
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now().Add(s.oauth.Skew)
	header := http.Header{"Date": {now.UTC().Format(http.TimeFormat)}, "Content-Type": {"application/json"}}
	if len(s.tokenScript) > 0 {
		a := s.tokenScript[0]
		s.tokenScript = s.tokenScript[1:]
		for k, v := range a.Header {
			header[k] = v
		}
		a.Header = header
		return req, a
	}
	status, code, why := http.StatusBadRequest, "invalid_request", ""
	if f != nil {
		why = f.message
	} else {
		status, code, why = s.judge(r, req.Body, now)
	}
	if why != "" {
		req.Err = refuse(status, "%s: %s", code, why)
		body, _ := json.Marshal(map[string]string{"error": code, "error_description": why})
		return req, Answer{Status: status, Header: header, Body: string(body)}
	}
	token := make([]byte, 24)
	_, _ = rand.Read(token) // never fails
	access := "mock_" + hex.EncodeToString(token)
	ttl := s.oauth.TTL
	if ttl <= 0 {
		ttl = defaultTokenTTL
	}
	s.tokens[access] = now.Add(ttl)
	body, _ := json.Marshal(map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": int64(ttl / time.Second), "scope": scopeTrackingWrite})
	return req, Answer{Header: header, Body: string(body)}
}

// judge returns the refusal of a token request's form, at the Server's
// now: its status, OAuth error code and description; why "" takes it.
// Called with s.mu held; a jti it takes is spent.
func (s *Server) judge(r *http.Request, body []byte, now time.Time) (status int, code, why string) {
	const bad, unauthorized = http.StatusBadRequest, http.StatusUnauthorized
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); mt != "application/x-www-form-urlencoded" {
		return http.StatusUnsupportedMediaType, "invalid_request", "want Content-Type application/x-www-form-urlencoded"
	}
	form, err := url.ParseQuery(string(body))
	switch {
	case err != nil:
		return bad, "invalid_request", "the body is not a form: " + err.Error()
	case form.Get("grant_type") != grantClientCredentials:
		return bad, "unsupported_grant_type", fmt.Sprintf("grant_type is %q, want %q", form.Get("grant_type"), grantClientCredentials)
	case form.Get("client_assertion_type") != assertionJWTBearer:
		return bad, "invalid_request", fmt.Sprintf("client_assertion_type is %q, want %q", form.Get("client_assertion_type"), assertionJWTBearer)
	case form.Get("scope") != scopeTrackingWrite:
		return bad, "invalid_scope", fmt.Sprintf("scope is %q, want %q", form.Get("scope"), scopeTrackingWrite)
	}
	var head struct{ Alg, Typ, Kid string }
	var claims struct {
		Iss, Sub, Aud, Jti string
		Iat, Exp           int64
	}
	parts := strings.Split(form.Get("client_assertion"), ".")
	if len(parts) != 3 || decodeSegment(parts[0], &head) != nil || decodeSegment(parts[1], &claims) != nil {
		return bad, "invalid_request", "client_assertion is not a JWT of a JSON header and JSON claims"
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	sum := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	o := s.oauth
	aud := o.Audience
	if aud == "" {
		aud = "http://" + r.Host
	}
	switch {
	case head.Alg != "RS256" || head.Typ != "JWT":
		return bad, "invalid_request", fmt.Sprintf("the JWT's header has alg %q and typ %q, want RS256 and JWT", head.Alg, head.Typ)
	case head.Kid != o.KeyID:
		return unauthorized, "invalid_client", fmt.Sprintf("no public key with kid %q is registered in the OAuth app", head.Kid)
	case err != nil || rsa.VerifyPKCS1v15(o.PublicKey, crypto.SHA256, sum[:], sig) != nil:
		return unauthorized, "invalid_client", fmt.Sprintf("the JWT's signature does not verify with the public key %q", o.KeyID)
	case claims.Iss != o.ClientID || claims.Sub != o.ClientID:
		return unauthorized, "invalid_client", fmt.Sprintf("the JWT's iss %q and sub %q are not the OAuth app's id", claims.Iss, claims.Sub)
	case claims.Aud != aud:
		return bad, "invalid_grant", fmt.Sprintf("the JWT's aud is %q, want %q", claims.Aud, aud)
	case time.Unix(claims.Iat, 0).After(now.Add(jwtLeeway)):
		return bad, "invalid_request", "Token used before issued"
	case !time.Unix(claims.Exp, 0).After(now):
		return bad, "invalid_request", "Token is expired"
	case time.Duration(claims.Exp-claims.Iat)*time.Second > jwtMaxLife:
		return bad, "invalid_grant", fmt.Sprintf("the JWT is valid for %d s, more than a minute", claims.Exp-claims.Iat)
	case claims.Jti == "" || s.jtis[claims.Jti]:
		return bad, "invalid_grant", fmt.Sprintf("the JWT's jti %q is empty or was used before", claims.Jti)
	}
	s.jtis[claims.Jti] = true
	return http.StatusOK, "", ""
}

// decodeSegment decodes a JWT segment, base64url without padding, as JSON
// into v.
func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	return dec.Decode(v)
}

// checkBearer returns the refusal a batch's Authorization earns from a
// Server with OAuth set: 401 without a Bearer token the Server issued and
// that has neither expired by its clock nor been revoked.
func (s *Server) checkBearer(r *http.Request) *refusal {
	s.mu.Lock()
	defer s.mu.Unlock()
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	expires, issued := s.tokens[token]
	var f *refusal
	switch {
	case !ok:
		f = refuse(http.StatusUnauthorized, "this source requires OAuth: want an Authorization header of Bearer <access token>")
		f.header = http.Header{"Www-Authenticate": {`Bearer realm="tracking API"`}}
	case !issued || !time.Now().Add(s.oauth.Skew).Before(expires):
		f = refuse(http.StatusUnauthorized, "the access token is unknown, expired or revoked")
		f.header = http.Header{"Www-Authenticate": {`Bearer realm="tracking API", error="invalid_token"`}}
	}
	return f
}
