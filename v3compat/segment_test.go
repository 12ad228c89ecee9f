package analytics

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// segmentHost is where a client with the default endpoint sends.
const segmentHost = "api.segment.io"

// fakeSegment stands in for https://api.segment.io on 127.0.0.1, for a
// program that uses the default endpoint and runs in a process of its own:
// an HTTPS server with a certificate for api.segment.io, reached through a
// CONNECT proxy. A process with Env in its environment (HTTPS_PROXY, and
// SSL_CERT_FILE trusting the certificate) reaches it as it would reach the
// real one, with net/http's own proxy and certificate handling; nothing
// leaves the machine, and no name is resolved.
type fakeSegment struct {
	// Env are the environment variables that send a process's requests
	// for api.segment.io here.
	Env []string

	api   *httptest.Server
	proxy net.Listener
	wg    sync.WaitGroup

	mu      sync.Mutex
	conns   map[net.Conn]struct{}
	targets []string // the host:port of each CONNECT
}

// startFakeSegment serves handler as api.segment.io until the test ends.
func startFakeSegment(t *testing.T, handler http.Handler) *fakeSegment {
	t.Helper()
	cert, certPEM := selfSigned(t, segmentHost)
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	api := httptest.NewUnstartedServer(handler)
	api.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	api.StartTLS()
	proxy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		api.Close()
		t.Fatal(err)
	}
	s := &fakeSegment{api: api, proxy: proxy, conns: map[net.Conn]struct{}{}}
	s.Env = []string{"HTTPS_PROXY=http://" + proxy.Addr().String(), "SSL_CERT_FILE=" + caFile}
	s.wg.Add(1)
	go s.accept()
	t.Cleanup(s.close)
	return s
}

// Targets returns the host:port of every CONNECT so far.
func (s *fakeSegment) Targets() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.targets...)
}

func (s *fakeSegment) accept() {
	defer s.wg.Done()
	for {
		c, err := s.proxy.Accept()
		if err != nil {
			return // closed
		}
		s.wg.Add(1)
		go s.tunnel(c)
	}
}

// tunnel answers one CONNECT and then copies bytes both ways between the
// client and the HTTPS server, whatever host the client asked for.
func (s *fakeSegment) tunnel(c net.Conn) {
	defer s.wg.Done()
	if !s.track(c) {
		return
	}
	defer s.untrack(c)
	br := bufio.NewReader(c)
	req, err := http.ReadRequest(br)
	if err != nil {
		return
	}
	if req.Method != http.MethodConnect {
		_, _ = io.WriteString(c, "HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\n\r\n")
		return
	}
	s.mu.Lock()
	s.targets = append(s.targets, req.Host)
	s.mu.Unlock()
	up, err := net.Dial("tcp", s.api.Listener.Addr().String())
	if err != nil {
		_, _ = io.WriteString(c, "HTTP/1.1 502 Bad Gateway\r\nConnection: close\r\n\r\n")
		return
	}
	if !s.track(up) {
		return
	}
	defer s.untrack(up)
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = io.Copy(up, br) // br first: it may hold bytes read past the CONNECT
		_ = up.(*net.TCPConn).CloseWrite()
	}()
	_, _ = io.Copy(c, up)
	_ = c.(*net.TCPConn).CloseWrite()
	<-done
}

// track adds c to the connections close closes; it closes c and returns
// false when close has begun.
func (s *fakeSegment) track(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		_ = c.Close()
		return false
	}
	s.conns[c] = struct{}{}
	return true
}

func (s *fakeSegment) untrack(c net.Conn) {
	_ = c.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.conns, c)
}

// close stops accepting, closes every connection, and returns when every
// goroutine of the proxy has ended and the HTTPS server is closed.
func (s *fakeSegment) close() {
	_ = s.proxy.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.conns = nil
	s.mu.Unlock()
	s.wg.Wait()
	s.api.Close()
}

// selfSigned returns a certificate for host, valid for an hour around now,
// that is its own issuer, and its PEM for a trust store.
func selfSigned(t *testing.T, host string) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: host},
		DNSNames:              []string{host},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
