// Package sdk puts this SDK and its peers behind one small interface, so
// that the benchmarks drive every SDK with the same work: a track event
// "Order Completed" with five string properties, a user id and, when
// given, a unique id that the sink counts deliveries by.
//
// Every client is built with its SDK's defaults except the endpoint (and,
// for in-process benchmarks, the transport).
package sdk

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"

	ours "github.com/dualpath/analytics-go"
	posthog "github.com/posthog/posthog-go"
	rudder "github.com/rudderlabs/analytics-go/v4"
	segment "github.com/segmentio/analytics-go/v3"
)

// Names lists the SDKs in the order the tables show them.
var Names = []string{"ours", "segmentio", "posthog", "rudder"}

// Variants are configurations of ours that New also builds, shown after
// the SDKs: "ours-spool" is ours with WithSpool in a temporary directory
// of its own (removed by Close) and the default WithSpoolSync.
var Variants = []string{"ours-spool"}

// Floor is the name of the floor client (floor.go): not an SDK, the least
// work an event needs on ours's path, to measure ours against.
const Floor = "floor"

// Event is the name of every event sent.
const Event = "Order Completed"

// props are the five string properties of every event. By default each
// event gets a map of its own, built in Track, as an application builds
// one per event; with Options.SharedProperties one read-only map per SDK is
// shared by every event (no SDK writes to the map it is given; posthog
// copies it into a map of its own).
var props = [5][2]string{
	{"plan", "pro"}, {"currency", "USD"}, {"coupon", "WINTER"}, {"sku", "sku-42"}, {"category", "books"},
}

// Options say how a client's Track builds its events.
type Options struct {
	// SharedProperties gives every event the same read-only properties
	// map, built once, instead of a fresh map per event. It leaves out
	// a cost every application's events carry.
	SharedProperties bool
}

// newProps returns a properties map holding props, of any SDK's map type.
func newProps[M ~map[string]any]() M {
	m := make(M, len(props))
	for _, kv := range props {
		m[kv[0]] = kv[1]
	}
	return m
}

// eventProps returns the map one event carries: shared, when the client
// shares one, or a fresh one.
func eventProps[M ~map[string]any](shared M) M {
	if shared != nil {
		return shared
	}
	return newProps[M]()
}

// Client is one SDK's client.
type Client interface {
	// Track enqueues one event. id is the unique id the sink counts (the
	// messageId; posthog's Uuid); empty lets the SDK make one.
	Track(id, userID string) error
	// Close sends everything queued and waits for it, the SDK's way.
	Close() error
}

// Counters is implemented by clients that report their own counters (ours:
// Stats); the driver prints them next to its measurements.
type Counters interface {
	Counters() map[string]int64
}

// Refuser is implemented by clients that can refuse an event when their
// queue is full instead of waiting for room (ours: Enqueue, where Track is
// EnqueueContext).
type Refuser interface {
	// TrackOrRefuse is Track, except that it returns an error at once when
	// the queue is full.
	TrackOrRefuse(id, userID string) error
}

// New returns a client of SDK name that sends to endpoint (scheme, host and
// port; each SDK adds its own path). A nil transport keeps the SDK's own.
// Track is safe for concurrent use in every client.
func New(name, endpoint string, transport http.RoundTripper, o Options) (Client, error) {
	switch name {
	case "ours":
		return newOurs(endpoint, transport, false, o)
	case "ours-spool":
		return newOurs(endpoint, transport, true, o)
	case Floor:
		return newFloor(endpoint, transport, o), nil
	case "segmentio":
		c, err := segment.NewWithConfig("wk", segment.Config{Endpoint: endpoint, Transport: transport})
		return &segmentClient{c: c, props: shared[segment.Properties](o)}, err
	case "posthog":
		c, err := posthog.NewWithConfig("phc_wk", posthog.Config{Endpoint: endpoint, Transport: transport})
		return &posthogClient{c: c, props: shared[posthog.Properties](o)}, err
	case "rudder":
		c, err := rudder.NewWithConfig("wk", rudder.Config{DataPlaneUrl: endpoint, Transport: transport})
		return &rudderClient{c: c, props: shared[rudder.Properties](o)}, err
	}
	return nil, fmt.Errorf("unknown SDK %q (want one of %v, %v or %s)", name, Names, Variants, Floor)
}

