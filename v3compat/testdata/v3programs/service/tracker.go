package main

import (
	"errors"
	"fmt"
	"log"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/segmentio/analytics-go/v3"
)

// Settings configure a Tracker; zero values take the SDK's defaults.
type Settings struct {
	WriteKey  string
	Endpoint  string
	Interval  time.Duration
	BatchSize int
	Tenant    string
	Logger    *log.Logger
}

// Tracker is the service's view of analytics: one method per business
// event, with its error handling in one place.
type Tracker struct {
	client analytics.Client
	log    *log.Logger
	trips  *roundTrips

	mu        sync.Mutex
	delivered int
	failed    int
	tooBig    int
	throttled int
	invalid   int
}

// NewTracker returns a Tracker that sends through a real client.
func NewTracker(s Settings) (*Tracker, error) {
	t := &Tracker{log: s.Logger, trips: &roundTrips{next: http.DefaultTransport}}
	interval := s.Interval
	if interval == 0 {
		interval = analytics.DefaultInterval
	}
	batchSize := s.BatchSize
	if batchSize == 0 {
		batchSize = analytics.DefaultBatchSize
	}
	client, err := analytics.NewWithConfig(s.WriteKey, analytics.Config{
		Endpoint:  s.Endpoint,
		Interval:  interval,
		BatchSize: batchSize,
		Transport: t.trips,
		Logger:    analytics.StdLogger(s.Logger),
		Callback:  t,
		DefaultContext: &analytics.Context{
			App:     analytics.AppInfo{Name: "billing-service", Version: "2.4.1"},
			GroupID: s.Tenant,
		},
	})
	if err != nil {
		if ce, ok := err.(analytics.ConfigError); ok {
			return nil, fmt.Errorf("analytics setting %s (%v): %s", ce.Field, ce.Value, ce.Reason)
		}
		return nil, err
	}
	t.client = client
	return t, nil
}

// newTrackerWith wraps a client the caller made, a test double for one.
func newTrackerWith(c analytics.Client, l *log.Logger) *Tracker {
	return &Tracker{client: c, log: l, trips: &roundTrips{}}
}

// SignedUp records a new user and their plan.
func (t *Tracker) SignedUp(userID, plan string) error {
	if err := t.enqueue(analytics.Identify{
		UserId: userID,
		Traits: analytics.NewTraits().SetName(userID).Set("plan", plan),
	}); err != nil {
		return err
	}
	return t.enqueue(analytics.Track{
		UserId:     userID,
		Event:      "Signed Up",
		Properties: analytics.NewProperties().Set("plan", plan),
	})
}

// JoinedTeam records a user joining a team, the team as the context's
// group.
func (t *Tracker) JoinedTeam(userID, teamID string) error {
	if err := t.enqueue(analytics.Group{UserId: userID, GroupId: teamID}); err != nil {
		return err
	}
	return t.enqueue(analytics.Track{
		UserId:  userID,
		Event:   "Joined Team",
		Context: &analytics.Context{GroupID: teamID},
	})
}

// Invoiced records an invoice, with its line items as properties.
func (t *Tracker) Invoiced(userID string, amount float64, notes string) error {
	return t.enqueue(&analytics.Track{
		UserId: userID,
		Event:  "Invoice Paid",
		Properties: analytics.NewProperties().
			SetRevenue(amount).
			SetCurrency("EUR").
			SetOrderId("inv-"+userID).
			Set("notes", notes),
	})
}

// enqueue sends m; a message that misses a field is logged and dropped, as
// a bug of ours that must not fail the request that records it.
func (t *Tracker) enqueue(m analytics.Message) error {
	err := t.client.Enqueue(m)
	if err == nil {
		return nil
	}
	if fe, ok := err.(analytics.FieldError); ok {
		t.log.Printf("dropped a %s without %s", fe.Type, fe.Name)
		t.mu.Lock()
		t.invalid++
		t.mu.Unlock()
		return nil
	}
	if err == analytics.ErrClosed {
		return errors.New("tracker is closed")
	}
	return fmt.Errorf("tracking: %w", err)
}

// Success implements analytics.Callback.
func (t *Tracker) Success(analytics.Message) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.delivered++
}

// Failure implements analytics.Callback.
func (t *Tracker) Failure(m analytics.Message, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case err == analytics.ErrMessageTooBig:
		t.tooBig++
	case errors.Is(err, analytics.ErrTooManyRequests):
		t.throttled++
	default:
		t.failed++
	}
	t.log.Printf("not delivered: %T: %v", m, err)
}

// Close flushes the client.
func (t *Tracker) Close() error { return t.client.Close() }

// Summary is one line for the service's shutdown log.
func (t *Tracker) Summary() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "delivered=%d failed=%d invalid=%d too_big=%d throttled=%d round_trips=%d",
		t.delivered, t.failed, t.invalid, t.tooBig, t.throttled, t.trips.n.Load())
	return b.String()
}

// roundTrips counts the requests of the analytics client, for the
// service's metrics.
type roundTrips struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (r *roundTrips) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n.Add(1)
	return r.next.RoundTrip(req)
}
