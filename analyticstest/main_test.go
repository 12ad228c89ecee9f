package analyticstest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// sentAt and the envelope context of the batches the tests send.
const testSentAt = "2024-05-06T07:08:09.123Z"

// batch returns the body of a batch of track events with those messageIds.
func batch(ids ...string) string {
	events := make([]string, len(ids))
	for i, id := range ids {
		events[i] = fmt.Sprintf(`{"type":"track","event":"E","userId":"u","messageId":%q}`, id)
	}
	return `{"batch":[` + strings.Join(events, ",") + `],"sentAt":"` + testSentAt + `","context":{"library":{"name":"test"}}}`
}

func gzipped(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := io.WriteString(zw, s)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// start serves s on 127.0.0.1 until the test ends.
func start(t *testing.T, s *Server) *Listener {
	t.Helper()
	l, err := s.Start()
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return l
}

// plainClient is a net/http client with its own transport, closed when the
// test ends. Without keep-alive each request has a connection of its own,
// so a fault on one never turns into a transparent retry on another.
func plainClient(t *testing.T) *http.Client {
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// writeKey is the write key the tests' batches carry.
const writeKey = "wk"

// post sends body to url as the SDK would (JSON, with the write key; header
// adds to or replaces those) and returns the response with its body read.
func post(c *http.Client, url string, body []byte, header http.Header) (*http.Response, string, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.SetBasicAuth(writeKey, "")
	for k, v := range header {
		req.Header[k] = v
	}
	return doRead(c, req)
}

// onlyRequest returns the one request s recorded.
func onlyRequest(t *testing.T, s *Server) Request {
	t.Helper()
	reqs := s.Requests()
	require.Len(t, reqs, 1, "requests recorded")
	return reqs[0]
}

// recorded returns a channel that gets each request s records, so a test
// waits for a record without sleeping.
func recorded(s *Server) <-chan Request {
	ch := make(chan Request, 16)
	s.OnRequest(func(r Request) { ch <- r })
	return ch
}

func receive(t *testing.T, ch <-chan Request) Request {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		require.FailNow(t, "no request recorded within 10s")
		return Request{}
	}
}

func nopCloser(s string) io.ReadCloser { return io.NopCloser(strings.NewReader(s)) }

// noHijack is a ResponseWriter that cannot be hijacked.
type noHijack struct{}

func (noHijack) Header() http.Header         { return http.Header{} }
func (noHijack) Write(p []byte) (int, error) { return len(p), nil }
func (noHijack) WriteHeader(int)             {}

// doRead sends req with c and returns the response with its body read.
func doRead(c *http.Client, req *http.Request) (*http.Response, string, error) {
	resp, err := c.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}
