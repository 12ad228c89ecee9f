package consumer

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/dualpath/analytics-go/retry"
	"github.com/dualpath/analytics-go/retryafter"
)

// TokenPath is where an OAuth 2.0 authorization server issues access
// tokens, under its URL.
const TokenPath = "/token"

// OAuth is an Uploader's OAuth 2.0 client: it gets access tokens
// from AuthServer with a JWT that Key signs (RFC 7523), and every upload
// carries one instead of the write key's Basic credentials.
type OAuth struct {
	// ClientID is the OAuth app's id: the JWT's iss and sub.
	ClientID string
	// KeyID is the id of the public key registered with the app: the
	// JWT's kid.
	KeyID string
	// Key is the private half of that key; it signs the JWT (RS256). It
	// is never logged nor put in an error.
	Key *rsa.PrivateKey
	// AuthServer is the authorization server's URL, without a trailing
	// slash: the JWT's aud. Tokens come from AuthServer + TokenPath.
	AuthServer string
}

// The JWT's lifetime: issued this long ago, so that a server clock a
// little behind still takes it, and valid for a minute from then.
const (
	jwtBackdate = 5 * time.Second
	jwtLife     = time.Minute
	// skewTolerance is how far the auth server's Date may put the clock
	// off from the correction a JWT was signed with before a refusal is
	// taken for the clock's fault and the JWT signed again.
	skewTolerance = 2 * time.Second
	// unknownLife is the life of a token whose answer has no expires_in.
	unknownLife = time.Minute
)

// tokenSource keeps the access token that every upload of an Uploader
// carries, and gets a new one when there is none, when it is past half
// its life, or when an upload was refused for it. It is safe for
// concurrent use; at most one request for a token is in flight at a time.
// Tokens live in memory only.
type tokenSource struct {
	OAuth
	url string    // the token endpoint's
	u   *Uploader // whose client, timeout, user agent, scrubber and log it uses

	mu      sync.Mutex
	token   string
	refresh time.Time     // from then, the next caller gets a new token; the others use this one
	expires time.Time     // from then, it is not used
	skew    time.Duration // the auth server's clock less ours, by its last Date
	fetch   *tokenFetch   // the request in flight, nil when none
}

// tokenFetch is a request for a token in flight, which callers that need
// one wait for: done is closed when it has ended, with its answer.
type tokenFetch struct {
	done chan struct{}
	tokenAnswer
	abandoned bool // its caller's context ended it, not the server
}

// get returns the token an upload carries. When there is none to use, it
// gets one: the first caller asks the token endpoint, and those that come
// while it does wait for its end or for their ctx; a request that fails
// fails them all alike, with the Result their budgets take. A
// token past half its life is refreshed by one caller while the others use
// it; a refresh that fails leaves it in use until it expires, and is tried
// again halfway to then.
func (s *tokenSource) get(ctx context.Context) (string, retry.Result, error) {
	for {
		s.mu.Lock()
		now := time.Now()
		if s.token != "" && now.Before(s.expires) && (now.Before(s.refresh) || s.fetch != nil) {
			token := s.token
			s.mu.Unlock()
			return token, retry.Result{}, nil
		}
		if f := s.fetch; f != nil {
			s.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return "", retry.NoResponse(), context.Cause(ctx)
			}
			if f.err == nil || f.abandoned && ctx.Err() == nil {
				continue // a token is there, or its caller gave up: ask again
			}
			return "", f.res, f.err
		}
		f := &tokenFetch{done: make(chan struct{})}
		s.fetch = f
		skew := s.skew
		s.mu.Unlock()

		a := s.request(ctx, skew)

		s.mu.Lock()
		now = time.Now()
		s.fetch = nil
		s.skew = a.skew
		stale := s.token != "" && now.Before(s.expires)
		switch {
		case a.err == nil:
			s.token = a.token
			s.refresh = a.sent.Add(a.life / 2)
			s.expires = a.sent.Add(a.life - min(a.life/4, s.u.cfg.RequestTimeout)) // valid to the end of an attempt
		case stale:
			s.refresh = now.Add(s.expires.Sub(now) / 2)
		}
		token, expires := s.token, s.expires
		f.tokenAnswer, f.abandoned = a, ctx.Err() != nil
		s.mu.Unlock()
		close(f.done)
		if a.err != nil {
			if !stale {
				return "", a.res, a.err
			}
			s.u.cfg.Logger.LogAttrs(ctx, slog.LevelWarn, "analytics: OAuth token refresh failed; the current token serves until it expires",
				slog.Time("expires", expires), slog.String("error", a.err.Error()))
		}
		return token, retry.Result{}, nil
	}
}

// drop forgets token, which an upload was refused for, unless a newer one
// has replaced it already: the next upload gets a fresh one.
func (s *tokenSource) drop(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.token == token {
		s.token = ""
	}
}

// tokenAnswer is how one request for a token ended.
type tokenAnswer struct {
	token string
	life  time.Duration // expires_in
	sent  time.Time     // the life counts from then
	skew  time.Duration // the auth server's clock less ours: by the Date, else the skew signed with
	res   retry.Result
	err   error // a *TokenError
}

