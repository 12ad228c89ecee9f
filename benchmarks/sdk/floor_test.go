package sdk

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"regexp"
	"sync"
	"testing"
)

// bodies is a transport that keeps every request body, gunzipped, and
// answers 200.
type bodies struct {
	mu  sync.Mutex
	got [][]byte
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	zr, err := gzip.NewReader(r.Body)
	if err != nil {
		return nil, err
	}
	plain, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.got = append(b.got, plain)
	b.mu.Unlock()
	return &http.Response{StatusCode: 200, Status: "200 OK", Header: http.Header{},
		Body: io.NopCloser(bytes.NewReader([]byte(`{"success":true}`))), Request: r}, nil
}

// The floor sends what ours sends, byte for byte but for the times: the
// same events in the same envelope. It is a floor of ours's work, not of
// some other, smaller message's.
func TestFloorSendsOursBytes(t *testing.T) {
	times := regexp.MustCompile(`"(timestamp|sentAt)":"[^"]*"`)
	send := func(name string) []byte {
		tr := &bodies{}
		c, err := New(name, "http://127.0.0.1:1", tr, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, id := range []string{"0000000001", "0000000002", "0000000003"} {
			if err := c.Track(id, []string{"user-1", "user-\"2\"", "user-é"}[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if len(tr.got) != 1 {
			t.Fatalf("%s: %d bodies, want 1", name, len(tr.got))
		}
		return times.ReplaceAll(tr.got[0], []byte(`"$1":"T"`))
	}
	ours, floor := send("ours"), send(Floor)
	if !bytes.Equal(ours, floor) {
		t.Errorf("bodies differ:\nours:  %s\nfloor: %s", ours, floor)
	}
}
