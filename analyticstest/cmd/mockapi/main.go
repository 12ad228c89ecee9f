// Command mockapi runs the mock tracking API of package analyticstest on a
// socket and prints every event it receives, one line each:
//
//	go run ./analyticstest/cmd/mockapi                      # answers 200 to every valid batch
//	go run ./analyticstest/cmd/mockapi -script failures.json
//	go run ./analyticstest/cmd/mockapi -addr 127.0.0.1:0    # any free port
//	go run ./analyticstest/cmd/mockapi -oauth-public-key public.pem -oauth-client-id app -oauth-key-id key1
//
// Point an app's endpoint at the URL it prints first, and watch:
//
//	listening on http://127.0.0.1:8787
//	track messageId=m1 userId=u event=E status=200
//
// Like the real API, it refuses a wrong path (404), method (405), missing
// write key (401), a body over 500,000 bytes (413) or one that is not a
// batch (400), whatever the script says; -lenient turns that off. With
// -oauth-public-key (and -oauth-client-id, -oauth-key-id) it also stands
// for Segment's OAuth authorization server, at the same address: POST
// /token judges the JWT and issues a token (-oauth-ttl), and every batch
// needs a valid one (401 otherwise). A
// harness reads the record with GET /_requests and drives the mock with
// POST /_script and POST /_reset; -h describes each. It listens on
// loopback only, and its control API answers only a loopback Host (or the
// address it listens on), unless -public is given, since it shows every
// request, write keys included, to whoever asks: a web page that rebinds
// its name to 127.0.0.1 sends its own Host. A cross-site request (an
// Origin that is not loopback or the mock's own, Sec-Fetch-Site:
// cross-site) is refused 403 even with -public.
//
// SIGINT or SIGTERM stops it after the requests in progress have been
// answered. `go run` runs the command as a child process, which a signal
// to the PID of `go run` does not reach; a script that stops the mock by
// PID builds it first:
//
//	go build -o mockapi ./analyticstest/cmd/mockapi
//	./mockapi -addr 127.0.0.1:8787 & pid=$!
//	...
//	kill $pid
package main

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
)

// shutdownGrace bounds how long a stop waits for requests in progress (a
// scripted delay may be long); then their connections are closed.
const shutdownGrace = 5 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// usageError is an error in the command line: exit code 2, as flag does.
type usageError struct{ error }

func exitCode(err error, stderr io.Writer) int {
	var usage usageError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.As(err, &usage):
		fmt.Fprintln(stderr, "mockapi:", err)
		return 2
	default:
		fmt.Fprintln(stderr, "mockapi:", err)
		return 1
	}
}

// run is main without the process: it serves until ctx ends, then shuts
// down gracefully and returns nil.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mockapi", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8787", "`host:port` to listen on; port 0 picks a free one")
	scriptFile := fs.String("script", "", "JSON script `file` to answer from (the form of POST /_script); without it, every valid batch is answered 200")
	lenient := fs.Bool("lenient", false, "answer every request from the script, whatever its path, method, write key or body (up to 64 MiB)")
	public := fs.Bool("public", false, "allow a non-loopback -addr, and a control request with any Host header: anyone who reaches it can read every request recorded")
	var oauth analyticstest.OAuth
	publicKey := fs.String("oauth-public-key", "", "PEM `file` of an OAuth app's public key: serve POST /token, and refuse batches without a token it issued")
	fs.StringVar(&oauth.ClientID, "oauth-client-id", "", "the OAuth app's `id`: a JWT's iss and sub")
	fs.StringVar(&oauth.KeyID, "oauth-key-id", "", "the public key's `id`: a JWT's kid")
	fs.StringVar(&oauth.Audience, "oauth-audience", "", "the `aud` a JWT must have (default: http://<the Host it was sent to>)")
	fs.DurationVar(&oauth.TTL, "oauth-ttl", time.Hour, "the life of the tokens it issues")
	fs.DurationVar(&oauth.Skew, "oauth-skew", 0, "how far its clock is ahead of the machine's (negative: behind), for its Date and its judgement of iat, exp and tokens")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), usage, shutdownGrace)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err} // flag has printed the usage
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if err := checkAddr(*addr, *public); err != nil {
		return usageError{err}
	}

	api := analyticstest.New()
	var err error
	if *lenient {
		api.Lenient()
	}
	if *public {
		api.Public()
	}
	if *publicKey == "" && (oauth.ClientID != "" || oauth.KeyID != "") || *publicKey != "" && (oauth.ClientID == "" || oauth.KeyID == "") {
		return usageError{errors.New("-oauth-public-key, -oauth-client-id and -oauth-key-id go together")}
	}
	if *publicKey != "" {
		if oauth.PublicKey, err = readPublicKey(*publicKey); err != nil {
			return usageError{err}
		}
		api.OAuth(oauth)
	}
	if *scriptFile != "" {
		var data []byte
		data, err = os.ReadFile(*scriptFile)
		if err != nil {
			return err
		}
		sc, err := analyticstest.ParseScript(data)
		if err != nil {
			return fmt.Errorf("%s: %w", *scriptFile, err)
		}
		api.Load(sc)
	}
	out := &printer{w: stdout}
	api.OnRequest(out.request)

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: api, ReadHeaderTimeout: 10 * time.Second}
	out.line("listening on http://" + ln.Addr().String())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()

	select {
	case err := <-served:
		return err // Serve only returns early on a failure
	case <-ctx.Done():
	}
	fmt.Fprintln(stderr, "mockapi: stopping")
	stopCtx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(stopCtx); err != nil {
		fmt.Fprintf(stderr, "mockapi: requests still in progress after %v: closing their connections\n", shutdownGrace)
		_ = srv.Close()
	}
	<-served // http.ErrServerClosed
	return nil
}

// readPublicKey reads an RSA public key from a PEM file: PKIX ("PUBLIC
// KEY", as openssl rsa -pubout writes it) or PKCS #1 ("RSA PUBLIC KEY").
func readPublicKey(file string) (*rsa.PublicKey, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("-oauth-public-key: %w", err)
	}
	block, _ := pem.Decode(data)
	var key any = errors.New("no PEM block")
	switch {
	case block == nil:
	case block.Type == "RSA PUBLIC KEY":
		key, err = x509.ParsePKCS1PublicKey(block.Bytes)
	default:
		key, err = x509.ParsePKIXPublicKey(block.Bytes)
	}
	if pub, ok := key.(*rsa.PublicKey); ok && err == nil {
		return pub, nil
	}
	return nil, fmt.Errorf("-oauth-public-key %s: not an RSA public key in PEM (BEGIN PUBLIC KEY or BEGIN RSA PUBLIC KEY)", file)
}

// checkAddr refuses a non-loopback address unless public: the record is
// open to whoever reaches the control API.
func checkAddr(addr string, public bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("-addr %q: %w", addr, err)
	}
	if public || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("-addr %s is not a loopback address; pass -public to listen on it anyway (anyone who reaches it can read every request, write keys included)", addr)
}
