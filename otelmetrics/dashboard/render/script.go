package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/otlptranslator"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/otelmetrics"
)

// script is a run: how fast events come, for how long, and when the mock
// API answers what.
type script struct {
	rate   int           // events enqueued per second
	total  time.Duration // of the run
	step   time.Duration // between scrapes
	window time.Duration // the range of a rate
	phases []phase       // in order; 200 outside them
}

// phase is a time the mock API answers every request with answer.
type phase struct {
	from, to time.Duration
	answer   analyticstest.Answer
	label    string // as the picture shows it
}

// defaultScript is the picture's run: a 400, a 429 (Retry-After: 1), and
// a 12 s outage of 503s, then a recovery.
var defaultScript = script{
	rate:  150,
	total: 40 * time.Second,
	phases: []phase{
		{2 * time.Second, 2400 * time.Millisecond, analyticstest.Status(400), "400"},
		{4 * time.Second, 4300 * time.Millisecond, analyticstest.RetryAfter(429, "1"), "429"},
		{10 * time.Second, 22 * time.Second, analyticstest.Status(503), "503 outage"},
	},
}

// clientOptions are the client's settings for the run: a small queue, so
// that the outage fills it and the spool takes the rest; short backoff
// waits and budgets, so that some batches fail within the run.
func clientOptions(endpoint, spool string) []analytics.Option {
	return []analytics.Option{
		analytics.WithEndpoint(endpoint),
		analytics.WithLogger(slog.New(slog.DiscardHandler)),
		analytics.WithFlushAt(50),
		analytics.WithFlushInterval(250 * time.Millisecond),
		analytics.WithMaxQueueSize(1000),
		analytics.WithMaxQueueBytes(1 << 20),
		analytics.WithRetryCount(4),
		analytics.WithBackoffBase(100 * time.Millisecond),
		analytics.WithMaxTotalBackoffDuration(8 * time.Second),
		analytics.WithSpool(spool),
		analytics.WithSpoolMaxBytes(4 << 20),
		analytics.WithCloseTimeout(2 * time.Second),
	}
}

// recording is the scrapes of a run.
type recording struct {
	script  script
	samples []sample
	summary string // what the client counted, for the terminal
}

// record runs sc and scrapes /metrics every sc.step.
func record(ctx context.Context, sc script) (*recording, error) {
	start := time.Now()
	api, err := analyticstest.New().Rule(func(analyticstest.Request) analyticstest.Answer {
		at := time.Since(start)
		for _, p := range sc.phases {
			if at >= p.from && at < p.to {
				return p.answer
			}
		}
		return analyticstest.Status(200)
	}).Start()
	if err != nil {
		return nil, err
	}
	defer api.Close()
	dir, err := os.MkdirTemp("", "analytics-render-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	client, err := analytics.New("render-write-key", clientOptions(api.URL, dir)...)
	if err != nil {
		return nil, err
	}
	defer client.Close()

	// As ../../example sets it up.
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(
		otelprom.WithRegisterer(registry),
		otelprom.WithProducer(otelmetrics.NewProducer(client)),
		otelprom.WithTranslationStrategy(otlptranslator.UnderscoreEscapingWithSuffixes),
	)
	if err != nil {
		return nil, err
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	defer provider.Shutdown(context.Background())
	if _, err := otelmetrics.Register(provider, client); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	server := &http.Server{Handler: promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = server.Serve(ln) }()
	defer server.Close()
	url := "http://" + ln.Addr().String() + "/metrics"

	// The input: sc.rate events a second, in 50 ticks.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			for range max(1, sc.rate/50) {
				_ = client.Enqueue(analytics.Track{UserId: fmt.Sprint("user-", i%50), Event: "Report Exported",
					Properties: analytics.NewProperties().Set("plan", "pro")}) // a refusal is counted in the metrics
				i++
			}
		}
	})
	defer wg.Wait()
	defer close(stop)

	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	rec := &recording{script: sc}
	tick := time.NewTicker(sc.step)
	defer tick.Stop()
	for at := time.Duration(0); at < sc.total; {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-tick.C:
		}
		at = time.Since(start)
		s, err := scrape(ctx, hc, url)
		if err != nil {
			return nil, err
		}
		s.at = at
		rec.samples = append(rec.samples, s)
	}
	st := client.Stats()
	rec.summary = fmt.Sprintf("enqueued %d, delivered %d, failed %+v, rejected %+v\nattempts %d, retries %+v, spool %+v\n",
		st.Enqueued, st.Delivered, st.Failed, st.Rejected, st.Attempts, st.Retries, st.Spool)
	return rec, nil
}

// scrape GETs url and reads the exposition into a sample.
func scrape(ctx context.Context, hc *http.Client, url string) (sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return sample{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return sample{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return sample{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return sample{}, fmt.Errorf("GET %s: %w", url, err)
	}
	s := fromFamilies(families)
	if len(s.points) == 0 {
		return sample{}, errors.New("GET " + url + ": no series")
	}
	return s, nil
}
