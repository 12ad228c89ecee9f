package analytics

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/spool"
)

// syncGateFS is the operating system's file system whose segment fsyncs,
// once armed, wait until released: an Append with WithSpoolSync(0) then
// sits in its group commit, its record written, the spool's lock free.
type syncGateFS struct {
	osSpoolFS
	mu       sync.Mutex
	armed    bool
	entered  chan struct{} // gets a token when an armed Sync begins
	released chan struct{} // closed to let the armed Syncs go on
}

func newSyncGateFS() *syncGateFS {
	return &syncGateFS{entered: make(chan struct{}, 16), released: make(chan struct{})}
}

func (g *syncGateFS) arm() { g.mu.Lock(); g.armed = true; g.mu.Unlock() }

func (g *syncGateFS) OpenFile(name string, flag int, perm fs.FileMode) (spool.File, error) {
	return g.open(name, flag, perm, func(f *os.File) spool.File { return &syncGateFile{File: f, g: g} })
}

type syncGateFile struct {
	*os.File
	g *syncGateFS
}

func (f *syncGateFile) Sync() error {
	f.g.mu.Lock()
	armed := f.g.armed
	f.g.mu.Unlock()
	if armed && strings.HasSuffix(f.Name(), ".seg") {
		f.g.entered <- struct{}{}
		<-f.g.released
	}
	return f.File.Sync()
}

// With WithSpoolSync(0), an Enqueue in its group commit when Close begins
// returns nil, accepted, once its fsync ends. A Close with a healthy API
// and no deadline must then send it (or the Enqueue must return
// ErrClosed): "Close sends what it can in its time". The loop once ended
// before the record was decided, so the record was pushed into a queue
// nobody read any more and stayed in the spool, with no callback,
// although Close had all the time it needed; now the shutdown waits for
// the Enqueue calls under way.
func TestSpoolSync0EnqueueDuringCloseIsSent(t *testing.T) {
	gate := newSyncGateFS()
	withFS := func(c *config) { c.spool.FS = gate }
	e := newEnv(t, newAPI(), WithSpool(t.TempDir()), WithSpoolSync(0), withFS, WithFlushAt(5), WithCloseTimeout(0))
	e.enqueue(tracks("before-", 7)...)
	e.flush()

	gate.arm()
	late := make(chan error, 1)
	go func() { late <- e.client.Enqueue(Track{MessageId: "late", UserId: "u", Event: "E"}) }()
	<-gate.entered // its record is written; it waits for the fsync

	closed := make(chan error, 1)
	go func() { closed <- e.client.Close() }()
	for !e.client.isClosed() { // Close has begun: the intake is stopping
		runtime.Gosched()
	}
	close(gate.released)
	lateErr := <-late
	require.NoError(t, <-closed, "Close")

	st := assertSpoolIdentity(t, e.client)
	if lateErr != nil {
		assert.ErrorIs(t, lateErr, ErrClosed, "the late Enqueue")
		assert.Zero(t, st.Spool.Left, "left by a Close with time enough")
		return
	}
	assert.Equal(t, 1, e.api.Delivered()["late"],
		"an event whose Enqueue returned nil, during a Close with a healthy API and no deadline, is delivered by it (Left=%d)", st.Spool.Left)
	successes, _ := e.out.ByID()
	assert.Equal(t, 1, successes["late"], "Success callbacks of the late event")
}

