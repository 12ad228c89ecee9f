// Httpserver is a net/http service that tracks one event per request with
// one shared analytics client, and shuts down gracefully on SIGINT or
// SIGTERM: first the HTTP server, so that no handler is still running, then
// the analytics client, so that every event those handlers queued is sent.
//
//	go run ./examples/httpserver                  # serves on 127.0.0.1 until Ctrl-C
//	curl -H 'X-User-Id: user-42' http://127.0.0.1:PORT/pricing
//	go run ./examples/httpserver -requests 20     # sends itself 20 requests, then shuts down
//
// By default the events go to a mock tracking API started in the same
// process; -endpoint sends them elsewhere (with -write-key).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "httpserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("httpserver", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "address to serve on (port 0: any free port)")
	endpoint := fs.String("endpoint", "", "tracking API base URL (default: a mock started in this process)")
	writeKey := fs.String("write-key", "demo-write-key", "write key of the tracking API")
	requests := fs.Int("requests", 0, "send this many requests to itself, then shut down as if signalled (0: serve until SIGINT/SIGTERM)")
	grace := fs.Duration("shutdown-timeout", 15*time.Second, "how long shutdown may take, HTTP server and analytics client together")
	if err := fs.Parse(args); err != nil {
		return err
	}

	// The first SIGINT or SIGTERM cancels ctx and starts the graceful
	// shutdown below; stop() then restores the default behaviour, so that
	// a second Ctrl-C kills a shutdown that takes too long.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	// One logger for the service and the SDK: the SDK logs attempts that
	// failed and will be retried, and events it could not deliver.
	logger := slog.New(slog.NewTextHandler(stdout, nil))

	if *endpoint == "" {
		mock := analyticstest.New().OnRequest(func(r analyticstest.Request) {
			logger.Info("mock tracking API received a batch", "events", len(r.Events), "status", r.Status)
		})
		ln, err := mock.Start()
		if err != nil {
			return err
		}
		// Closed when run returns: after the client's Shutdown below has
		// sent everything to it.
		defer ln.Close()
		*endpoint = ln.URL
	}

	// One client for the whole process, shared by every handler: it is
	// safe for concurrent use and batches events across requests.
	client, err := analytics.New(*writeKey, analytics.WithEndpoint(*endpoint), analytics.WithLogger(logger))
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		// Reading the body, as most handlers do, keeps a slow upload in
		// flight: graceful shutdown waits for it.
		n, err := io.Copy(io.Discard, r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "hello from %s %s (%d bytes received)\n", r.Method, r.URL.Path, n)
	})
	srv := &http.Server{
		Handler:           trackRequests(client, logger, mux),
		ReadHeaderTimeout: 5 * time.Second,
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		client.Close()
		return err
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String()
	logger.Info("listening", "url", url, "tracking_api", *endpoint)

	var selfErr error
	if *requests > 0 {
		// A signal during the requests cancels them: that is a shutdown,
		// not an error.
		if err := sendRequests(ctx, url, *requests); err != nil && ctx.Err() == nil {
			selfErr = fmt.Errorf("requests to itself: %w", err)
		}
		logger.Info("sent requests to itself; shutting down as if signalled", "requests", *requests)
	} else {
		logger.Info("serving until SIGINT or SIGTERM", "try", "curl -H 'X-User-Id: user-42' "+url+"/pricing")
		select {
		case <-ctx.Done():
			logger.Info("signal received; shutting down")
		case err := <-serveErr:
			client.Close()
			return err // the server failed; not a shutdown
		}
	}
	stop()

	// ctx is cancelled by now (by the signal or by stop), so shutdown gets
	// a context of its own, with
	// one deadline for both steps; keep it under the grace period of your
	// orchestrator (30 s in Kubernetes).
	shutdownCtx, cancel := context.WithTimeout(context.Background(), *grace)
	defer cancel()

	// 1. The HTTP server: stop accepting, wait for in-flight requests. Their
	//    handlers may still Enqueue, so the client must still be open.
	if err := srv.Shutdown(shutdownCtx); err != nil {
		logger.Error("HTTP server did not finish in-flight requests in time", "error", err)
	}
	<-serveErr // http.ErrServerClosed

	// 2. The analytics client: send what is queued, wait for every batch,
	//    retries included, with what is left of the deadline. If the
	//    deadline ends first, the undelivered events are reported as
	//    failed (to the logger, a Callback and Stats), never dropped
	//    silently.
	if err := client.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("analytics shutdown: %w", err)
	}
	st := client.Stats()
	logger.Info("stopped", "events_tracked", st.Enqueued, "delivered", st.Delivered, "requests_to_tracking_api", st.Attempts)
	return selfErr
}

// trackRequests is middleware that tracks one "Page Requested" event per
// request. Enqueue returns at once, so it adds no latency to the response;
// its error never fails the request.
func trackRequests(client *analytics.Client, logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		next.ServeHTTP(w, r)

		ev := analytics.Track{
			Event: "Page Requested",
			Properties: analytics.NewProperties().
				SetPath(r.URL.Path).
				Set("method", r.Method).
				Set("duration_ms", time.Since(start).Milliseconds()),
			Context: &analytics.Context{UserAgent: r.UserAgent()},
		}
		// Who: your authentication would say; here a header or a query
		// parameter. Track needs UserId or AnonymousId.
		ev.UserId = r.Header.Get("X-User-Id")
		if ev.UserId == "" {
			ev.UserId = r.URL.Query().Get("user_id")
		}
		if ev.UserId == "" {
			ev.AnonymousId = "anonymous" // a real service would use its session's id
		}
		if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
			ev.Context.IP = net.ParseIP(host)
		}
		if err := client.Enqueue(ev); err != nil {
			// ErrQueueFull (the tracking API is down and the queue filled
			// up), ErrClosed (after shutdown), or an invalid event.
			logger.Warn("event not tracked", "path", r.URL.Path, "error", err)
		}
	})
}

// sendRequests is the short mode: n GET requests to the server, from a few
// user ids, some anonymous.
func sendRequests(ctx context.Context, baseURL string, n int) error {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	paths := []string{"/", "/pricing", "/docs", "/signup"}
	for i := range n {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+paths[i%len(paths)], nil)
		if err != nil {
			return err
		}
		if i%5 != 4 { // every fifth request is anonymous
			req.Header.Set("X-User-Id", fmt.Sprintf("user-%d", i%3+1))
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return nil
}
