package consumer

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/dualpath/analytics-go/retry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingBody returns its text, then err.
type failingBody struct {
	r   io.Reader
	err error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if n, _ := b.r.Read(p); n > 0 {
		return n, nil
	}
	return 0, b.err
}

// TestHTTPErrorKeepsTheBodyReadError: an error response whose body breaks
// off keeps the read's error, as the body returned it, and the excerpt read
// before it.
func TestHTTPErrorKeepsTheBodyReadError(t *testing.T) {
	errRead := errors.New("connection reset while reading the body")
	u := New(Config{WriteKey: "k"})
	resp := &http.Response{
		StatusCode: http.StatusBadRequest,
		Header:     http.Header{},
		Body:       io.NopCloser(&failingBody{r: strings.NewReader("bad req"), err: errRead}),
	}
	_, err := u.readResponse(context.Background(), resp, "")
	var he *HTTPError
	require.ErrorAs(t, err, &he)
	assert.Same(t, errRead, he.BodyErr, "BodyErr")
	assert.Equal(t, "bad req", he.Body)
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

func TestSwitchingProtocolsEndsAtShutdown(t *testing.T) {
	url := rawServer(t, switchingProtocols)
	up := realUploader(t, url, time.Hour, nil) // only the shutdown can end it
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// The shutdown comes once net/http has handed back the 101: from then
	// on only the SDK can end the read.
	client := *up.cfg.Client
	client.Transport = afterRoundTrip{client.Transport, func() { cancel(errors.New("shutdown deadline")) }}
	up.cfg.Client = &client
	err := deliverOnce(t, ctx, up)
	assert.Error(t, err, "a 101 that never ends was reported delivered")
}

func (a afterRoundTrip) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := a.RoundTripper.RoundTrip(r)
	if err == nil {
		a.f()
	}
	return resp, err
}
