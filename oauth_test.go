package analytics

// OAuth 2.0 end to end (WithOAuth, SPEC §4, §5): the client against the
// mock's token endpoint, which verifies each JWT and refuses a batch
// without a token it issued. Time is the fake clock of testing/synctest.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

const (
	oauthClientID = "app-1"
	oauthKeyID    = "key-1"
	oauthServer   = "http://auth.test" // the mock, in memory, as the auth server
)

// oauthAPI returns a mock that stands for a source requiring OAuth: its
// token endpoint takes JWTs of the test's app and key, and issues tokens
// of ttl.
func oauthAPI(ttl time.Duration) *analyticstest.Server {
	app, _ := testsupport.RSAKeys()
	return newAPI().OAuth(analyticstest.OAuth{ClientID: oauthClientID, KeyID: oauthKeyID, PublicKey: &app.Key.PublicKey, TTL: ttl})
}

// testOAuth is the client's side of the test's app: its key in PKCS #8.
func testOAuth() OAuth {
	app, _ := testsupport.RSAKeys()
	return OAuth{ClientID: oauthClientID, KeyID: oauthKeyID, PrivateKey: app.PKCS8, AuthServer: oauthServer}
}

// authorizations returns the Authorization header of each batch request.
func authorizations(api *analyticstest.Server) []string {
	var out []string
	for _, r := range api.Requests() {
		out = append(out, r.Header.Get("Authorization"))
	}
	return out
}

// statuses returns the status of each request.
func statuses(reqs []analyticstest.Request) []int {
	var out []int
	for _, r := range reqs {
		out = append(out, r.Status)
	}
	return out
}

// One token serves every batch: it is fetched once, before the first
// upload, and each batch carries it as a Bearer token, with the write key
// in its body and no Basic credentials.
func TestOAuthOneTokenServesEveryBatch(t *testing.T) {
	testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Hour)
		e := newEnv(t, api, WithOAuth(testOAuth()), WithFlushAt(10))
		msgs := tracks("m", 200)
		e.enqueue(msgs...)
		e.close()

		e.assertDeliveredOnce(msgs)
		assert.Equal(t, []int{http.StatusOK}, statuses(api.TokenRequests()), "token requests")
		auths := authorizations(api)
		require.Len(t, auths, 20, "batches")
		assert.True(t, strings.HasPrefix(auths[0], "Bearer mock_"), "the first batch's Authorization is the token: %q", auths[0])
		for i, r := range api.Requests() {
			assert.Equal(t, auths[0], auths[i], "batch %d carries the one token", i)
			assert.Contains(t, string(r.Body), `"writeKey":"`+testWriteKey+`"`, "batch %d has the write key in its body", i)
		}
	})
}

// A token is refreshed once past half its life, while it still serves, and
// one that has expired is never sent: a new one is fetched first.
func TestOAuthRefreshesTheTokenBeforeItExpires(t *testing.T) {
	testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Minute)
		e := newEnv(t, api, WithOAuth(testOAuth()))
		send := func(id string) {
			e.enqueue(Track{MessageId: id, UserId: "u", Event: "E"})
			e.flush()
		}
		send("at-0s")
		time.Sleep(29 * time.Second)
		send("at-29s")
		assert.Len(t, api.TokenRequests(), 1, "token requests within half the token's life")
		time.Sleep(2 * time.Second)
		send("at-31s")
		assert.Len(t, api.TokenRequests(), 2, "token requests once past half its life")
		time.Sleep(5 * time.Minute)
		send("after-5min")
		e.close()

		assert.Equal(t, []int{200, 200, 200}, statuses(api.TokenRequests()), "token requests")
		assert.Equal(t, []int{200, 200, 200, 200}, statuses(api.Requests()), "batches: none carried an expired token")
		auths := authorizations(api)
		assert.Equal(t, auths[0], auths[1], "the token is used until half its life")
		assert.NotEqual(t, auths[1], auths[2], "then a fresh one")
		assert.NotEqual(t, auths[2], auths[3], "and an expired one is replaced before it is sent")
		assert.Zero(t, e.client.Stats().Retries, "retries")
	})
}