// EnqueueContext calls waiting at the spool's bound when Close begins
// return ErrClosed at once, are counted as Rejected.Closed, and the
// identity holds.
func TestSpoolWaitersAtClose(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api, _ := switchAPI()
		e := newEnv(t, api, WithSpool(dir), WithSpoolMaxBytes(1<<20), WithMaxQueueSize(40), WithFlushAt(20), WithCloseTimeout(time.Second))
		pad := strings.Repeat("x", 2000)
		for i := 0; ; i++ {
			if err := e.client.Enqueue(Track{MessageId: fmt.Sprintf("a-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}}); err != nil {
				require.ErrorIs(t, err, ErrQueueFull)
				break
			}
		}
		const waiters = 6
		errs := make(chan error, waiters)
		for i := range waiters {
			go func() {
				errs <- e.client.EnqueueContext(context.Background(), Track{MessageId: fmt.Sprintf("w-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}})
			}()
		}
		synctest.Wait()
		require.NoError(t, e.client.Close())
		for range waiters {
			assert.ErrorIs(t, <-errs, ErrClosed)
		}
		st := assertSpoolIdentity(t, e.client)
		assert.Equal(t, int64(waiters), st.Rejected.Closed)
	})
}

// Many goroutines Enqueue, EnqueueContext, Flush and read Stats while
// Close runs, with each fsync cadence: every call returns, the identity
// holds once Close has returned, and (goleak, TestMain) no goroutine
// outlives Close.
func TestSpoolConcurrentWithClose(t *testing.T) {
	for _, every := range []time.Duration{0, DefaultSpoolSync} {
		t.Run(fmt.Sprintf("sync=%v", every), func(t *testing.T) {
			api := newAPI().Default(analyticstest.Answer{Delay: time.Millisecond})
			e := newEnv(t, api, WithSpool(t.TempDir()), WithSpoolSync(every), WithMaxQueueSize(30), WithFlushAt(10))
			var wg sync.WaitGroup
			var accepted atomic.Int64
			started := make(chan struct{}, 16)
			for p := range 6 {
				wg.Go(func() {
					for i := 0; ; i++ {
						m := Track{MessageId: fmt.Sprintf("c%d-%d", p, i), UserId: "u", Event: "E"}
						var err error
						if i%2 == 0 {
							err = e.client.Enqueue(m)
						} else {
							// No deadline: a call waiting for room returns when
							// room comes or Close refuses it, which is what is
							// checked; a deadline would only fail a loaded run.
							err = e.client.EnqueueContext(context.Background(), m)
						}
						if i == 20 {
							started <- struct{}{}
						}
						if errors.Is(err, ErrClosed) {
							return
						}
						if assert.NoError(t, err) {
							accepted.Add(1)
						}
					}
				})
			}
			for range 2 {
				wg.Go(func() {
					for !e.client.isClosed() {
						// No deadline either: Close ends a Flush that waits.
						err := e.client.Flush(context.Background())
						if err != nil && !errors.Is(err, ErrClosed) {
							assert.NoError(t, err, "Flush")
							return
						}
						_ = e.client.Stats()
					}
				})
			}
			for range 6 {
				<-started
			}
			require.NoError(t, e.client.Close())
			st := assertSpoolIdentity(t, e.client)
			wg.Wait()
			st2 := e.client.Stats()
			assert.Equal(t, accepted.Load(), st2.Enqueued, "Enqueued once every call returned")
			assert.Equal(t, st2.Enqueued, st.Enqueued, "Enqueued read right after Close returned")
			assert.Zero(t, st.Spool.Left, "left by a Close with a healthy API and time enough (with sync 0: Enqueues in their group commit when the loop ended; see TestSpoolSync0EnqueueDuringCloseIsSent)")
		})
	}
}

// Enqueue racing a Shutdown cut short: once Shutdown has returned, the
// identity must hold at once (the contract says "once Close or Shutdown
// has returned"), even though Enqueue calls that won the race are still
// returning.
func TestSpoolIdentityRightAfterShutdownRace(t *testing.T) {
	for iter := range 60 {
		e := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(t.TempDir()), WithMaxQueueSize(10), WithFlushAt(5))
		var wg sync.WaitGroup
		var go_ sync.WaitGroup
		go_.Add(4)
		for p := range 4 {
			wg.Go(func() {
				go_.Done()
				for i := 0; ; i++ {
					if errors.Is(e.client.Enqueue(Track{MessageId: fmt.Sprintf("%d-%d", p, i), UserId: "u", Event: "E"}), ErrClosed) {
						return
					}
				}
			})
		}
		go_.Wait()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = e.client.Shutdown(ctx)
		st := e.client.Stats()
		wg.Wait()
		after := e.client.Stats()
		ok := assert.Equal(t, st.Enqueued+st.Spool.Recovered, st.Delivered+st.Failed.Total()+st.Spool.Left,
			"iteration %d: identity right after Shutdown returned (Enqueued %d then %d once the Enqueue calls returned)", iter, st.Enqueued, after.Enqueued)
		assertSpoolIdentity(t, e.client)
		if !ok {
			break
		}
	}
}

// A second New on the directory right after Close returns succeeds, and
// Close has left the files closed and complete: the second client
// recovers exactly what the first left.
func TestSpoolNewRightAfterClose(t *testing.T) {
	dir := t.TempDir()
	for g := range 20 {
		api := newAPI().Default(analyticstest.Answer{Delay: time.Millisecond})
		e := newEnv(t, api, WithSpool(dir), WithSpoolSync(0), WithMaxQueueSize(10), WithFlushAt(5), WithCloseTimeout(time.Millisecond))
		e.enqueue(tracks(fmt.Sprintf("n%d-", g), 50)...)
		require.NoError(t, e.client.Close())
		st := assertSpoolIdentity(t, e.client)
		next, err := New(testWriteKey, WithSpool(dir), WithHTTPClient(newAPI().Client(CheckRedirect)), WithEndpoint("http://tracking.test"))
		require.NoError(t, err, "New right after Close, generation %d", g)
		assert.Equal(t, st.Spool.Left, next.Stats().Spool.Recovered, "recovered what Close left")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_ = next.Shutdown(ctx)
		st2 := next.Stats()
		// A Shutdown whose context has ended may still see a batch it cut
		// delivered before it cancels the uploads.
		assert.Equal(t, st.Spool.Left, st2.Spool.Left+st2.Delivered+st2.Failed.Total(),
			"what the first Close left is left again, or delivered, or failed")
	}
}
