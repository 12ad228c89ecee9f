package faults

// The write key never appears in a log line, an error, or a panic the SDK
// recovers: whatever fails, at every log level, in every form an error can
// be printed.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/testsupport"
)

// secrets are the forms the write key takes on the wire and in memory.
var secrets = testsupport.WriteKeyForms(testWriteKey)

// sink collects every text the SDK hands the application.
type sink struct {
	mu    sync.Mutex
	texts []string
}

func (s *sink) add(where string, texts ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range texts {
		s.texts = append(s.texts, where+": "+x)
	}
}

func (s *sink) addErr(where string, err error) {
	if err != nil {
		s.add(where, fmt.Sprintf("%v | %+v | %#v", err, err, err), testsupport.RenderError(err))
	}
}

// leaks returns the texts that hold a form of the write key.
func (s *sink) leaks() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, x := range s.texts {
		for _, secret := range secrets {
			if strings.Contains(x, secret) {
				out = append(out, x)
				break
			}
		}
	}
	return out
}

// runScenario sends events through a client set up by opts, whose
// callback panics with every error it gets, and hands everything the SDK
// said to out: logs, callback errors, Enqueue, Flush and Shutdown errors,
// the client and its Stats printed.
func runScenario(t *testing.T, out *sink, endpoint string, hc *http.Client, shutdownAfter time.Duration, opts ...analytics.Option) {
	t.Helper()
	e := newEnv(t, endpoint, hc, append([]analytics.Option{analytics.WithFlushAt(5), analytics.WithRetryCount(2)}, opts...)...)
	e.out.SetHook(func(_ string, err error) {
		if err != nil {
			out.addErr("callback", err)
			panic(err) // the SDK logs what it recovers
		}
		panic("delivered")
	})
	for _, m := range tracks("m", 12) {
		out.addErr("Enqueue", e.client.Enqueue(m))
	}
	out.addErr("Enqueue", e.client.Enqueue(analytics.Track{UserId: "u"}))                                                         // invalid
	out.addErr("Enqueue", e.client.Enqueue(analytics.Track{UserId: "u", Event: strings.Repeat("x", 40_000)}))                     // too large
	out.addErr("Enqueue", e.client.Enqueue(analytics.Track{UserId: "u", Event: "E", Properties: map[string]any{"f": func() {}}})) // not JSON
	ctx, cancel := context.WithTimeout(context.Background(), shutdownAfter)
	defer cancel()
	out.addErr("Flush", e.client.Flush(ctx))
	out.addErr("Shutdown", e.client.Shutdown(ctx))
	out.addErr("Enqueue after Close", e.client.Enqueue(analytics.Track{UserId: "u", Event: "E"}))
	out.addErr("Flush after Close", e.client.Flush(context.Background()))
	out.add("client", fmt.Sprintf("%v %+v %#v", e.client, e.client, e.client))
	st := e.client.Stats()
	out.add("Stats", fmt.Sprintf("%+v %#v", st, st))
	logs := e.logs.All()
	for _, r := range logs {
		out.add("log", r.Text)
	}
	assert.NotEmpty(t, logs, "no log records: the scenario did not exercise the logger")
}

