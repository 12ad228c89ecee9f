package otelmetrics

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	analytics "github.com/dualpath/analytics-go"
)

// NewProducer returns a Producer of the client's delivery-latency
// histogram, analytics.event.duration: the seconds from Enqueue to each
// event's final outcome, with the attribute analytics.event.outcome
// (delivered or failed), read from client.Stats().Latency on each
// collection, buckets and sum as the client counted them. Give it to a
// reader: sdkmetric.NewManualReader(sdkmetric.WithProducer(p)),
// sdkmetric.NewPeriodicReader(exporter, sdkmetric.WithProducer(p)), or
// OpenTelemetry's Prometheus exporter, prometheus.WithProducer(p).
//
// The histogram is cumulative, from the moment NewProducer is called:
// call it right after analytics.New. Its Min and Max are not reported.
// It is safe for concurrent use.
func NewProducer(client *analytics.Client) sdkmetric.Producer {
	return &producer{client: client, start: time.Now()}
}

type producer struct {
	client *analytics.Client
	start  time.Time
}

var (
	outcomeDelivered = attribute.NewSet(Outcome.String("delivered"))
	outcomeFailed    = attribute.NewSet(Outcome.String("failed"))
)

// Produce implements sdkmetric.Producer.
func (p *producer) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	lat := p.client.Stats().Latency
	now := time.Now()
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: ScopeName, Version: analytics.Version},
		Metrics: []metricdata.Metrics{{
			Name:        "analytics.event.duration",
			Description: "The time from Enqueue to each event's final outcome, by analytics.event.outcome.",
			Unit:        "s",
			Data: metricdata.Histogram[float64]{
				Temporality: metricdata.CumulativeTemporality,
				DataPoints: []metricdata.HistogramDataPoint[float64]{
					p.point(outcomeDelivered, lat.Delivered, now),
					p.point(outcomeFailed, lat.Failed, now),
				},
			},
		}},
	}}, nil
}

// point is h as a data point in seconds.
func (p *producer) point(attrs attribute.Set, h analytics.Histogram, now time.Time) metricdata.HistogramDataPoint[float64] {
	bounds := make([]float64, len(h.Bounds))
	for i, b := range h.Bounds {
		bounds[i] = b.Seconds()
	}
	counts := make([]uint64, len(h.Counts))
	for i, n := range h.Counts {
		counts[i] = uint64(n)
	}
	return metricdata.HistogramDataPoint[float64]{
		Attributes:   attrs,
		StartTime:    p.start,
		Time:         now,
		Count:        uint64(h.Count),
		Bounds:       bounds,
		BucketCounts: counts,
		Sum:          h.Sum.Seconds(),
	}
}