// A refresh that fails leaves the token in use until it expires: the
// batch goes with it, nothing is retried, the failure is logged, and the
// refresh is tried again later.
func TestOAuthFailedRefreshKeepsTheTokenInUse(t *testing.T) {
	testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Minute)
		e := newEnv(t, api, WithOAuth(testOAuth()))
		send := func(id string) {
			e.enqueue(Track{MessageId: id, UserId: "u", Event: "E"})
			e.flush()
		}
		send("at-0s")
		time.Sleep(31 * time.Second)
		api.TokenScript(analyticstest.Status(503))
		send("at-31s")
		time.Sleep(10 * time.Second) // halfway from 31 s to the token's end, at 50 s
		send("at-41s")
		e.close()

		assert.Equal(t, []int{200, 503, 200}, statuses(api.TokenRequests()), "token requests")
		assert.Equal(t, []int{200, 200, 200}, statuses(api.Requests()), "batches")
		auths := authorizations(api)
		assert.Equal(t, auths[0], auths[1], "the batch after the failed refresh carries the token in use")
		assert.NotEqual(t, auths[1], auths[2], "the next refresh replaced it")
		assert.Zero(t, e.client.Stats().Retries, "retries")
		assert.Contains(t, e.logs.String(), "OAuth token refresh failed", "the log")
	})
}

// An upload refused for its token (the token was revoked) drops it, gets
// a fresh one and is sent again at once, once, spending no retry; the
// resend carries X-Retry-Count.
func TestOAuthRefusedTokenIsReplacedAndTheBatchSentAgain(t *testing.T) {
	testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Hour)
		e := newEnv(t, api, WithOAuth(testOAuth()), WithRetryCount(0))
		e.enqueue(tracks("before", 1)...)
		e.flush()
		api.RevokeTokens()
		start := time.Now()
		msgs := tracks("after", 3)
		e.enqueue(msgs...)
		e.flush()
		took := time.Since(start)
		e.close()

		e.assertDeliveredOnce(msgs)
		reqs := api.Requests()
		require.Equal(t, []int{200, 401, 200}, statuses(reqs), "batches")
		assert.Equal(t, "1", reqs[2].Header.Get("X-Retry-Count"), "the resend's X-Retry-Count")
		assert.NotEqual(t, reqs[1].Header.Get("Authorization"), reqs[2].Header.Get("Authorization"), "the resend's token is fresh")
		assert.Len(t, api.TokenRequests(), 2, "token requests")
		assert.Equal(t, RetryStats{Token: 1}, e.client.Stats().Retries, "retries: one with a fresh token, none counted")
		assert.Equal(t, time.Duration(0), took, "the resend waited for nothing")
	})
}

// The statuses that refuse the token: 401, 403 and 511, and a 400 whose
// WWW-Authenticate challenges Bearer, get a fresh token once; refused
// again, the batch fails as a fatal status, with what to check. A 400
// without that challenge is the batch's, fatal at once, the token kept.
func TestOAuthSecondRefusalFailsWithWhatToCheck(t *testing.T) {
	bearer400 := analyticstest.Answer{Status: 400, Header: http.Header{"Www-Authenticate": {`Bearer error="invalid_request"`}}}
	tests := []struct {
		name     string
		answer   analyticstest.Answer
		requests int
	}{
		{"401", analyticstest.Status(401), 2},
		{"403", analyticstest.Status(403), 2},
		{"511", analyticstest.Status(511), 2},
		{"400 challenging Bearer", bearer400, 2},
		{"400 of the payload", analyticstest.Status(400), 1},
	}
	testsupport.RSAKeys()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := oauthAPI(time.Hour).Rule(always(tt.answer))
				e := newEnv(t, api, WithOAuth(testOAuth()))
				e.enqueue(tracks("m", 2)...)
				e.close()

				assert.Len(t, api.Requests(), tt.requests, "batch requests")
				assert.Len(t, api.TokenRequests(), tt.requests, "token requests")
				failures := e.out.Failures()
				require.Len(t, failures, 2, "failures")
				err := failures[0].Err
				assert.ErrorIs(t, err, ErrFatalStatus)
				var be *BatchError
				require.ErrorAs(t, err, &be)
				assert.Equal(t, tt.requests, be.Attempts, "attempts")
				assert.Equal(t, RetryStats{Token: int64(tt.requests - 1)}, e.client.Stats().Retries, "retries")
				const hint = "check that the source is connected to the OAuth app"
				if tt.requests == 2 {
					assert.Contains(t, err.Error(), hint, "the error says what to check")
					var record string
					for line := range strings.Lines(e.logs.String()) {
						if strings.Contains(line, "events not delivered") {
							record = line
						}
					}
					assert.Contains(t, record, "the tracking API refused the OAuth access token (the error says what to check)", "the log")
					assert.Equal(t, 1, strings.Count(record, hint), "the failure's record says what to check once:\n%s", record)
				} else {
					assert.NotContains(t, err.Error(), hint, "a payload's 400 blames no token")
				}
			})
		})
	}
}

