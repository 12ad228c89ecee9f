// Package otelmetrics publishes an analytics client's Stats as
// OpenTelemetry metrics, and through OpenTelemetry to Prometheus or any
// other metrics backend.
//
// It is a module of its own (github.com/dualpath/analytics-go/otelmetrics),
// so that the SDK's module keeps its three dependencies; this one needs
// the OpenTelemetry metric API and SDK.
//
// Register adds observable instruments to a MeterProvider: each reads the
// client's Stats once per collection, in one callback, so that nothing is
// added to Enqueue's path. NewProducer adds the delivery-latency histogram
// (analytics.event.duration) to a reader: OpenTelemetry has no observable
// histogram, and a Producer hands a reader the client's own buckets as
// they are, exact.
//
//	exporter, err := prometheus.New(prometheus.WithProducer(otelmetrics.NewProducer(client)))
//	...
//	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
//	reg, err := otelmetrics.Register(provider, client)
//	...
//	defer reg.Unregister()
//
// The instruments, their units and attributes are listed in the SDK's
// docs/metrics.md, with what each tells an operator. Names follow
// OpenTelemetry's naming rules (dotted namespaces, units in UCUM, counts
// of things in braces: {event}) and the style of its semantic
// conventions for an SDK's own queue (otel.sdk.processor.*): a failure's
// reason is the error.type attribute, absent on success; a queue has a
// size and a capacity.
//
// One client per MeterProvider: two clients registered with the same one
// report the same series twice.
package otelmetrics
