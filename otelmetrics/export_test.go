package otelmetrics

// RegisterStats is Register with the snapshot read by stats instead of a
// client's Stats, for a test that sets every field.
var RegisterStats = register