// A token endpoint that fails (5xx, no answer) takes the backoff path of
// every batch that waits for it: spent retries, then the events fail with
// the token request's error and what to check. Until then no batch is
// sent without a token.
func TestOAuthTokenEndpointDownTakesTheBackoffPath(t *testing.T) {
	testsupport.RSAKeys()
	t.Run("recovers", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := oauthAPI(time.Hour).TokenScript(analyticstest.Status(503), analyticstest.Answer{Drop: true}, analyticstest.Status(500))
			e := newEnv(t, api, WithOAuth(testOAuth()), withExactBackoff())
			msgs := tracks("m", 3)
			e.enqueue(msgs...)
			start := time.Now()
			e.flush()
			took := time.Since(start)
			e.close()

			e.assertDeliveredOnce(msgs)
			assert.Equal(t, []int{503, 0, 500, 200}, statuses(api.TokenRequests()), "token requests")
			assert.Equal(t, RetryStats{Backoff: 3}, e.client.Stats().Retries, "retries")
			assert.Equal(t, 250*time.Millisecond+500*time.Millisecond+time.Second, took, "the backoff schedule's waits")
			require.Len(t, api.Requests(), 1, "batch requests: one, once there is a token")
			assert.Equal(t, "3", api.Requests()[0].Header.Get("X-Retry-Count"), "the batch's fourth attempt")
		})
	})
	t.Run("fails", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := oauthAPI(time.Hour).TokenScript(analyticstest.Status(503), analyticstest.Status(503), analyticstest.Status(503))
			e := newEnv(t, api, WithOAuth(testOAuth()), WithRetryCount(2))
			e.enqueue(tracks("m", 2)...)
			e.close()

			assert.Empty(t, api.Requests(), "batch requests")
			assert.Len(t, api.TokenRequests(), 3, "token requests")
			failures := e.out.Failures()
			require.Len(t, failures, 2, "failures")
			err := failures[0].Err
			assert.ErrorIs(t, err, ErrRetriesExhausted)
			var te *TokenError
			require.ErrorAs(t, err, &te)
			assert.Equal(t, oauthServer+"/token", te.URL)
			assert.Contains(t, err.Error(), "HTTP 503 Service Unavailable; check that the auth server URL is right", "the error says what to check")
			assert.Contains(t, e.logs.String(), "no OAuth access token", "the log")
		})
	})
	t.Run("budget", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			api := oauthAPI(time.Hour).TokenScript(analyticstest.Status(503), analyticstest.Status(503), analyticstest.Status(503))
			e := newEnv(t, api, WithOAuth(testOAuth()), withExactBackoff(), WithMaxTotalBackoffDuration(time.Second))
			e.enqueue(tracks("m", 1)...)
			e.close()

			require.Len(t, e.out.Failures(), 1, "failures")
			assert.ErrorIs(t, e.out.Failures()[0].Err, ErrBackoffBudgetExceeded)
			assert.Len(t, api.TokenRequests(), 3, "token requests: waits of 250 ms and 500 ms fit, 1 s does not")
		})
	})
}

