// Example serves an analytics client's metrics to Prometheus through
// OpenTelemetry: the otelmetrics bridge on a MeterProvider whose reader is
// OpenTelemetry's Prometheus exporter, on /metrics.
//
//	cd otelmetrics && go run ./example
//	cd otelmetrics && go run ./example -hold 1m   # and meanwhile: curl http://127.0.0.1:PORT/metrics
//	cd otelmetrics && go run ./example -spool /tmp/spool   # the analytics_spool_ series too
//
// Its local tracking API (the SDK's mock, package analyticstest) answers
// the first batches badly on purpose: the first gets two 503s, then a 200
// (delivered after two backoff retries); the second a 429 with
// Retry-After: 1, then a 200 (a rate-limit retry); the third a 400
// (fatal); the rest 200. It prints the analytics_ lines of /metrics
// (buckets left out).
package main

import (
	"bufio"
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
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/otelmetrics"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C ends -hold early
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "example:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("example", flag.ContinueOnError)
	events := flags.Int("events", 40, "events to send")
	addr := flags.String("addr", "127.0.0.1:0", "address of /metrics")
	hold := flags.Duration("hold", 0, "keep serving /metrics this long after the events are sent")
	spool := flags.String("spool", "", "a directory for the client's durable spool (WithSpool), for the analytics_spool_ series")
	if err := flags.Parse(args); err != nil {
		return err
	}
	var opts []analytics.Option
	if *spool != "" {
		opts = append(opts, analytics.WithSpool(*spool))
	}
	d, err := start(*addr, opts...)
	if err != nil {
		return err
	}
	defer d.close()
	fmt.Fprintf(stdout, "serving %s\n", d.metricsURL)
	if err := d.send(ctx, *events); err != nil {
		return err
	}
	scrape, err := get(ctx, d.metricsURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nGET %s (analytics_ lines, buckets left out):\n", d.metricsURL)
	for line := range strings.Lines(scrape) {
		if strings.HasPrefix(line, "analytics_") && !strings.Contains(line, "_bucket{") {
			fmt.Fprint(stdout, "  ", line)
		}
	}
	if *hold > 0 {
		select {
		case <-time.After(*hold):
		case <-ctx.Done():
		}
	}
	return nil
}

// demo is the service: a client on the mock API, and its metrics on
// /metrics.
type demo struct {
	api        *analyticstest.Listener
	client     *analytics.Client
	provider   *sdkmetric.MeterProvider
	server     *http.Server
	metricsURL string
}

// start starts the mock API, the client (with opts after the demo's
// own), and /metrics on addr.
func start(addr string, opts ...analytics.Option) (*demo, error) {
	api, err := analyticstest.New().Rule(firstBatchesFail()).Start()
	if err != nil {
		return nil, err
	}
	d := &demo{api: api}
	d.client, err = analytics.New("demo-write-key", append([]analytics.Option{
		analytics.WithEndpoint(api.URL),
		analytics.WithLogger(slog.New(slog.DiscardHandler)),
		analytics.WithFlushAt(10),
		// Demo settings: one upload at a time, short backoff waits. In
		// production, keep the defaults.
		analytics.WithMaxConcurrentRequests(1),
		analytics.WithBackoffBase(10 * time.Millisecond),
	}, opts...)...)
	if err != nil {
		api.Close()
		return nil, err
	}

	// The exporter is a reader: it collects when Prometheus scrapes. The
	// bridge's Producer adds the latency histogram; a registry of its
	// own keeps the Go runtime's collectors out of this example.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithProducer(otelmetrics.NewProducer(d.client)),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		d.close()
		return nil, err
	}
	d.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	if _, err := otelmetrics.Register(d.provider, d.client); err != nil {
		d.close()
		return nil, err
	}

	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(registry, promhttp.HandlerOpts{}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		d.close()
		return nil, err
	}
	d.server = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = d.server.Serve(ln) }()
	d.metricsURL = "http://" + ln.Addr().String() + "/metrics"
	return d, nil
}

// send enqueues n events and waits until each has its outcome.
func (d *demo) send(ctx context.Context, n int) error {
	for i := range n {
		err := d.client.Enqueue(analytics.Track{UserId: fmt.Sprint("user-", i%4), Event: "Report Exported"})
		if err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return d.client.Flush(ctx)
}

// close shuts everything down, the client last but one: its final counts
// stay readable.
func (d *demo) close() {
	if d.server != nil {
		d.server.Close()
	}
	if d.provider != nil {
		_ = d.provider.Shutdown(context.Background())
	}
	if d.client != nil {
		_ = d.client.Close()
	}
	d.api.Close()
}

// firstBatchesFail answers the first batch two 503s then 200, the second
// a 429 with Retry-After: 1 then 200, the third a 400, the others 200. A
// batch is known by its first messageId.
func firstBatchesFail() func(analyticstest.Request) analyticstest.Answer {
	order := map[string]int{} // first messageId → the batch's number
	attempts := map[string]int{}
	return func(r analyticstest.Request) analyticstest.Answer {
		id, _ := r.Events[0]["messageId"].(string)
		if _, ok := order[id]; !ok {
			order[id] = len(order)
		}
		n := attempts[id]
		attempts[id]++
		switch batch := order[id]; {
		case batch == 0 && n < 2:
			return analyticstest.Status(503)
		case batch == 1 && n == 0:
			return analyticstest.RetryAfter(429, "1")
		case batch == 2:
			return analyticstest.Status(400)
		}
		return analyticstest.Status(200)
	}
}

// get returns the body of a GET of url, as a scrape would.
func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	var b strings.Builder
	_, err = io.Copy(&b, bufio.NewReader(resp.Body))
	return b.String(), err
}
