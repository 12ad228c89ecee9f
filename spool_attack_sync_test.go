package analytics

import (
	"io/fs"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return &syncGateFile{File: f, g: g}, nil
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
func TestSpoolAttackSync0EnqueueDuringCloseIsSent(t *testing.T) {
	gate := newSyncGateFS()
	withFS := func(c *config) { c.spoolFS = gate }
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
	successes, _ := e.out.ids()
	assert.Equal(t, 1, successes["late"], "Success callbacks of the late event")
}
