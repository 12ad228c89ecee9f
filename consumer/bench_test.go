package consumer

import (
	"testing"
	"time"
)

// BenchmarkBatchBody assembles and gzips the body of a 250-event batch from
// already-encoded events, as every attempt does.
func BenchmarkBatchBody(b *testing.B) {
	evs := events(250)
	ctx := []byte(`{"library":{"name":"analytics-go","version":"bench"}}`)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		head := batchHead(evs)
		body := render(nil, head, ctx, now)
		_ = compress(body)
	}
}
