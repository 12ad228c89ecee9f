package spool

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// record300 is a typical event: about 300 bytes of JSON.
var record300 = []byte(`{"type":"track","event":"Order Completed","userId":"u-1234567890","messageId":"` +
	strings.Repeat("m", 36) + `","timestamp":"2026-11-30T17:09:25.123Z","properties":{"total":42.5,"currency":"EUR","pad":"` +
	strings.Repeat("p", 90) + `"},"context":{"library":{"name":"analytics-go"}}}`)

// BenchmarkAppend is Enqueue's cost with the spool: an Append with Sync 1s,
// handed directly, and batches of 250 acked so that segments are reclaimed.
func BenchmarkAppend(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Sync: time.Second, MaxBytes: 1 << 30})
	require.NoError(b, err)
	defer s.Close()
	batch := make([]ID, 0, 250)
	b.SetBytes(int64(len(record300)))
	b.ReportAllocs()
	for b.Loop() {
		id, err := s.Append(record300, take)
		if err != nil {
			b.Fatal(err)
		}
		if batch = append(batch, id); len(batch) == cap(batch) {
			if err := s.Ack(batch); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
}

// BenchmarkLoad reads a backlog back, one record per Load call (the
// worst case: a caller with room for one at a time), through the
// read-ahead buffer. The backlog is refilled, and what was read acked, off
// the clock.
func BenchmarkLoad(b *testing.B) {
	s, err := Open(b.TempDir(), Options{Sync: time.Hour, MaxBytes: 1 << 30})
	require.NoError(b, err)
	defer s.Close()
	const chunk = 20000
	handed := make([]ID, 0, chunk)
	b.SetBytes(int64(len(record300)))
	b.ReportAllocs()
	for b.Loop() {
		if s.Backlog() == 0 {
			b.StopTimer()
			if err := s.Ack(handed); err != nil {
				b.Fatal(err)
			}
			handed = handed[:0]
			for range chunk {
				if _, err := s.Append(record300, leave); err != nil {
					b.Fatal(err)
				}
			}
			b.StartTimer()
		}
		took := false
		n, err := s.Load(func(id ID, data []byte, _ bool) bool {
			if took {
				return false
			}
			took = true
			handed = append(handed, id)
			return true
		}, nil)
		if err != nil || n != 1 {
			b.Fatal(n, err)
		}
	}
}
