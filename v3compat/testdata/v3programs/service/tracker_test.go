package main

import (
	"bytes"
	"log"
	"testing"

	"github.com/segmentio/analytics-go/v3"
)

// fakeClient is a test double of analytics.Client that records messages
// and can refuse them.
type fakeClient struct {
	sent   []analytics.Message
	refuse error
	closed bool
}

func (f *fakeClient) Enqueue(m analytics.Message) error {
	if f.refuse != nil {
		return f.refuse
	}
	if err := m.Validate(); err != nil {
		return err
	}
	f.sent = append(f.sent, m)
	return nil
}

func (f *fakeClient) Close() error {
	f.closed = true
	return nil
}

var _ analytics.Client = (*fakeClient)(nil)

func TestSignedUp(t *testing.T) {
	fake := &fakeClient{}
	tr := newTrackerWith(fake, log.New(&bytes.Buffer{}, "", 0))
	if err := tr.SignedUp("ada", "pro"); err != nil {
		t.Fatal(err)
	}
	if len(fake.sent) != 2 {
		t.Fatalf("sent %d messages, want 2", len(fake.sent))
	}
	id, ok := fake.sent[0].(analytics.Identify)
	if !ok || id.UserId != "ada" || id.Traits["plan"] != "pro" {
		t.Errorf("first message %#v", fake.sent[0])
	}
	tr2, ok := fake.sent[1].(analytics.Track)
	if !ok || tr2.Event != "Signed Up" || tr2.Properties["plan"] != "pro" {
		t.Errorf("second message %#v", fake.sent[1])
	}
}

func TestInvalidMessagesAreDropped(t *testing.T) {
	var logs bytes.Buffer
	fake := &fakeClient{}
	tr := newTrackerWith(fake, log.New(&logs, "", 0))
	if err := tr.SignedUp("", "free"); err != nil {
		t.Fatalf("an invalid message failed the caller: %v", err)
	}
	want := "dropped a analytics.Identify without UserId\ndropped a analytics.Track without UserId\n"
	if logs.String() != want {
		t.Errorf("logged %q, want %q", logs.String(), want)
	}
}

func TestClosedClient(t *testing.T) {
	tr := newTrackerWith(&fakeClient{refuse: analytics.ErrClosed}, log.New(&bytes.Buffer{}, "", 0))
	if err := tr.JoinedTeam("ada", "t"); err == nil || err.Error() != "tracker is closed" {
		t.Errorf("got %v", err)
	}
}

func TestGroupContext(t *testing.T) {
	fake := &fakeClient{}
	tr := newTrackerWith(fake, log.New(&bytes.Buffer{}, "", 0))
	if err := tr.JoinedTeam("ada", "team-7"); err != nil {
		t.Fatal(err)
	}
	track := fake.sent[1].(analytics.Track)
	if track.Context == nil || track.Context.GroupID != "team-7" {
		t.Errorf("context %#v", track.Context)
	}
	if err := tr.Close(); err != nil || !fake.closed {
		t.Errorf("Close: %v, closed %v", err, fake.closed)
	}
}
