package consumer

import (
	"testing"
	"time"
)

// BenchmarkBatchBody gzips the body of a 250-event batch straight from the
// already-encoded events, as every attempt does with gzip on.
func BenchmarkBatchBody(b *testing.B) {
	evs := events(250)
	ctx := []byte(`{"library":{"name":"analytics-go","version":"bench"}}`)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = compress(newBatchBody(evs, envelope{context: ctx}, "", now))
	}
}

// BenchmarkBatchBodyPlain reads the body of a 250-event batch as the
// transport does with gzip off.
func BenchmarkBatchBodyPlain(b *testing.B) {
	evs := events(250)
	ctx := []byte(`{"library":{"name":"analytics-go","version":"bench"}}`)
	now := time.Now()
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		r := newBatchBody(evs, envelope{context: ctx}, "", now).Reader()
		for {
			if _, err := r.Read(buf); err != nil {
				break
			}
		}
	}
}
