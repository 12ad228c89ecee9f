// Package benchmarks measures github.com/dualpath/analytics-go against
// segmentio/analytics-go v3, posthog-go and rudderlabs/analytics-go v4. It
// is a module of its own so that the peers never enter the SDK's go.mod.
//
// The end-to-end comparison is the command in cmd/compare; cmd/fleet
// simulates a fleet of our clients through an outage of the tracking API;
// this package holds the in-process per-call benchmarks (go test -bench .).
package benchmarks