// shared returns the map every event shares under o.SharedProperties, or
// nil, when each event gets a fresh one.
func shared[M ~map[string]any](o Options) M {
	if !o.SharedProperties {
		return nil
	}
	return newProps[M]()
}

type oursClient struct {
	c     *ours.Client
	props ours.Properties // nil: a fresh map per event
	dir   string          // the spool's temporary directory; "" without a spool
}

func newOurs(endpoint string, transport http.RoundTripper, spool bool, o Options) (*oursClient, error) {
	opts := []ours.Option{ours.WithEndpoint(endpoint)}
	if transport != nil {
		opts = append(opts, ours.WithHTTPClient(&http.Client{Transport: transport}))
	}
	dir := ""
	if spool {
		var err error
		if dir, err = os.MkdirTemp("", "analytics-spool-bench-*"); err != nil {
			return nil, err
		}
		opts = append(opts, ours.WithSpool(dir))
	}
	c, err := ours.New("wk", opts...)
	if err != nil {
		if dir != "" {
			_ = os.RemoveAll(dir)
		}
		return nil, err
	}
	return &oursClient{c: c, props: shared[ours.Properties](o), dir: dir}, nil
}

// Track implements Client. When the queue is full it waits for room, as the
// peers' Enqueue blocks, woken when an upload ends.
func (o *oursClient) Track(id, userID string) error {
	return o.c.EnqueueContext(context.Background(), ours.Track{MessageId: id, UserId: userID, Event: Event, Properties: eventProps(o.props)})
}

// TrackOrRefuse implements Refuser: Enqueue, which returns ErrQueueFull at
// once when the queue is full.
func (o *oursClient) TrackOrRefuse(id, userID string) error {
	return o.c.Enqueue(ours.Track{MessageId: id, UserId: userID, Event: Event, Properties: eventProps(o.props)})
}

// Close implements Client; with a spool, it then removes its directory.
func (o *oursClient) Close() error {
	err := o.c.Close()
	if o.dir != "" {
		err = errors.Join(err, os.RemoveAll(o.dir))
	}
	return err
}

// Counters returns the SDK's own counters, where it keeps any.
func (o *oursClient) Counters() map[string]int64 {
	s := o.c.Stats()
	return map[string]int64{
		"enqueued": s.Enqueued, "rejected_queue_full": s.Rejected.QueueFull,
		"delivered": s.Delivered, "failed": s.Failed.RetriesExhausted + s.Failed.BackoffBudgetExceeded +
			s.Failed.RateLimitBudgetExceeded + s.Failed.FatalStatus + s.Failed.Redirect + s.Failed.Shutdown + s.Failed.Other,
		"batches": s.Batches, "attempts": s.Attempts, "retries_backoff": s.Retries.Backoff,
		"retries_rate_limit": s.Retries.RateLimit, "bytes_sent": s.BytesSent,
		"spool_bytes": s.Spool.Bytes, "spool_records": s.Spool.Records, "spool_left": s.Spool.Left,
	}
}

type segmentClient struct {
	c     segment.Client
	props segment.Properties // nil: a fresh map per event
}

// Track implements Client.
func (s *segmentClient) Track(id, userID string) error {
	return s.c.Enqueue(segment.Track{MessageId: id, UserId: userID, Event: Event, Properties: eventProps(s.props)})
}

// Close implements Client.
func (s *segmentClient) Close() error { return s.c.Close() }

type posthogClient struct {
	c     posthog.Client
	props posthog.Properties // nil: a fresh map per event
}

// Track implements Client.
func (p *posthogClient) Track(id, userID string) error {
	return p.c.Enqueue(posthog.Capture{Uuid: id, DistinctId: userID, Event: Event, Properties: eventProps(p.props)})
}

// Close implements Client.
func (p *posthogClient) Close() error { return p.c.Close() }

type rudderClient struct {
	c     rudder.Client
	props rudder.Properties // nil: a fresh map per event
}

// Track implements Client.
func (r *rudderClient) Track(id, userID string) error {
	return r.c.Enqueue(rudder.Track{MessageId: id, UserId: userID, Event: Event, Properties: eventProps(r.props)})
}

// Close implements Client.
func (r *rudderClient) Close() error { return r.c.Close() }
