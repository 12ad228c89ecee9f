package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/dualpath/analytics-go/analyticstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunEmbedded(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-events", "40"}, &out), "run; output:\n%s", &out)
	for _, want := range []string{
		"SDK's default client:  0 of 1 events delivered, 1 failed: x509: certificate signed by unknown authority (not connected, request not written)",
		"your own http.Client:  40 of 40 events delivered",
		"tracking API received: 40 distinct events",
	} {
		assert.Contains(t, out.String(), want, "output")
	}
}

// startTLSMock serves a mock tracking API behind TLS on 127.0.0.1 until
// the test ends, and writes its certificate to a PEM file.
func startTLSMock(t *testing.T) (mock *analyticstest.Server, api *httptest.Server, caFile string) {
	t.Helper()
	mock = analyticstest.New()
	api = httptest.NewUnstartedServer(mock)
	api.Config.ErrorLog = log.New(io.Discard, "", 0)
	api.StartTLS()
	t.Cleanup(api.Close)
	caFile = filepath.Join(t.TempDir(), "ca.pem")
	block := &pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw}
	require.NoError(t, os.WriteFile(caFile, pem.EncodeToMemory(block), 0o600))
	return mock, api, caFile
}

func TestRunEndpointAndCAFileThroughProxy(t *testing.T) {
	mock, api, caFile := startTLSMock(t)
	proxy := startConnectProxy(t)

	var out bytes.Buffer
	args := []string{"-endpoint", api.URL, "-ca-file", caFile, "-proxy", proxy.url, "-events", "30"}
	require.NoError(t, run(context.Background(), args, &out), "run(%q); output:\n%s", args, &out)
	assert.Len(t, mock.Delivered(), 30, "distinct events the mock received")
	// Every upload went through the proxy: a CONNECT tunnel to the API,
	// with TLS verified end to end against -ca-file.
	targets := proxy.targets()
	require.NotEmpty(t, targets, "CONNECTs that reached the proxy")
	for _, target := range targets {
		assert.Equal(t, api.URL, "https://"+target, "CONNECT target: the API's host")
	}
	assert.LessOrEqual(t, len(targets), maxConcurrentRequests, "tunnels for one run: connections reused")
}

func TestRunRefusesAnotherCA(t *testing.T) {
	mock, api, _ := startTLSMock(t)
	otherCA := filepath.Join(t.TempDir(), "other-ca.pem") // a CA, but not the one that signed api's certificate
	require.NoError(t, os.WriteFile(otherCA, newCA(t), 0o600))

	// The SDK would retry a failed handshake (a transport error); with no
	// retries the first attempt's error is the batch's, whatever the
	// machine's load.
	args := []string{"-endpoint", api.URL, "-ca-file", otherCA, "-events", "3", "-retries", "0"}
	err := run(context.Background(), args, io.Discard)
	var unknownAuthority x509.UnknownAuthorityError
	assert.ErrorAs(t, err, &unknownAuthority, "run with another CA")
	assert.Empty(t, mock.Delivered(), "events the mock received over a connection it should not have had")
}

// newCA returns the PEM of a new self-signed CA certificate.
func newCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "another CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestRunNeedsCAFileWithEndpoint(t *testing.T) {
	assert.Error(t, run(context.Background(), []string{"-endpoint", "https://127.0.0.1:1"}, io.Discard), "run with -endpoint and no -ca-file")
}

// connectProxy is a minimal HTTP proxy that only tunnels (CONNECT), as a
// corporate proxy does for HTTPS.
type connectProxy struct {
	url  string
	mu   sync.Mutex
	seen []string   // CONNECT targets
	open []net.Conn // both ends of every tunnel, closed when the test ends
	wg   sync.WaitGroup
}

func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	p := &connectProxy{}
	srv := httptest.NewServer(http.HandlerFunc(p.serve))
	p.url = srv.URL
	t.Cleanup(func() {
		srv.Close() // hijacked tunnels are no longer the server's: close them here
		p.mu.Lock()
		for _, c := range p.open {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *connectProxy) targets() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.seen...)
}

func (p *connectProxy) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodConnect {
		http.Error(w, "this proxy only tunnels", http.StatusMethodNotAllowed)
		return
	}
	upstream, err := net.DialTimeout("tcp", r.Host, 5*time.Second)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	client, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	p.mu.Lock()
	p.seen = append(p.seen, r.Host)
	p.open = append(p.open, client, upstream)
	p.mu.Unlock()
	if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	// The client speaks first (TLS ClientHello) only after the 200, so the
	// hijacked reader holds no buffered bytes.
	p.wg.Add(2)
	go p.pipe(upstream, client)
	go p.pipe(client, upstream)
}

func (p *connectProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	_, _ = io.Copy(dst, src)
	dst.Close()
	src.Close()
}