// request asks the token endpoint for a token with a JWT whose times are
// corrected by skew. An answer that refuses it (a fatal status) with a
// Date that puts the clock off from skew by more than skewTolerance gets
// the JWT signed again with the Date's correction, and sent once more:
// the first request of a client whose clock is off learns by how much.
func (s *tokenSource) request(ctx context.Context, skew time.Duration) tokenAnswer {
	for again := false; ; again = true {
		a := s.post(ctx, skew)
		off := a.skew-skew > skewTolerance || skew-a.skew > skewTolerance
		if again || !off || a.res.Outcome != retry.OutcomeFatal {
			return a
		}
		skew = a.skew
	}
}

// post sends one token request, under the attempt timeout, and reads its
// answer: the token and its life from a 2xx, else the *TokenError, with
// the JWT and the write key scrubbed from what the endpoint said.
func (s *tokenSource) post(ctx context.Context, skew time.Duration) (a tokenAnswer) {
	// Every error leaves through fail, scrubbed of the write key and,
	// once signed, of the JWT.
	scrub := s.u.scrub
	fail := func(res retry.Result, err error) tokenAnswer {
		a.res, a.err = res, scrub.error(&TokenError{URL: s.url, Err: err})
		return a
	}
	a.skew = skew // unless a Date tells another
	a.sent = time.Now()
	jwt, err := s.assertion(a.sent.Add(skew))
	if err != nil { // the analytics package checked that the key signs
		return fail(retry.Result{Outcome: retry.OutcomeFatal}, err)
	}
	scrub = scrub.with(jwt)
	form := url.Values{
		"grant_type":            {"client_credentials"},
		"client_assertion_type": {"urn:ietf:params:oauth:client-assertion-type:jwt-bearer"},
		"client_assertion":      {jwt},
		"scope":                 {"tracking_api:write"},
	}
	ctx, cancel := context.WithTimeout(ctx, s.u.cfg.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.url, strings.NewReader(form.Encode()))
	if err != nil {
		return fail(retry.Result{Outcome: retry.OutcomeFatal}, err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("User-Agent", s.u.cfg.UserAgent)
	resp, err := s.u.cfg.Client.Do(req)
	if err != nil {
		return fail(retry.NoResponse(), err)
	}
	defer resp.Body.Close()
	now := time.Now()
	if date, ok := retryafter.ServerDate(resp.Header, now); ok {
		a.skew = date.Sub(now)
	}
	body, bodyErr := io.ReadAll(io.LimitReader(resp.Body, drainBytes))
	res := retry.ClassifyTokenAnswer(resp.StatusCode, resp.Header, now)
	if res.Outcome != retry.OutcomeSuccess {
		shown := body[:min(len(body), excerptBytes)]
		return fail(res, &HTTPError{
			StatusCode: resp.StatusCode,
			Body:       scrub.excerpt(strings.ToValidUTF8(string(shown), "\uFFFD"), len(shown) < len(body)),
			RetryAfter: res.RetryAfter,
			Location:   resp.Header.Get("Location"),
			BodyErr:    bodyErr,
			Check:      retry.CheckTokenEndpoint(resp.StatusCode),
		})
	}
	var answer struct {
		AccessToken string  `json:"access_token"`
		ExpiresIn   float64 `json:"expires_in"`
	}
	if json.Unmarshal(body, &answer) != nil || answer.AccessToken == "" {
		// Never quoted: what it holds may be a token.
		return fail(retry.NoResponse(), errors.New("a 2xx answer without an access token (want JSON with access_token and expires_in)"))
	}
	a.token, a.life, a.res = answer.AccessToken, unknownLife, res
	if answer.ExpiresIn > 0 {
		a.life = time.Duration(min(answer.ExpiresIn, 366*24*60*60) * float64(time.Second))
	}
	return a
}

// assertion is the JWT that proves the client holds the key (RFC 7523
// §2.2, Segment's "Obtain the access token"): RS256, kid the key's id;
// iss and sub the client id, aud the auth server, a unique jti, issued at
// now (the auth server's clock) less jwtBackdate and valid for jwtLife.
func (s *tokenSource) assertion(now time.Time) (string, error) {
	header, _ := json.Marshal(map[string]string{"alg": "RS256", "typ": "JWT", "kid": s.KeyID})
	iat := now.Add(-jwtBackdate).Unix()
	claims, _ := json.Marshal(map[string]any{"iss": s.ClientID, "sub": s.ClientID, "aud": s.AuthServer,
		"iat": iat, "exp": iat + int64(jwtLife/time.Second), "jti": uuid.NewString()}) // strings and numbers: never fails
	enc := base64.RawURLEncoding
	signed := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(signed))
	sig, err := rsa.SignPKCS1v15(nil, s.Key, crypto.SHA256, sum[:])
	return signed + "." + enc.EncodeToString(sig), err
}