// A token endpoint's 429 takes the rate-limit path: the wait it asks for,
// in X-RateLimit-Reset (delta-seconds, a Unix time in seconds or
// milliseconds by its Date, an HTTP-date) or Retry-After, spends no retry.
func TestOAuthTokenEndpointRateLimitIsHonoured(t *testing.T) {
	reset := func(value func(now time.Time) string) func(time.Time) http.Header {
		return func(now time.Time) http.Header { return http.Header{"X-Ratelimit-Reset": {value(now)}} }
	}
	tests := []struct {
		name   string
		header func(now time.Time) http.Header
	}{
		{"X-RateLimit-Reset delta-seconds", reset(func(time.Time) string { return "30" })},
		{"X-RateLimit-Reset Unix seconds", reset(func(now time.Time) string { return strconv.FormatInt(now.Add(30*time.Second).Unix(), 10) })},
		{"X-RateLimit-Reset Unix milliseconds", reset(func(now time.Time) string { return strconv.FormatInt(now.Add(30*time.Second).UnixMilli(), 10) })},
		{"X-RateLimit-Reset HTTP-date", reset(func(now time.Time) string { return now.Add(30 * time.Second).UTC().Format(http.TimeFormat) })},
		{"Retry-After", func(time.Time) http.Header { return http.Header{"Retry-After": {"30"}} }},
	}
	testsupport.RSAKeys()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				api := oauthAPI(time.Hour).TokenScript(analyticstest.Answer{Status: 429, Header: tt.header(time.Now())})
				e := newEnv(t, api, WithOAuth(testOAuth()), withExactBackoff(), WithRetryCount(0))
				msgs := tracks("m", 2)
				e.enqueue(msgs...)
				e.flush()
				e.close()

				e.assertDeliveredOnce(msgs)
				tokens := api.TokenRequests()
				assert.Equal(t, []int{429, 200}, statuses(tokens), "token requests")
				assert.Equal(t, 30*time.Second, tokens[1].At.Sub(tokens[0].At), "the wait")
				assert.Equal(t, RetryStats{RateLimit: 1}, e.client.Stats().Retries, "retries")
			})
		})
	}
}

// A token request the endpoint refuses (the wrong key, key id, client id
// or region's server) fails its batches at once, as a fatal status, with
// the endpoint's error and what to check.
func TestOAuthRefusedTokenRequestFailsWithWhatToCheck(t *testing.T) {
	_, wrong := testsupport.RSAKeys()
	tests := []struct {
		name  string
		oauth func(o *OAuth)
		api   func(o *analyticstest.OAuth)
		want  string
	}{
		{"a key not registered", func(o *OAuth) { o.PrivateKey = wrong.PKCS1 }, nil, "does not verify"},
		{"a wrong key id", func(o *OAuth) { o.KeyID = "key-2" }, nil, "no public key with kid"},
		{"a wrong client id", func(o *OAuth) { o.ClientID = "app-2" }, nil, "not the OAuth app's id"},
		{"the other region's server", nil, func(o *analyticstest.OAuth) { o.Audience = OAuthAuthServerEU }, "aud"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				app, _ := testsupport.RSAKeys()
				side := analyticstest.OAuth{ClientID: oauthClientID, KeyID: oauthKeyID, PublicKey: &app.Key.PublicKey}
				if tt.api != nil {
					tt.api(&side)
				}
				o := testOAuth()
				if tt.oauth != nil {
					tt.oauth(&o)
				}
				api := newAPI().OAuth(side)
				e := newEnv(t, api, WithOAuth(o))
				e.enqueue(tracks("m", 2)...)
				e.close()

				assert.Empty(t, api.Requests(), "batch requests")
				assert.Len(t, api.TokenRequests(), 1, "token requests")
				failures := e.out.Failures()
				require.Len(t, failures, 2, "failures")
				err := failures[0].Err
				assert.ErrorIs(t, err, ErrFatalStatus)
				var te *TokenError
				assert.ErrorAs(t, err, &te)
				assert.Contains(t, err.Error(), tt.want, "the endpoint's error")
				assert.Contains(t, err.Error(), "check the client id, the key id and that its public key is registered in the OAuth app", "what to check")
				assert.Contains(t, e.logs.String(), "check the client id", "the log")
			})
		})
	}
}

// A client whose clock is off from the auth server's learns by how much
// from the Date of the refusal, signs the JWT again, once, and gets its
// token; later requests start from the corrected clock.
func TestOAuthCorrectsTheClockFromDate(t *testing.T) {
	testsupport.RSAKeys()
	for _, skew := range []time.Duration{10 * time.Minute, -10 * time.Minute} {
		t.Run(skew.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				app, _ := testsupport.RSAKeys()
				api := newAPI().OAuth(analyticstest.OAuth{ClientID: oauthClientID, KeyID: oauthKeyID, PublicKey: &app.Key.PublicKey, Skew: skew})
				e := newEnv(t, api, WithOAuth(testOAuth()))
				e.enqueue(tracks("first", 1)...)
				e.flush()
				api.RevokeTokens()
				e.enqueue(tracks("second", 1)...)
				e.close()

				tokens := api.TokenRequests()
				require.Equal(t, []int{400, 200, 200}, statuses(tokens), "token requests: one refused, then none")
				assert.ErrorContains(t, tokens[0].Err, map[bool]string{true: "Token is expired", false: "Token used before issued"}[skew > 0])
				iat := assertionClaims(t, tokens[2])["iat"].(float64)
				assert.Equal(t, float64(time.Now().Add(skew-5*time.Second).Unix()), iat, "the last JWT's iat, by the server's clock")
				assert.Equal(t, []int{200, 401, 200}, statuses(api.Requests()), "batches")
			})
		})
	}
}

