// Render draws the main panels of the Grafana dashboard
// (../analytics-go.json) as one SVG, from a real run: a client with a
// spool sends events at a steady rate to the SDK's mock tracking API,
// which answers a 429, a 400 and a 503 outage on a script; its metrics go
// through the otelmetrics bridge and OpenTelemetry's Prometheus exporter,
// set up as ../../example does, to /metrics on 127.0.0.1, which this
// program scrapes every -step. Each panel's query is then evaluated over
// the scrapes, approximately: a rate is the increase over -window of
// scrapes, a quantile is interpolated in the buckets' increase as
// Prometheus's histogram_quantile does. Grafana is not needed.
//
//	cd otelmetrics && go run ./dashboard/render -o ../docs/dashboard.svg
//
// The run takes about 40 s. It prints what the client counted.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	if err := run(context.Background(), os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stdout io.Writer) error {
	flags := flag.NewFlagSet("render", flag.ContinueOnError)
	out := flags.String("o", "../docs/dashboard.svg", "the SVG file to write (the default is docs/metrics.md's, from this module's directory)")
	step := flags.Duration("step", 250*time.Millisecond, "the time between scrapes")
	window := flags.Duration("window", 2*time.Second, "the range of a rate and of a quantile")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *step <= 0 || *window < 2**step {
		return fmt.Errorf("-window (%v) must hold at least two -step (%v) of scrapes", *window, *step)
	}
	sc := defaultScript
	sc.step, sc.window = *step, *window
	rec, err := record(ctx, sc)
	if err != nil {
		return err
	}
	svg, err := draw(rec, mainPanels)
	if err != nil {
		return err
	}
	if err := os.WriteFile(*out, svg, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d scrapes over %v, %d bytes\n%s", *out, len(rec.samples), sc.total, len(svg), rec.summary)
	return nil
}
