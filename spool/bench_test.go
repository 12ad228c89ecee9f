package spool

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// record300 is a typical event: about 300 bytes of JSON.
var record300 = []byte(`{"type":"track","event":"Order Completed","userId":"u-1234567890","messageId":"` +
	strings.Repeat("m", 36) + `","timestamp":"2026-11-30T17:09:25.123Z","properties":{"total":42.5,"currency":"EUR","pad":"` +
	strings.Repeat("p", 90) + `"},"context":{"library":{"name":"analytics-go"}}}`)

// BenchmarkAppend is Enqueue's cost with the spool: an Append, handed
// directly, and batches of 250 acked so that segments are reclaimed; with
// Sync 1s (the default, WithSpoolSync) and with Sync 0 (an fsync before
// Append returns). events/s is b.N over the wall time.
func BenchmarkAppend(b *testing.B) {
	for _, sync := range []time.Duration{time.Second, 0} {
		b.Run("sync="+sync.String(), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Sync: sync, MaxBytes: 1 << 30})
			require.NoError(b, err)
			defer s.Close()
			batch := make([]ID, 0, 250)
			b.SetBytes(int64(len(record300)))
			b.ReportAllocs()
			start := time.Now()
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
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
	}
}

// BenchmarkAppendParallel is BenchmarkAppend from 16 goroutines at once:
// with Sync 0 the concurrent Appends share their fsyncs (the group
// commit), with Sync 1s they contend for the spool's lock.
func BenchmarkAppendParallel(b *testing.B) {
	for _, sync := range []time.Duration{time.Second, 0} {
		b.Run("sync="+sync.String(), func(b *testing.B) {
			s, err := Open(b.TempDir(), Options{Sync: sync, MaxBytes: 1 << 30})
			require.NoError(b, err)
			defer s.Close()
			b.SetBytes(int64(len(record300)))
			b.ReportAllocs()
			b.SetParallelism(16 / max(runtime.GOMAXPROCS(0), 1))
			start := time.Now()
			b.RunParallel(func(pb *testing.PB) {
				batch := make([]ID, 0, 250)
				for pb.Next() {
					id, err := s.Append(record300, take)
					if err != nil {
						b.Error(err)
						return
					}
					if batch = append(batch, id); len(batch) == cap(batch) {
						if err := s.Ack(batch); err != nil {
							b.Error(err)
							return
						}
						batch = batch[:0]
					}
				}
			})
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
		})
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
		if s.Stats().Backlog == 0 {
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