// assertionClaims decodes the claims of the JWT a token request carried.
func assertionClaims(t *testing.T, r analyticstest.Request) map[string]any {
	t.Helper()
	form, err := url.ParseQuery(string(r.Body))
	require.NoError(t, err)
	parts := strings.Split(form.Get("client_assertion"), ".")
	require.Len(t, parts, 3, "the JWT's parts")
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var claims map[string]any
	require.NoError(t, json.Unmarshal(raw, &claims))
	return claims
}

// slowTokens is the mock behind a token endpoint that takes a while to
// answer: each token request waits delay (fake time), and the most in
// flight at once is counted.
type slowTokens struct {
	api            http.RoundTripper
	delay          time.Duration
	mu             sync.Mutex
	inFlight, most int
}

func (s *slowTokens) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Path == analyticstest.TokenPath {
		s.mu.Lock()
		s.inFlight++
		s.most = max(s.most, s.inFlight)
		s.mu.Unlock()
		time.Sleep(s.delay)
		defer func() {
			s.mu.Lock()
			s.inFlight--
			s.mu.Unlock()
		}()
	}
	return s.api.RoundTrip(r)
}

// A token request that fails fails every attempt that waited for it: each
// takes its backoff path, instead of asking again at once in turn.
func TestOAuthFailedTokenRequestFailsItsWaiters(t *testing.T) {
	testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Hour).TokenScript(analyticstest.Status(503), analyticstest.Status(503))
		slow := &slowTokens{api: api, delay: time.Second}
		e := newEnv(t, api, WithOAuth(testOAuth()), WithHTTPClient(&http.Client{Transport: slow, CheckRedirect: CheckRedirect}),
			WithFlushAt(1), WithMaxConcurrentRequests(8), WithAdaptiveSendRate(false), withExactBackoff())
		msgs := tracks("m", 8)
		e.enqueue(msgs...)
		e.close()

		e.assertDeliveredOnce(msgs)
		assert.Equal(t, []int{503, 503, 200}, statuses(api.TokenRequests()), "token requests")
		assert.Equal(t, RetryStats{Backoff: 16}, e.client.Stats().Retries, "retries: two for each of the 8 batches")
	})
}

// Batches that need a token at once wait for the one request in flight:
// 16 goroutines enqueueing, 8 uploads at a time, one token request.
func TestOAuthOneTokenRequestAtATime(t *testing.T) {
	testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Hour)
		slow := &slowTokens{api: api, delay: time.Second}
		e := newEnv(t, api, WithOAuth(testOAuth()), WithHTTPClient(&http.Client{Transport: slow, CheckRedirect: CheckRedirect}),
			WithFlushAt(5), WithMaxConcurrentRequests(8))
		var wg sync.WaitGroup
		var msgs []Message
		for g := range 16 {
			batch := tracks("g"+strconv.Itoa(g)+"-", 50)
			msgs = append(msgs, batch...)
			wg.Go(func() { e.enqueue(batch...) })
		}
		wg.Wait()
		e.close()

		e.assertDeliveredOnce(msgs)
		assert.Len(t, api.TokenRequests(), 1, "token requests")
		assert.Equal(t, 1, slow.most, "token requests in flight at once")
		assert.Zero(t, e.client.Stats().Retries, "retries")
	})
}

