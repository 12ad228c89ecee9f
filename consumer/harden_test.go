package consumer

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/retry"
)

// hangGuard is how long a test waits for a call that must end by itself
// before declaring it hung: far above any deadline the tests set, so that
// it holds on a loaded machine.
const hangGuard = 30 * time.Second

// rawServer listens on 127.0.0.1 and runs serve for each connection, with
// the request already read. It returns the base URL. Every connection and
// goroutine ends at cleanup.
func rawServer(t *testing.T, serve func(c net.Conn, req *http.Request)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				req, err := http.ReadRequest(bufio.NewReader(c))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				serve(c, req)
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String()
}

// refusedAddr returns a 127.0.0.1 address nothing listens on.
func refusedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// realUploader is an Uploader over real sockets with the SDK's own HTTP
// client, real time and no retries, logging to logs.
func realUploader(t *testing.T, endpoint string, timeout time.Duration, logs io.Writer) *Uploader {
	t.Helper()
	client := NewHTTPClient(2)
	t.Cleanup(client.CloseIdleConnections)
	policy := retry.DefaultPolicy()
	policy.RetryCount = 0
	if logs == nil {
		logs = io.Discard
	}
	return New(Config{
		Endpoint:              endpoint,
		WriteKey:              testKey,
		UserAgent:             "analytics-go/test",
		Context:               []byte(`{}`),
		Client:                client,
		RequestTimeout:        timeout,
		MaxBodyBytes:          maxBodyBytes,
		MaxConcurrentRequests: 2,
		Policy:                policy,
		Logger:                slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
}

const testKey = "wk-0123456789abcdef0123456789abcdef"

// deliverOnce runs one Deliver of one event and returns its error. It
// fails the test if Deliver has not returned within hangGuard.
func deliverOnce(t *testing.T, ctx context.Context, up *Uploader) error {
	t.Helper()
	var out []outcome
	done := make(chan struct{})
	go func() {
		defer close(done)
		slot, err := up.Acquire(ctx)
		if err != nil {
			out = append(out, outcome{0, 1, err})
			return
		}
		up.Deliver(ctx, slot, events(1), func(lo, hi int, err error) {
			out = append(out, outcome{lo, hi, err})
		})
	}()
	select {
	case <-done:
	case <-time.After(hangGuard):
		require.FailNow(t, "Deliver hangs", "it had not returned after %v", hangGuard)
	}
	return one(t, out, 1)
}

// switchingProtocols answers 101 with an h2c upgrade and then says
// nothing, keeping the connection open until the client closes it.
func switchingProtocols(c net.Conn, _ *http.Request) {
	_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n")
	_, _ = io.Copy(io.Discard, c) // until the client closes it
}

func TestSwitchingProtocolsEndsAtTheAttemptDeadline(t *testing.T) {
	url := rawServer(t, switchingProtocols)
	up := realUploader(t, url, 100*time.Millisecond, nil)
	err := deliverOnce(t, context.Background(), up)
	var herr *HTTPError
	require.ErrorAs(t, err, &herr)
	assert.Equal(t, http.StatusSwitchingProtocols, herr.StatusCode)
	assert.ErrorIs(t, err, retry.ErrFatalStatus)
}

// afterRoundTrip calls f each time its transport has returned a response.
type afterRoundTrip struct {
	http.RoundTripper
	f func()
}

func (a afterRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.RoundTripper.RoundTrip(r)
	if err == nil {
		a.f()
	}
	return resp, err
}

func TestSwitchingProtocolsEndsAtShutdown(t *testing.T) {
	url := rawServer(t, switchingProtocols)
	up := realUploader(t, url, time.Hour, nil) // only the shutdown can end it
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// The shutdown comes once net/http has handed back the 101: from then
	// on only the SDK can end the read.
	client := *up.client
	client.Transport = afterRoundTrip{client.Transport, func() { cancel(errors.New("shutdown deadline")) }}
	up.client = &client
	err := deliverOnce(t, ctx, up)
	assert.Error(t, err, "a 101 that never ends was reported delivered")
}

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
			up.policy.RetryCount = 1 // one retry: a per-attempt WARN line too
			up.policy.BackoffBase = 0
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
	plain := &TransportError{Phase: PhaseWritten, Err: context.DeadlineExceeded}
	got, ok := s.error(plain).(*TransportError)
	require.True(t, ok, "the scrubbed error is a *TransportError")
	assert.Equal(t, context.DeadlineExceeded, got.Err, "an error without the key was changed")
	// The key in a *url.Error: the type and the inner chain stay.
	inner := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	ue := s.error(&TransportError{Phase: PhaseNotConnected, Err: &neturl.Error{Op: "Post", URL: "http://x.test/?k=" + testKey, Err: inner}})
	var op *net.OpError
	require.ErrorAs(t, ue, &op)
	assert.Same(t, inner, op, "the *net.OpError inside")
	assertNoKey(t, "scrubbed url.Error", ue.Error())
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

func TestRedirectToARefusedPortIsNotWritten(t *testing.T) {
	target := "http://" + refusedAddr(t) + "/v1/batch"
	url := rawServer(t, func(c net.Conn, _ *http.Request) {
		fmt.Fprintf(c, "HTTP/1.1 307 Temporary Redirect\r\nLocation: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", target)
	})
	up := realUploader(t, url, 5*time.Second, nil)
	err := deliverOnce(t, context.Background(), up)
	var te *TransportError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, PhaseNotConnected, te.Phase, "the last hop never connected")
	assert.False(t, te.Written(), "written")
	c := up.Counters()
	assert.Equal(t, int64(1), c.TransportErrorsNotWritten)
	assert.Zero(t, c.TransportErrorsWritten)
}
