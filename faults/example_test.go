package faults

// The "custom CA or proxy" snippet of docs/httpclient.md, compiled
// (Example) and run (TestCustomCAAndProxy: through a CONNECT proxy to the
// TLS test server).

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	analytics "github.com/dualpath/analytics-go"
)

// newHTTPClient returns an http.Client for analytics.WithHTTPClient that
// trusts the CA certificates in caPEM (on top of the system's) and, when
// proxy is not nil, goes through that proxy (HTTPS through a CONNECT
// tunnel). It keeps certificate verification on and the SDK's redirect
// rule.
func newHTTPClient(caPEM []byte, proxy *url.URL) (*http.Client, error) {
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no PEM certificate in the CA file")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	if proxy != nil {
		transport.Proxy = http.ProxyURL(proxy) // the default is http.ProxyFromEnvironment
	}
	transport.MaxIdleConnsPerHost = 8 // as many as WithMaxConcurrentRequests
	return &http.Client{
		Transport:     transport,
		CheckRedirect: analytics.CheckRedirect, // the SDK's redirect rule
		// No Timeout: each attempt has its own (WithRequestTimeout).
	}, nil
}

// A tracking API behind a private CA, reached through a proxy.
func Example_customCAAndProxy() {
	caPEM, err := os.ReadFile("/etc/ssl/private/tracking-ca.pem")
	if err != nil {
		log.Fatal(err)
	}
	proxy, err := url.Parse("http://proxy.internal:3128")
	if err != nil {
		log.Fatal(err)
	}
	httpClient, err := newHTTPClient(caPEM, proxy)
	if err != nil {
		log.Fatal(err)
	}
	client, err := analytics.New("YOUR_WRITE_KEY",
		analytics.WithEndpoint("https://tracking.internal.example"),
		analytics.WithHTTPClient(httpClient),
	)
	if err != nil {
		log.Fatal(err)
	}
	defer httpClient.CloseIdleConnections() // the SDK never closes a client it was given
	defer client.Close()

	_ = client.Enqueue(analytics.Track{UserId: "user-42", Event: "Signed Up"})
}

// connectProxy is an HTTP proxy that only tunnels (CONNECT), as a
// corporate egress proxy does for HTTPS. It counts its tunnels.
type connectProxy struct {
	*httptest.Server
	tunnels atomic.Int64
	wg      sync.WaitGroup
}

func startConnectProxy(t *testing.T) *connectProxy {
	t.Helper()
	p := &connectProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		dst, err := net.Dial("tcp", r.Host)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		src, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			dst.Close()
			return
		}
		p.tunnels.Add(1)
		p.wg.Add(2) // this handler and its copy the other way, once hijacked
		defer p.wg.Done()
		_, _ = io.WriteString(src, "HTTP/1.1 200 Connection Established\r\n\r\n")
		go func() {
			defer p.wg.Done()
			_, _ = io.Copy(dst, buf) // what the client sent after CONNECT may be buffered
			dst.Close()
			src.Close()
		}()
		_, _ = io.Copy(src, dst)
		src.Close()
		dst.Close()
	}))
	t.Cleanup(func() {
		p.Close()
		p.wg.Wait()
	})
	return p
}

func TestCustomCAAndProxy(t *testing.T) {
	leakCheck(t)
	s := newServer(t)
	proxy := startConnectProxy(t)
	proxyURL, err := url.Parse(proxy.URL)
	require.NoError(t, err)
	hc, err := newHTTPClient(s.CAPEM, proxyURL)
	require.NoError(t, err)
	t.Cleanup(hc.CloseIdleConnections)
	e := newEnv(t, s.URL, hc, analytics.WithFlushAt(10))
	msgs := tracks("m", 30)
	e.enqueue(msgs...)
	e.close()
	checkDeliveredOnce(t, s, e.out, ids(msgs))
	assert.Positive(t, proxy.tunnels.Load(), "CONNECT tunnels: the client did not go through the proxy")

	_, err = newHTTPClient([]byte("not a certificate"), nil)
	assert.Error(t, err, "newHTTPClient accepted a CA file without a certificate")
}