// Neither the private key nor a token nor a JWT appears in a log record,
// an error (its text or its body), Stats or the OAuth value printed,
// whatever the servers echo: the token endpoint its request's body (the
// JWT) in a 400, the tracking API a request's token in a 503, then in a
// 400 whose body the excerpt's 4 KiB cut through the token.
func TestOAuthSecretsAreNeverShown(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Hour)
		var mu sync.Mutex
		var secrets []string // every token and JWT sent
		tokenRequests, batchRequests := 0, 0
		echo := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			mu.Lock()
			defer mu.Unlock()
			if r.URL.Path == analyticstest.TokenPath {
				body, _ := r.GetBody()
				form, _ := io.ReadAll(body)
				q, _ := url.ParseQuery(string(form))
				secrets = append(secrets, q.Get("client_assertion"))
				if tokenRequests++; tokenRequests == 1 {
					return &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("bad assertion " + q.Get("client_assertion"))), Request: r}, nil
				}
				return api.RoundTrip(r)
			}
			token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			secrets = append(secrets, token, token[:20])
			switch batchRequests++; batchRequests {
			case 1:
				return &http.Response{StatusCode: 503, Header: http.Header{}, Body: io.NopCloser(strings.NewReader("busy; you sent Authorization: Bearer " + token)), Request: r}, nil
			case 2: // as net/http quotes a malformed answer
				return nil, fmt.Errorf("net/http: malformed HTTP status code %q", "Bearer "+token)
			case 4:
				cut := strings.Repeat("x", 4<<10-20) + token // the excerpt keeps 4 KiB: the token's first 20 bytes
				return &http.Response{StatusCode: 400, Header: http.Header{}, Body: io.NopCloser(strings.NewReader(cut)), Request: r}, nil
			}
			return api.RoundTrip(r)
		})
		e := newEnv(t, api, WithOAuth(testOAuth()), WithHTTPClient(&http.Client{Transport: echo}), WithRetryCount(2), withExactBackoff())
		e.enqueue(tracks("a", 1)...) // the token request is refused, echoing the JWT
		e.flush()
		e.enqueue(tracks("b", 1)...) // a 503 and a transport error echoing the token, then delivered
		e.flush()
		e.enqueue(tracks("c", 1)...) // 400 cut through the token
		e.close()

		stats, err := json.Marshal(e.client.Stats())
		require.NoError(t, err)
		var shown []string
		for _, o := range e.out.Failures() {
			shown = append(shown, o.Err.Error())
			var he *HTTPError
			if assert.ErrorAs(t, o.Err, &he) {
				shown = append(shown, he.Body)
			}
		}
		o := testOAuth()
		oauthJSON, _ := json.Marshal(o)
		shown = append(shown, e.logs.String(), string(stats), o.String(), o.GoString(), string(oauthJSON))
		require.Len(t, secrets, 10, "JWTs, tokens and their first 20 bytes sent")
		keyBody := strings.Split(app.PKCS8, "\n")[1] // a line of the key's base64
		for _, text := range shown {
			assert.NotContains(t, text, keyBody, "the private key")
			for _, s := range secrets {
				if s != "" {
					assert.NotContains(t, text, s, "a token or a JWT")
				}
			}
		}
		assert.Contains(t, e.logs.String(), "[REDACTED]", "what the servers echoed, scrubbed")
		assert.Len(t, e.out.Failures(), 2, "failures: the token request's refusal, and the 400")
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// New refuses an OAuth it cannot use, naming the problem, never the key.
func TestOAuthOptionErrors(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	small := testsupport.NewRSAKeyOfBits(1024)
	ecKey := testsupport.ECKeyPKCS8()
	dir := t.TempDir()
	tests := []struct {
		name string
		edit func(o *OAuth)
		want string
	}{
		{"no client id", func(o *OAuth) { o.ClientID = "" }, "ClientID must not be empty"},
		{"no key id", func(o *OAuth) { o.KeyID = "" }, "KeyID must not be empty"},
		{"no key", func(o *OAuth) { o.PrivateKey = "" }, "no private key"},
		{"two keys", func(o *OAuth) { o.PrivateKeyFile = "k.pem" }, "both PrivateKey and PrivateKeyFile"},
		{"not PEM", func(o *OAuth) { o.PrivateKey = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" }, "PrivateKey is not PEM"},
		{"a public key", func(o *OAuth) { o.PrivateKey = testsupport.PublicKeyPEM(&app.Key.PublicKey) }, "PrivateKey is a public key"},
		{"an EC key", func(o *OAuth) { o.PrivateKey = ecKey }, "PrivateKey is a *ecdsa.PrivateKey, not an RSA key"},
		{"a small key", func(o *OAuth) { o.PrivateKey = small.PKCS8 }, "a 1024-bit RSA key: RS256 wants 2048 bits or more"},
		{"an encrypted key", func(o *OAuth) {
			o.PrivateKey = strings.Replace(app.PKCS8, "PRIVATE KEY", "ENCRYPTED PRIVATE KEY", 2)
		}, "PrivateKey is an encrypted key"},
		{"a damaged key", func(o *OAuth) { o.PrivateKey = strings.Replace(app.PKCS8, "\nMII", "\nMIJ", 1) }, "PrivateKey is not a valid PRIVATE KEY"},
		{"a missing file", func(o *OAuth) { o.PrivateKey, o.PrivateKeyFile = "", dir+"/none.pem" }, "PrivateKeyFile: open " + dir + "/none.pem"},
		{"a bad auth server", func(o *OAuth) { o.AuthServer = "ftp://oauth2.segment.io" }, "AuthServer must be an absolute http or https URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := testOAuth()
			tt.edit(&o)
			_, err := New(testWriteKey, WithOAuth(o))
			var oe *OptionError
			require.ErrorAs(t, err, &oe)
			assert.Equal(t, "OAuth", oe.Option)
			assert.Contains(t, err.Error(), tt.want)
			for _, key := range []string{app.PKCS8, small.PKCS8, ecKey} {
				assert.NotContains(t, err.Error(), strings.Split(key, "\n")[1], "a line of a key")
			}
		})
	}
}

// Either PEM form of an RSA key is taken, from PrivateKey or from
// PrivateKeyFile; an empty AuthServer is Segment's default, and a trailing
// slash is dropped.
func TestOAuthKeyForms(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	file := t.TempDir() + "/key.pem"
	require.NoError(t, os.WriteFile(file, []byte(app.PKCS1), 0o600))
	for _, o := range []OAuth{
		{ClientID: "a", KeyID: "k", PrivateKey: app.PKCS8},
		{ClientID: "a", KeyID: "k", PrivateKey: app.PKCS1, AuthServer: OAuthAuthServerEU + "/"},
		{ClientID: "a", KeyID: "k", PrivateKeyFile: file, AuthServer: OAuthAuthServer},
	} {
		up, err := o.uploaderOAuth()
		require.NoError(t, err, "%v", o)
		assert.True(t, app.Key.Equal(up.Key), "%v: the key", o)
		assert.Contains(t, []string{OAuthAuthServer, OAuthAuthServerEU}, up.AuthServer, "%v: the auth server", o)
	}
	up, _ := OAuth{}.uploaderOAuth()
	assert.Nil(t, up, "the zero OAuth is off")
}

// The environment turns OAuth on (ANALYTICS_OAUTH_*), the key read from
// its file, and the client then uploads with a token.
func TestOAuthFromTheEnvironment(t *testing.T) {
	app, _ := testsupport.RSAKeys()
	file := t.TempDir() + "/key.pem"
	require.NoError(t, os.WriteFile(file, []byte(app.PKCS8), 0o600))
	synctest.Test(t, func(t *testing.T) {
		api := oauthAPI(time.Hour)
		environ := []string{
			"ANALYTICS_WRITE_KEY=" + testWriteKey,
			"ANALYTICS_ENDPOINT=http://tracking.test",
			"ANALYTICS_OAUTH_CLIENT_ID=" + oauthClientID,
			"ANALYTICS_OAUTH_KEY_ID=" + oauthKeyID,
			"ANALYTICS_OAUTH_PRIVATE_KEY_FILE=" + file,
			"ANALYTICS_OAUTH_AUTH_SERVER=" + oauthServer,
		}
		c, err := newFromEnviron(environ, []Option{WithHTTPClient(api.Client(CheckRedirect))})
		require.NoError(t, err)
		require.NoError(t, c.Enqueue(Track{UserId: "u", Event: "E"}))
		require.NoError(t, c.Close())
		assert.Equal(t, []int{200}, statuses(api.TokenRequests()), "token requests")
		assert.Equal(t, []int{200}, statuses(api.Requests()), "batches")

		_, err = newFromEnviron(environ[:3], nil)
		var oe *OptionError
		require.True(t, errors.As(err, &oe), "a client id alone: %v", err)
		assert.Contains(t, oe.Reason, "KeyID must not be empty")
	})
}
