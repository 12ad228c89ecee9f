package spool

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Appenders, a consumer that loads and acks in batches, and a bound that
// makes AppendWait wait, all at once, with both sync modes: every record
// arrives exactly once, and at the end the directory holds only LOCK.
func TestStress(t *testing.T) {
	for _, o := range []Options{{SegmentBytes: 2 << 10, MaxBytes: 32 << 10}, {Sync: 1e6, SegmentBytes: 2 << 10, MaxBytes: 32 << 10}} {
		t.Run(fmt.Sprint("sync", o.Sync), func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, o)
			require.NoError(t, err)
			const writers, each = 4, 300
			var mu sync.Mutex
			inMemory := []ID{} // handed directly, waiting for the consumer
			seen := map[string]int{}
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range each {
						data := fmt.Appendf(nil, `{"w":%d,"i":%d}`, w, i)
						_, err := s.AppendWait(t.Context(), data, func(id ID) bool {
							mu.Lock()
							defer mu.Unlock()
							if len(inMemory) >= 8 {
								return false
							}
							inMemory = append(inMemory, id)
							seen[string(data)]++
							return true
						})
						assert.NoError(t, err)
					}
				})
			}
			done := make(chan struct{})
			consumer := sync.WaitGroup{}
			consumer.Go(func() {
				for {
					var batch []ID
					mu.Lock()
					batch, inMemory = inMemory, nil
					mu.Unlock()
					_, err := s.Load(func(id ID, data []byte, _ bool) bool {
						if len(batch) >= 16 {
							return false // no room: it stays first
						}
						mu.Lock()
						defer mu.Unlock()
						seen[string(data)]++
						batch = append(batch, id)
						return true
					}, nil)
					assert.NoError(t, err)
					assert.NoError(t, s.Ack(batch))
					select {
					case <-done:
						if len(batch) == 0 && s.Stats().Backlog == 0 {
							mu.Lock()
							empty := len(inMemory) == 0
							mu.Unlock()
							if empty {
								return
							}
						}
					default:
					}
				}
			})
			wg.Wait()
			close(done)
			consumer.Wait()
			assert.Len(t, seen, writers*each)
			for k, n := range seen {
				assert.Equal(t, 1, n, k)
			}
			assert.Zero(t, s.Stats().Records)
			require.NoError(t, s.Close())
			assert.Equal(t, []string{lockName}, files(t, dir))
		})
	}
}
