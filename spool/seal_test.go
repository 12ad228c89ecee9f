package spool

import (
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With Sync 0 an Append decides its record after its group commit's
// fsync, which runs without the spool's lock. A Seal during that fsync
// must not return before the record is decided: the caller (the client's
// shutdown) drains what it was handed once Seal returns, and a record
// handed after that is neither sent nor refused.
func TestSealWaitsForAppendsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &blockFS{faultFS: newFaultFS(), entered: make(chan struct{}), release: make(chan struct{})}
		s, err := Open(t.TempDir(), Options{FS: b, MaxBytes: 1 << 20}) // Sync 0
		require.NoError(t, err)
		var sealReturned atomic.Bool
		handedAfterSeal := make(chan bool, 1)
		appended := make(chan error, 1)
		go func() {
			_, err := s.Append(event(0), func(ID) bool {
				handedAfterSeal <- sealReturned.Load()
				return true
			})
			appended <- err
		}()
		<-b.entered // the Append's fsync runs, and blocks
		sealed := make(chan struct{})
		go func() {
			s.Seal()
			sealReturned.Store(true)
			close(sealed)
		}()
		synctest.Wait() // Seal waits for the Append, or has returned
		select {
		case <-sealed:
			t.Error("Seal returned while an Append's record was written and not decided")
		default:
		}
		close(b.release)
		require.NoError(t, <-appended)
		assert.False(t, <-handedAfterSeal, "the record handed after Seal returned")
		<-sealed
		_, err = s.Append(event(1), take)
		assert.ErrorIs(t, err, ErrClosed)
		require.NoError(t, s.Close())
	})
}
