package consumer

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// keyForms are the forms of testKey a server can echo.
func keyForms() []string {
	return []string{
		testKey,
		base64.StdEncoding.EncodeToString([]byte(testKey + ":")),
		base64.RawStdEncoding.EncodeToString([]byte(testKey + ":")),
	}
}

// assertNoKey fails if any form of testKey, or a run of 12 of its
// characters, is in text.
func assertNoKey(t *testing.T, what, text string) {
	t.Helper()
	for _, f := range keyForms() {
		for i := 0; i+12 <= len(f); i++ {
			if !assert.NotContains(t, text, f[i:i+12], "%s holds part of the write key", what) {
				return
			}
		}
	}
}

func TestTransportErrorsNeverCarryTheWriteKey(t *testing.T) {
	basic := base64.StdEncoding.EncodeToString([]byte(testKey + ":"))
	redirect := func(location string) func(net.Conn, *http.Request) {
		return func(c net.Conn, _ *http.Request) {
			fmt.Fprintf(c, "HTTP/1.1 307 Temporary Redirect\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", location)
		}
	}
	cases := []struct {
		name  string
		serve func(net.Conn, *http.Request)
		mark  string // what stands where the key was
	}{
		{"a malformed header line echoing Authorization", func(c net.Conn, req *http.Request) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nAuthorization Basic %s\r\nContent-Length: 0\r\n\r\n", basic)
		}, "[REDACTED]"},
		{"a malformed header line echoing the raw key", func(c net.Conn, req *http.Request) {
			fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nX-Write-Key %s\r\nContent-Length: 0\r\n\r\n", testKey)
		}, "[REDACTED]"},
		{"a redirect to a refused port with the key in the query",
			redirect("http://" + refusedAddr(t) + "/v1/batch?key=" + testKey), "[REDACTED]"},
		{"a redirect to a refused port with the key as user",
			redirect("http://" + testKey + "@" + refusedAddr(t) + "/v1/batch"), "[REDACTED]"},
		{"a redirect to a refused port with the key as password",
			// net/http masks a password itself.
			redirect("http://u:" + testKey + "@" + refusedAddr(t) + "/v1/batch"), "***"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			up := realUploader(t, rawServer(t, tc.serve), 5*time.Second, &logs)
			up.cfg.Policy.RetryCount = 1 // one retry: a per-attempt WARN line too
			up.cfg.Policy.BackoffBase = 0
			err := deliverOnce(t, context.Background(), up)
			var te *TransportError
			require.ErrorAs(t, err, &te)
			assertNoKey(t, "Error()", err.Error())
			assertNoKey(t, "%+v", fmt.Sprintf("%+v", err))
			assertNoKey(t, "%#v of the transport error's cause", fmt.Sprintf("%#v", te.Err))
			for e := errors.Unwrap(te); e != nil; e = errors.Unwrap(e) {
				assertNoKey(t, "an unwrapped cause", e.Error())
			}
			assertNoKey(t, "the log", logs.String())
			assert.Contains(t, err.Error(), tc.mark, "the key's place in the error")
			assert.Contains(t, logs.String(), "will retry", "the per-attempt log line")
		})
	}
}

func TestScrubbingKeepsTheErrorChain(t *testing.T) {
	s := newScrubber(testKey)
	// No key: the very same error.
	assert.Equal(t, context.DeadlineExceeded, s.cause(context.DeadlineExceeded), "an error without the key was changed")
	// The key in a *url.Error: the type and the inner chain stay.
	inner := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	ue := s.cause(&neturl.Error{Op: "Post", URL: "http://x.test/?k=" + testKey, Err: inner})
	var uerr *neturl.Error
	require.ErrorAs(t, ue, &uerr, "the scrubbed error is a *url.Error")
	var op *net.OpError
	require.ErrorAs(t, ue, &op)
	assert.Same(t, inner, op, "the *net.OpError inside")
	assertNoKey(t, "scrubbed url.Error", ue.Error())
}

// error, the one pass every error of an attempt and of a token request
// leaves through, scrubs every text each error type can print, keeping
// the types: a field a new error site fills from a server is covered
// without that site scrubbing it.
func TestScrubbedErrorsHoldTheKeyInNoField(t *testing.T) {
	s := newScrubber(testKey)
	keyURL := "http://x.test/?k=" + testKey
	httpErr := func() *HTTPError {
		return &HTTPError{StatusCode: 307, Body: "echo " + testKey, Location: keyURL,
			BodyErr: fmt.Errorf("read %s: reset", keyURL)}
	}
	assertScrubbedHTTP := func(what string, he *HTTPError) {
		t.Helper()
		assertNoKey(t, what+" Body", he.Body)
		assertNoKey(t, what+" Location", he.Location)
		require.Error(t, he.BodyErr, what+" BodyErr")
		assertNoKey(t, what+" BodyErr", he.BodyErr.Error())
		assert.Equal(t, 307, he.StatusCode, what+" StatusCode")
	}

	var he *HTTPError
	require.ErrorAs(t, s.error(httpErr()), &he, "an *HTTPError stays one")
	assertScrubbedHTTP("HTTPError", he)

	var te *TransportError
	require.ErrorAs(t, s.error(&TransportError{Phase: PhaseWritten, Err: errors.New("dial " + keyURL)}), &te, "a *TransportError stays one")
	assert.Equal(t, PhaseWritten, te.Phase)
	assertNoKey(t, "TransportError Err", te.Err.Error())

	// A token request's error: its URL, and the answer it holds.
	var tok *TokenError
	require.ErrorAs(t, s.error(&TokenError{URL: keyURL, Err: httpErr()}), &tok, "a *TokenError stays one")
	assertNoKey(t, "TokenError URL", tok.URL)
	require.ErrorAs(t, tok.Err, &he, "the *HTTPError inside a *TokenError stays one")
	assertScrubbedHTTP("TokenError's HTTPError", he)

	for _, err := range []error{s.error(httpErr()), s.error(&TokenError{URL: keyURL, Err: httpErr()})} {
		assertNoKey(t, "%+v", fmt.Sprintf("%+v", err))
	}
	// No key: the very same chain.
	plain := &TokenError{URL: "https://oauth.test/token", Err: context.DeadlineExceeded}
	require.ErrorAs(t, s.error(plain), &tok)
	assert.Equal(t, context.DeadlineExceeded, tok.Err, "an error without the key was changed")
}

func TestExcerptCutThroughTheKeyKeepsNoPartOfIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, form := range []string{"wk-secret", base64.StdEncoding.EncodeToString([]byte("wk-secret:"))} {
			for _, keep := range []int{1, 2, 5, len(form) - 1} {
				body := strings.Repeat(" ", excerptBytes-keep) + form + " and more"
				r := newRig(t, answer{status: 400, body: body})
				err := one(t, r.deliver(context.Background(), 1), 1)
				var herr *HTTPError
				require.ErrorAs(t, err, &herr)
				tail := herr.Body[max(0, len(herr.Body)-20):]
				assert.NotContains(t, tail, form[:2], "%d characters of %q before the cut: the excerpt's end", keep, form)
			}
		}
		// A body that was not cut keeps everything that is not the key.
		r := newRig(t, answer{status: 400, body: "bad key wk-secret, w"})
		err := one(t, r.deliver(context.Background(), 1), 1)
		var herr *HTTPError
		require.ErrorAs(t, err, &herr)
		assert.Equal(t, "bad key [REDACTED], w", herr.Body, "the body with the key redacted and nothing else removed")
	})
}