func TestWriteKeyNeverLeaks(t *testing.T) {
	leakCheck(t)
	authHeader := "Basic " + secrets[1]
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return "https://" + ln.Addr().String()
	}()
	scenarios := []struct {
		name     string
		setup    func(*Server)
		ownHTTP  bool // the SDK's own client, which does not trust the test CA
		endpoint string
		within   time.Duration
	}{
		{name: "statuses", setup: func(s *Server) {
			s.Script(Answer{Status: 401, Body: "invalid write key"}, Answer{Status: 400, Body: `{"error":"bad request"}`},
				Answer{Status: 302, Header: http.Header{"Location": {"/elsewhere"}}},
				Answer{Status: 301, Header: http.Header{"Location": {"http://elsewhere.test/"}}},
				Answer{Status: 429, Header: http.Header{"Retry-After": {"1"}}, Body: "slow down"})
			s.Default(Answer{Status: 503, Body: "busy"})
		}},
		{name: "dropped connections", setup: func(s *Server) {
			s.Script(Answer{Action: CloseRaw}, Answer{Action: Reset}, Answer{Action: PartialHeaders}, Answer{Action: CloseTLS})
			s.Default(Answer{Action: Stall})
		}},
		{name: "connections closed before TLS", setup: func(s *Server) { s.ConnDefault(ConnClose) }},
		{name: "TLS verification failure", ownHTTP: true},
		{name: "refused port", endpoint: refused},
		{name: "redirect to a refused port with the key in the URL", setup: func(s *Server) {
			to := strings.Replace(refused, "https://", "https://"+testWriteKey+"@", 1) + "/v1/batch?key=" + testWriteKey
			s.Default(Answer{Status: http.StatusTemporaryRedirect, Header: http.Header{"Location": {to}}})
		}},
		{name: "shutdown cut short", setup: func(s *Server) { s.Default(Answer{Action: Stall}) }, within: 100 * time.Millisecond},
	}
	out := &sink{}
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			s := newServer(t)
			if sc.setup != nil {
				sc.setup(s)
			}
			endpoint, hc := s.URL, s.HTTPClient(t, 0)
			if sc.endpoint != "" {
				endpoint = sc.endpoint
			}
			if sc.ownHTTP {
				hc = nil
			}
			within := sc.within
			if within == 0 {
				within = 20 * time.Second
			}
			runScenario(t, out, endpoint, hc, within,
				analytics.WithRequestTimeout(150*time.Millisecond), analytics.WithRateLimitRetryAfterCap(2*time.Millisecond))
			// The key did reach the server: the test looks for the right
			// thing.
			for i, r := range s.Received() {
				require.Equal(t, authHeader, r.Header.Get("Authorization"), "request %d", i)
			}
		})
	}

	// New's errors name the option, never the key.
	for _, opt := range []analytics.Option{
		analytics.WithFlushAt(0), analytics.WithEndpoint("ftp://x"), analytics.WithEndpoint("https://h/?key=" + testWriteKey[:4]),
		analytics.WithRequestTimeout(-1), analytics.WithHTTPClient(nil),
	} {
		_, err := analytics.New(testWriteKey, opt)
		assert.Error(t, err, "New accepted an invalid option")
		out.addErr("New", err)
	}

	for _, leak := range out.leaks() {
		assert.Fail(t, "the write key leaked", "%.500s", leak)
	}
	assert.GreaterOrEqual(t, len(out.texts), 100, "texts collected: the scenarios did not run")
	retried := slices.ContainsFunc(out.texts, func(x string) bool { return strings.Contains(x, "will retry") })
	assert.True(t, retried, "no log record of a retry: the scenarios did not exercise the retry log")
}

// A server (or a proxy's error page) that echoes the request's
// Authorization header in its error body. The SDK keeps the start of an
// error body in HTTPError.Body, which goes into the error and the log, so
// it must scrub the key from it.
func TestWriteKeyEchoedByServer(t *testing.T) {
	leakCheck(t)
	s := newServer(t).Default(Answer{Status: 401, Body: "unauthorized: Authorization: Basic " + secrets[1]})
	out := &sink{}
	runScenario(t, out, s.URL, s.HTTPClient(t, 0), 20*time.Second)
	if leaks := out.leaks(); len(leaks) > 0 {
		assert.Fail(t, "the write key leaked", "%d texts leak it, e.g. %.300s", len(leaks), leaks[0])
	}
}

// A 307 from the HTTPS endpoint to plain HTTP on the same host. net/http
// keeps the Authorization header on a redirect to the same host whatever
// the scheme, so the SDK must refuse the downgrade, whatever the client's
// redirect policy: New guards every client it is given, so one with
// net/http's default policy (which follows a 307) is guarded as one with
// analytics.CheckRedirect is. The batch fails with ErrRedirect and nothing
// reaches the plain server.
func TestNoRedirectToPlainHTTP(t *testing.T) {
	for _, policy := range []struct {
		name  string
		check func(*http.Request, []*http.Request) error
	}{
		{"net/http's default policy", nil},
		{"analytics.CheckRedirect", analytics.CheckRedirect},
	} {
		t.Run(policy.name, func(t *testing.T) {
			leakCheck(t)
			var mu sync.Mutex
			var plainAuth []string
			plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				plainAuth = append(plainAuth, r.Header.Get("Authorization"))
				mu.Unlock()
			}))
			t.Cleanup(plain.Close)
			s := newServer(t).Default(Answer{Status: http.StatusTemporaryRedirect, Header: http.Header{"Location": {plain.URL + "/v1/batch"}}})
			hc := s.HTTPClient(t, 0)
			hc.CheckRedirect = policy.check
			// The plain server listens on 127.0.0.1 too: the same host,
			// another port and scheme.
			e := newEnv(t, s.URL, hc)
			msgs := tracks("m", 3)
			e.enqueue(msgs...)
			e.close()

			mu.Lock()
			got := slices.Clone(plainAuth)
			mu.Unlock()
			require.Empty(t, got, "the plain-HTTP server received requests; their Authorization headers")
			_, failed := e.out.Split(t, ids(msgs))
			for id, err := range failed {
				assert.ErrorIs(t, err, analytics.ErrRedirect, id)
			}
			assert.Equal(t, len(msgs), len(failed), "events failed: all, with ErrRedirect")
		})
	}
}
