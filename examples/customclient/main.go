// Customclient gives the SDK an *http.Client of your own: a custom CA to
// verify the tracking API's certificate, a proxy, and dial and TLS
// timeouts, with the settings the SDK needs (no Timeout, the SDK's redirect
// rule, enough idle connections).
//
//	go run ./examples/customclient
//	go run ./examples/customclient -proxy http://127.0.0.1:3128
//	go run ./examples/customclient -endpoint https://analytics.internal -ca-file ca.pem -write-key KEY
//
// By default it starts a mock tracking API behind TLS on 127.0.0.1 with a
// self-signed certificate, which plays the part of "your CA": the SDK's
// default client refuses that server, the client built here trusts it.
package main

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sync/atomic"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "customclient:", err)
		os.Exit(1)
	}
}

// maxConcurrentRequests is passed to the SDK and sizes the connection pool.
const maxConcurrentRequests = 4

// newHTTPClient returns an HTTP client that trusts only the CAs in caPEM and
// goes through proxy (nil: the HTTPS_PROXY/HTTP_PROXY/NO_PROXY variables).
func newHTTPClient(caPEM []byte, proxy *url.URL) (*http.Client, error) {
	// NewCertPool trusts your CA alone: right for a private endpoint. To
	// trust it on top of the public CAs (a TLS-inspecting proxy in front of
	// a public endpoint), start from x509.SystemCertPool() instead.
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no certificate found in the CA PEM")
	}
	proxyFunc := http.ProxyFromEnvironment // never used for localhost or 127.0.0.1
	if proxy != nil {
		proxyFunc = http.ProxyURL(proxy)
	}
	transport := &http.Transport{
		Proxy:               proxyFunc,
		TLSClientConfig:     &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout: 5 * time.Second,
		ForceAttemptHTTP2:   true,
		// Up to MaxConcurrentRequests uploads run at once; with fewer idle
		// connections kept, each burst would dial (and handshake) again.
		MaxIdleConnsPerHost: maxConcurrentRequests,
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{
		Transport: transport,
		// 307 and 308 are followed (they keep the POST and its body); 301,
		// 302 and 303 are not, since they would turn it into a bodiless GET.
		CheckRedirect: analytics.CheckRedirect,
		// No Timeout: the SDK gives each attempt its own deadline
		// (WithRequestTimeout) and retries a timeout. A Timeout here would
		// be a second, hidden limit on every attempt, retries included.
		Timeout: 0,
	}, nil
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("customclient", flag.ContinueOnError)
	endpoint := fs.String("endpoint", "", "https base URL of the tracking API (default: a mock behind TLS in this process)")
	caFile := fs.String("ca-file", "", "PEM file of the CA that signed -endpoint's certificate")
	proxyFlag := fs.String("proxy", "", "proxy URL, e.g. http://127.0.0.1:3128 (default: from HTTPS_PROXY and NO_PROXY)")
	writeKey := fs.String("write-key", "demo-write-key", "write key of the tracking API")
	events := fs.Int("events", 100, "events to send")
	grace := fs.Duration("shutdown-timeout", 30*time.Second, "how long to wait for delivery, retries included")
	retries := fs.Int("retries", 10, "backoff retries per batch (analytics.WithRetryCount)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var proxy *url.URL
	if *proxyFlag != "" {
		u, err := url.Parse(*proxyFlag)
		if err != nil {
			return fmt.Errorf("-proxy: %w", err)
		}
		proxy = u
	}

	var caPEM []byte
	var mock *analyticstest.Server
	if *endpoint == "" {
		// The mock tracking API behind TLS, on 127.0.0.1, with a fresh
		// self-signed certificate: its certificate is the CA to trust.
		mock = analyticstest.New()
		api := httptest.NewUnstartedServer(mock)
		api.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake below is expected
		api.StartTLS()
		defer api.Close()
		*endpoint = api.URL
		caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
		fmt.Fprintf(stdout, "tracking API: a mock at %s, self-signed certificate\n", api.URL)

		// Without the CA, the SDK's default client (the system's CAs)
		// refuses the server: nothing is sent to a server it cannot verify.
		// No retries: the first answer is the point.
		fmt.Fprintf(stdout, "SDK's default client:  %s\n", send(ctx, *grace, *endpoint, *writeKey, 1, analytics.WithRetryCount(0)))
	} else {
		b, err := os.ReadFile(*caFile)
		if err != nil {
			return fmt.Errorf("-endpoint needs -ca-file: %w", err)
		}
		caPEM = b
	}

	hc, err := newHTTPClient(caPEM, proxy)
	if err != nil {
		return err
	}
	// The SDK never closes the idle connections of a client it was given:
	// the client is yours, and may be shared with other code.
	defer hc.CloseIdleConnections()

	result := send(ctx, *grace, *endpoint, *writeKey, *events,
		analytics.WithHTTPClient(hc),
		analytics.WithMaxConcurrentRequests(maxConcurrentRequests),
		analytics.WithRequestTimeout(10*time.Second), // per attempt; the default
		analytics.WithRetryCount(*retries),
	)
	fmt.Fprintf(stdout, "your own http.Client:  %s\n", result)
	if mock != nil {
		fmt.Fprintf(stdout, "tracking API received: %d distinct events\n", len(mock.Delivered()))
	}
	return result.err()
}

// result is what happened to the events of one client.
type result struct {
	events, delivered, failed int64
	firstErr                  error
	shutdownErr               error
}

func (r result) String() string {
	if r.failed == 0 && r.shutdownErr == nil {
		return fmt.Sprintf("%d of %d events delivered", r.delivered, r.events)
	}
	s := fmt.Sprintf("%d of %d events delivered, %d failed", r.delivered, r.events, r.failed)
	var tlsErr *tls.CertificateVerificationError
	var netErr *analytics.TransportError
	switch {
	case errors.As(r.firstErr, &tlsErr) && errors.As(r.firstErr, &netErr):
		s += fmt.Sprintf(": %v (%s)", tlsErr.Err, netErr.Phase)
	case r.firstErr != nil:
		s += ": " + r.firstErr.Error()
	}
	return s
}

func (r result) err() error {
	switch {
	case r.failed > 0:
		return fmt.Errorf("%d of %d events failed, the first with: %w", r.failed, r.events, r.firstErr)
	case r.shutdownErr != nil:
		return r.shutdownErr
	}
	return nil
}

// send sends n events to endpoint through a client made with opts, shuts
// it down within grace and returns what happened.
func send(ctx context.Context, grace time.Duration, endpoint, writeKey string, n int, opts ...analytics.Option) result {
	// The callback counts deliveries and keeps the first error (err is nil
	// for a delivered event); it is called from several goroutines at once.
	var delivered, failed atomic.Int64
	var firstErr atomic.Pointer[error]
	callback := analytics.CallbackFunc(func(_ analytics.Message, err error) {
		if err == nil {
			delivered.Add(1)
			return
		}
		failed.Add(1)
		firstErr.CompareAndSwap(nil, &err)
	})
	opts = append([]analytics.Option{analytics.WithEndpoint(endpoint), analytics.WithCallback(callback)}, opts...)
	client, err := analytics.New(writeKey, opts...)
	if err != nil {
		return result{events: int64(n), failed: int64(n), firstErr: err}
	}
	r := result{events: int64(n)}
	for i := range n {
		err := client.Enqueue(analytics.Identify{
			UserId: fmt.Sprintf("user-%d", i),
			Traits: analytics.NewTraits().SetEmail(fmt.Sprintf("user-%d@example.com", i)).Set("plan", "pro"),
		})
		if err != nil { // refused, so no callback: count it here
			r.failed++
			r.firstErr = cmp.Or(r.firstErr, err)
		}
	}
	shutdownCtx, cancel := context.WithTimeout(ctx, grace)
	defer cancel()
	r.shutdownErr = client.Shutdown(shutdownCtx)
	r.delivered = delivered.Load()
	r.failed += failed.Load()
	if p := firstErr.Load(); p != nil {
		r.firstErr = cmp.Or(r.firstErr, *p)
	}
	return r
}
