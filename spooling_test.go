package analytics

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/dualpath/analytics-go/analyticstest"
	"github.com/dualpath/analytics-go/spool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// cutShort shuts c down at once, as a deploy that gives no grace does:
// whatever is not delivered stays in the spool.
func cutShort(t *testing.T, c *Client) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, c.Shutdown(ctx), context.Canceled, "Shutdown with an ended context")
}

// batchEvents returns the events of every request api recorded, raw, by
// messageId.
func batchEvents(t *testing.T, api *analyticstest.Server) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, r := range api.Requests() {
		var body struct{ Batch []json.RawMessage }
		require.NoError(t, json.Unmarshal(r.Body, &body), "request body")
		for _, raw := range body.Batch {
			var head struct{ MessageId string }
			require.NoError(t, json.Unmarshal(raw, &head), "event")
			out[head.MessageId] = string(raw)
		}
	}
	return out
}

// A shutdown that ends before delivery leaves the events in the spool, with
// no callback; the next client on the directory sends them first, with the
// same messageIds, timestamps and bytes, and calls back each once with a
// Spooled message.
func TestSpoolRecoversWhatShutdownLeft(t *testing.T) {
	dir := t.TempDir()
	down := newAPI().Default(analyticstest.Status(503))
	first := newEnv(t, down, WithSpool(dir), WithFlushAt(5), withExactBackoff())
	at := time.Date(2026, 11, 30, 12, 0, 0, 123_000_000, time.UTC) // sent with milliseconds
	msgs := make([]Message, 12)
	for i := range msgs {
		msgs[i] = Track{MessageId: fmt.Sprintf("left-%d", i), UserId: "u", Event: "E", Timestamp: at.Add(time.Duration(i) * time.Second)}
	}
	first.enqueue(msgs...)
	cutShort(t, first.client)

	ok, failed := first.out.Calls()
	assert.Zero(t, ok, "Success callbacks in the client that was cut short")
	assert.Zero(t, failed, "Failure callbacks in the client that was cut short: the events stay in the spool")
	st := first.client.Stats()
	assert.Equal(t, int64(12), st.Spool.Left, "Stats.Spool.Left")
	assert.Zero(t, st.Failed.Total(), "Stats.Failed")
	assert.Contains(t, first.logs.String(), "stay in the spool for the next start", "the log says where the events went")
	sent := batchEvents(t, down) // the bytes of the attempts the API refused

	up := newAPI()
	second := newEnv(t, up, WithSpool(dir), WithFlushAt(5))
	assert.Equal(t, int64(12), second.client.Stats().Spool.Recovered, "Stats.Spool.Recovered")
	second.flush()
	second.close()

	second.assertDeliveredOnce(msgs)
	got := batchEvents(t, up)
	for i, m := range msgs {
		id := MessageID(m)
		var ev struct{ Timestamp time.Time }
		require.NoError(t, json.Unmarshal([]byte(got[id]), &ev), "event %s", id)
		assert.True(t, ev.Timestamp.Equal(at.Add(time.Duration(i)*time.Second)), "timestamp of %s: %v", id, ev.Timestamp)
		if before, tried := sent[id]; tried {
			assert.Equal(t, before, got[id], "the bytes of %s, before and after the restart", id)
		}
	}
	successes := second.out.Successes()
	require.Len(t, successes, 12, "Success callbacks after recovery")
	for _, m := range successes {
		sp, isSpooled := m.(Spooled)
		require.True(t, isSpooled, "a recovered event's callback gets a Spooled, got %T", m)
		assert.True(t, sp.Recovered, "Spooled.Recovered of %s", sp.MessageId)
		assert.Equal(t, "track", sp.Type, "Spooled.Type of %s", sp.MessageId)
		assert.Equal(t, got[sp.MessageId], string(sp.JSON), "Spooled.JSON of %s is the bytes sent", sp.MessageId)
	}
	st = second.client.Stats()
	assert.Zero(t, st.Spool.Records, "records left after delivering everything")
	assert.Zero(t, st.Spool.Left, "events left by the second Close")
	assert.Equal(t, st.Enqueued+st.Spool.Recovered, st.Delivered+st.Failed.Total()+st.Spool.Left, "every event accounted for")
}

// gate is a tracking API that holds every request until opened.
type gate struct {
	open chan struct{}
	once sync.Once
}

func newGate(api *analyticstest.Server) *gate {
	g := &gate{open: make(chan struct{})}
	api.Rule(func(analyticstest.Request) analyticstest.Answer {
		<-g.open
		return analyticstest.Answer{Default: true}
	})
	return g
}

func (g *gate) release() { g.once.Do(func() { close(g.open) }) }

// Beyond the memory queue's bounds, events wait on disk: the queue never
// holds more than MaxQueueSize, every Enqueue succeeds, and once the API
// answers every event is delivered once, the ones that waited on disk
// called back with a Spooled message.
func TestSpoolKeepsMemoryBounded(t *testing.T) {
	api := newAPI()
	g := newGate(api)
	defer g.release()
	const queueSize, total = 40, 3_000
	e := newEnv(t, api, WithSpool(t.TempDir()), WithMaxQueueSize(queueSize), WithFlushAt(10), WithMaxConcurrentRequests(2))
	msgs := tracks("m-", total)
	e.enqueue(msgs...)

	st := e.client.Stats()
	assert.LessOrEqual(t, int64(st.QueueDepth)+st.InFlight, int64(queueSize), "events in memory")
	assert.GreaterOrEqual(t, st.Spool.OnDisk, int64(total-queueSize), "events waiting on disk only")
	assert.Equal(t, int64(total), st.Spool.Records, "records in the spool")

	g.release()
	e.flush()
	e.close()
	e.assertDeliveredOnce(msgs)
	spooled := 0
	for _, m := range e.out.Successes() {
		if sp, ok := m.(Spooled); ok {
			spooled++
			assert.False(t, sp.Recovered, "an event this client spooled is not Recovered")
		}
	}
	assert.GreaterOrEqual(t, spooled, total-queueSize, "callbacks with a Spooled message")
	assert.Zero(t, e.client.Stats().Spool.Records, "records after delivering everything")
}

// Events that fail for good get their Failure, and are then removed from
// the spool: the next client on the directory recovers nothing.
func TestSpoolRemovesEventsFailedForGood(t *testing.T) {
	dir := t.TempDir()
	e := newEnv(t, newAPI().Default(analyticstest.Status(400)), WithSpool(dir), WithFlushAt(5))
	e.enqueue(tracks("bad-", 10)...)
	e.flush()
	e.close()
	_, failed := e.out.Calls()
	assert.Equal(t, 10, failed, "Failure callbacks")
	st := e.client.Stats()
	assert.Zero(t, st.Spool.Records, "records after the failures")
	assert.Zero(t, st.Spool.Left, "events left")

	again := newEnv(t, newAPI(), WithSpool(dir))
	assert.Zero(t, again.client.Stats().Spool.Recovered, "events recovered after they failed for good")
	again.close()
}

// At WithSpoolMaxBytes, Enqueue returns ErrQueueFull and EnqueueContext
// waits: until its context ends, or until batches end and give room back.
func TestSpoolFullRefusesThenWaits(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api := newAPI()
		g := newGate(api)
		defer g.release()
		// One request at a time: the gate holds the mock's lock, which a
		// second request would wait for outside the bubble's clock.
		e := newEnv(t, api, WithSpool(dir), WithSpoolMaxBytes(1<<20), WithMaxQueueSize(100), WithFlushAt(50),
			WithMaxConcurrentRequests(1))
		big := strings.Repeat("x", 2000)
		track := func(id string) Track {
			return Track{MessageId: id, UserId: "u", Event: "E", Properties: Properties{"pad": big}}
		}
		accepted := 0
		var err error
		for i := 0; i < 5_000; i++ {
			if err = e.client.Enqueue(track(fmt.Sprintf("f-%d", i))); err != nil {
				break
			}
			accepted++
		}
		require.ErrorIs(t, err, ErrQueueFull, "Enqueue at the spool's bound")
		assert.Less(t, accepted, 5_000, "events accepted before the bound")
		assert.LessOrEqual(t, e.client.Stats().Spool.Bytes, int64(1<<20), "the spool's files stay within the bound")

		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		start := time.Now()
		err = e.client.EnqueueContext(ctx, track("late"))
		require.ErrorIs(t, err, ErrQueueFull, "EnqueueContext when its context ends first")
		require.ErrorIs(t, err, context.DeadlineExceeded, "EnqueueContext when its context ends first")
		assert.Equal(t, time.Second, time.Since(start), "EnqueueContext waited for its context")

		waited := make(chan error, 1)
		go func() { waited <- e.client.EnqueueContext(context.Background(), track("waited")) }()
		synctest.Wait()
		select {
		case err := <-waited:
			t.Fatalf("EnqueueContext returned %v while the spool was full", err)
		default:
		}
		g.release()
		require.NoError(t, <-waited, "EnqueueContext once batches end and give room back")
		e.flush()
		e.close()
		got := api.Delivered()
		assert.Equal(t, 1, got["waited"], "the event that waited is delivered")
		assert.Equal(t, accepted+1, len(got), "events delivered")
	})
}

// One client per directory: a second New on it fails and names it, until
// the first client is closed.
func TestSpoolDirectoryIsLocked(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	first := newEnv(t, newAPI(), WithSpool(dir))
	_, err := New(testWriteKey, WithSpool(dir), WithHTTPClient(newAPI().Client(CheckRedirect)))
	require.Error(t, err, "a second New on a directory in use")
	assert.Contains(t, err.Error(), dir, "the error names the directory")
	assert.NotContains(t, err.Error(), testWriteKey, "the error shows no write key")
	first.close()

	second := newEnv(t, newAPI(), WithSpool(dir))
	second.close()
}

// A cleanup that deletes the spool's LOCK file while the client runs does
// not let a second New share the directory (and take the first client's
// live events for leftovers).
func TestSpoolDirectoryStaysLockedWithoutLockFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	first := newEnv(t, newAPI(), WithSpool(dir))
	require.NoError(t, os.Remove(filepath.Join(dir, "LOCK")))
	second, err := New(testWriteKey, WithSpool(dir), WithHTTPClient(newAPI().Client(CheckRedirect)))
	if err == nil {
		second.Close()
	}
	require.Error(t, err, "a second New on a directory in use, its LOCK removed")
	assert.Contains(t, err.Error(), `directory "`+dir+`" is in use`, "the error names the directory")
	first.close()
}

// The directory is 0700 and its files 0600, and no file ever holds the
// write key, while the client runs nor after it.
func TestSpoolFilesArePrivateAndKeyless(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	api := newAPI()
	g := newGate(api)
	e := newEnv(t, api, WithSpool(dir), WithFlushAt(5))
	e.enqueue(tracks("p-", 20)...)
	check := func(when string) {
		info, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, fs.FileMode(0o700), info.Mode().Perm(), "the directory's mode %s", when)
		files := 0
		require.NoError(t, filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files++
			info, err := d.Info()
			require.NoError(t, err)
			assert.Equal(t, fs.FileMode(0o600), info.Mode().Perm(), "mode of %s %s", d.Name(), when)
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			assert.NotContains(t, string(data), testWriteKey, "%s %s holds the write key", d.Name(), when)
			return nil
		}))
		assert.Positive(t, files, "files in the spool %s", when)
	}
	check("while the client runs")
	g.release()
	e.flush()
	e.close()
}

// faultFS is the operating system's file system, with a switch that makes
// every write fail with ENOSPC.
type faultFS struct {
	osSpoolFS
	mu      sync.Mutex
	noSpace bool
	// garble, when set, is damaged in every read that returns it: its
	// last byte flipped, as a disk that goes bad under a record would.
	garble []byte
}

func (f *faultFS) set(noSpace bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noSpace = noSpace
}

func (f *faultFS) full() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.noSpace
}

// osSpoolFS is the operating system's file system for the spool, without
// the directory lock: what the tests' fault-injecting file systems wrap.
type osSpoolFS struct{}

func (osSpoolFS) MkdirAll(path string, perm fs.FileMode) error { return os.MkdirAll(path, perm) }
func (osSpoolFS) ReadDir(name string) ([]fs.DirEntry, error)   { return os.ReadDir(name) }
func (osSpoolFS) Remove(name string) error                     { return os.Remove(name) }
func (osSpoolFS) Rename(oldpath, newpath string) error         { return os.Rename(oldpath, newpath) }
func (osSpoolFS) Lock(string) (func() error, error)            { return func() error { return nil }, nil }

// open opens name as the operating system does and returns the file as
// wrap makes it: what each wrapping file system's OpenFile does.
func (osSpoolFS) open(name string, flag int, perm fs.FileMode, wrap func(*os.File) spool.File) (spool.File, error) {
	f, err := os.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err // not a typed nil in the interface
	}
	return wrap(f), nil
}

func (f *faultFS) OpenFile(name string, flag int, perm fs.FileMode) (spool.File, error) {
	return f.open(name, flag, perm, func(file *os.File) spool.File { return &faultFile{File: file, fs: f} })
}

type faultFile struct {
	*os.File
	fs *faultFS
}

func (f *faultFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.fs.mu.Lock()
	garble := f.fs.garble
	f.fs.mu.Unlock()
	if i := bytes.Index(p[:n], garble); len(garble) > 0 && i >= 0 {
		p[i+len(garble)-1] ^= 0x20
	}
	return n, err
}

func (f *faultFile) Write(p []byte) (int, error) {
	if f.fs.full() {
		return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: syscall.ENOSPC}
	}
	return f.File.Write(p)
}

// A disk that is full makes Enqueue fail with an error that wraps the
// cause; what was accepted before is delivered, and Enqueue works again
// once the disk does.
func TestSpoolDiskErrors(t *testing.T) {
	faults := &faultFS{}
	withFS := func(c *config) { c.spool.FS = faults }
	e := newEnv(t, newAPI(), WithSpool(t.TempDir()), withFS, WithFlushAt(5))
	before := tracks("before-", 7)
	e.enqueue(before...)

	faults.set(true)
	err := e.client.Enqueue(Track{MessageId: "refused", UserId: "u", Event: "E"})
	require.ErrorIs(t, err, ErrSpool, "Enqueue on a full disk")
	require.ErrorIs(t, err, syscall.ENOSPC, "Enqueue on a full disk wraps the cause")
	assert.NotContains(t, err.Error(), testWriteKey, "the error shows no write key")
	assert.Equal(t, int64(1), e.client.Stats().Rejected.Spool, "Stats.Rejected.Spool")

	faults.set(false)
	after := tracks("after-", 7)
	e.enqueue(after...)
	e.flush()
	e.close()
	e.assertDeliveredOnce(append(before, after...))
	assert.Zero(t, e.api.Delivered()["refused"], "the refused event was not sent")
}

// The spool's options are checked by New.
func TestSpoolOptionBounds(t *testing.T) {
	for _, tt := range []struct {
		opt  Option
		want string
	}{
		{WithSpoolMaxBytes(1<<20 - 1), "invalid option SpoolMaxBytes: must be at least 1048576"},
		{WithSpoolMaxBytes(1<<40 + 1), "invalid option SpoolMaxBytes: must be at most 1099511627776"},
		{WithSpoolSync(-time.Second), "invalid option SpoolSync: must not be negative"},
		{WithSpoolSync(7*24*time.Hour + 1), "invalid option SpoolSync: must be at most 168h0m0s"},
	} {
		c, err := newOrPanic(WithSpool(t.TempDir()), tt.opt)
		if !assert.Error(t, err, tt.want) {
			closeAccepted(c)
			continue
		}
		assert.ErrorContains(t, err, tt.want)
		var oe *OptionError
		assert.True(t, errors.As(err, &oe), "the error is an *OptionError")
	}
}

// Events waiting on disk are sent as soon as there is room, without waiting
// for FlushAt (which the memory queue cannot reach here: its byte bound
// holds fewer events) or for FlushInterval.
func TestSpoolBacklogDoesNotWaitForTheTimer(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, newAPI(), WithSpool(dir), WithMaxQueueBytes(40_000), WithFlushInterval(time.Hour))
		start := time.Now()
		pad := strings.Repeat("p", 2000)
		msgs := make([]Message, 100)
		for i := range msgs {
			msgs[i] = Track{MessageId: fmt.Sprintf("b-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}}
		}
		e.enqueue(msgs...)
		synctest.Wait()
		assert.Zero(t, time.Since(start), "fake time passed")
		st := e.client.Stats()
		assert.Zero(t, st.Spool.OnDisk, "events still on disk")
		// The last few stay in memory below FlushAt, as without a spool:
		// the timer sends them.
		assert.GreaterOrEqual(t, st.Delivered, int64(100-st.QueueDepth), "events delivered without the timer")
		assert.Less(t, st.QueueDepth, 20, "events queued")
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}

// segmentFiles returns the spool's segment files, oldest first.
func segmentFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.seg"))
	require.NoError(t, err)
	return files
}

// A record whose checksum fails is skipped, counted and logged; a record
// cut short at the end is dropped; every other event is sent.
func TestSpoolSurvivesDamage(t *testing.T) {
	dir := t.TempDir()
	first := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir), WithFlushAt(50))
	msgs := tracks("d-", 10)
	first.enqueue(msgs...)
	cutShort(t, first.client)

	segs := segmentFiles(t, dir)
	require.Len(t, segs, 1, "segment files")
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	const header, frame = 12, 8
	data[header+frame+5] ^= 0xff          // a byte of the first record's event
	data = append(data, 0x40, 0, 0, 0, 1) // a record cut short: a length, half a checksum
	require.NoError(t, os.WriteFile(segs[0], data, 0o600))

	second := newEnv(t, newAPI(), WithSpool(dir))
	second.flush()
	second.close()
	st := second.client.Stats()
	assert.Equal(t, int64(1), st.Spool.SkippedCorrupt, "Stats.Spool.SkippedCorrupt")
	assert.Contains(t, second.logs.String(), "damaged record skipped", "the damage is logged")
	second.assertDeliveredOnce(msgs[1:])
	assert.Zero(t, second.api.Delivered()["d-0"], "the damaged event is not sent")
}

// A spool written by a later format version is refused by New, naming the
// file and both versions; the files are left as they are.
func TestSpoolRefusesAnUnknownVersion(t *testing.T) {
	dir := t.TempDir()
	first := newEnv(t, newAPI().Default(analyticstest.Status(503)), WithSpool(dir))
	first.enqueue(tracks("v-", 3)...)
	cutShort(t, first.client)
	segs := segmentFiles(t, dir)
	require.Len(t, segs, 1, "segment files")
	data, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	data[8] = 9 // the version, after the 8-byte magic
	require.NoError(t, os.WriteFile(segs[0], data, 0o600))

	_, err = New(testWriteKey, WithSpool(dir), WithHTTPClient(newAPI().Client(CheckRedirect)))
	require.Error(t, err, "New on a spool of version 9")
	assert.Contains(t, err.Error(), filepath.Base(segs[0]), "the error names the file")
	assert.Contains(t, err.Error(), "9", "the error gives the version found")
	after, err := os.ReadFile(segs[0])
	require.NoError(t, err)
	assert.Equal(t, data, after, "the file is left as it was")
}

// A header torn inside its sector by a power loss (the magic kept, the
// version zeroed) costs its own file, never the spool: New starts, with
// the file marking events done (DONE) torn every event is sent again
// (those delivered go again with their messageIds), a segment's header
// costs its own events, counted. Before, New refused the directory: "… is of format
// version 0; this package reads version 1".
func TestSpoolTornHeader(t *testing.T) {
	for _, ext := range []string{"DONE", ".seg"} {
		t.Run(ext, func(t *testing.T) {
			dir := t.TempDir()
			var requests atomic.Int32
			api := newAPI().Rule(func(analyticstest.Request) analyticstest.Answer {
				if requests.Add(1) == 1 {
					return analyticstest.Answer{Default: true} // the first batch delivered, marked done
				}
				return analyticstest.Status(503)
			})
			first := newEnv(t, api, WithSpool(dir), WithFlushAt(5))
			delivered, left := tracks("a-", 5), tracks("b-", 5)
			first.enqueue(delivered...)
			first.flush()
			first.enqueue(left...)
			cutShort(t, first.client)
			require.Equal(t, int64(5), first.client.Stats().Spool.Left)

			files, err := filepath.Glob(filepath.Join(dir, "*"+ext))
			require.NoError(t, err)
			require.Len(t, files, 1, "%s files", ext)
			data, err := os.ReadFile(files[0])
			require.NoError(t, err)
			clear(data[8:12]) // the version, after the 8-byte magic
			require.NoError(t, os.WriteFile(files[0], data, 0o600))

			second := newEnv(t, newAPI(), WithSpool(dir))
			more := tracks("c-", 3)
			second.enqueue(more...)
			second.flush()
			second.close()
			st := second.client.Stats()
			assert.Equal(t, int64(1), st.Spool.SkippedCorrupt, "Stats.Spool.SkippedCorrupt")
			assert.Contains(t, second.logs.String(), "damaged header", "the damage is logged")
			if ext == "DONE" {
				second.assertDeliveredOnce(append(append(delivered, left...), more...))
				assert.Equal(t, int64(10), st.Spool.Recovered, "every event of the segment, delivered ones too")
			} else {
				second.assertDeliveredOnce(more)
				assert.Zero(t, st.Spool.Recovered)
				corrupt, err := filepath.Glob(filepath.Join(dir, "*.corrupt"))
				require.NoError(t, err)
				assert.Len(t, corrupt, 1, "the segment, set aside")
			}
		})
	}
}

// Many goroutines enqueueing at once, with the memory queue small enough
// that events go back and forth between handed at once and waiting on disk:
// each event is delivered once, with either fsync cadence.
func TestSpoolConcurrentEnqueue(t *testing.T) {
	for _, every := range []time.Duration{0, DefaultSpoolSync} {
		t.Run(fmt.Sprintf("sync=%v", every), func(t *testing.T) {
			e := newEnv(t, newAPI(), WithSpool(t.TempDir()), WithSpoolSync(every),
				WithMaxQueueSize(100), WithFlushAt(25))
			const producers, each = 8, 400
			var wg sync.WaitGroup
			all := make([][]Message, producers)
			for p := range producers {
				all[p] = tracks(fmt.Sprintf("c%d-", p), each)
				wg.Go(func() {
					for _, m := range all[p] {
						assert.NoError(t, e.client.Enqueue(m), "Enqueue %s", MessageID(m))
					}
				})
			}
			wg.Wait()
			e.flush()
			e.close()
			for _, msgs := range all {
				e.assertDeliveredOnce(msgs)
			}
			st := e.client.Stats()
			assert.Zero(t, st.Spool.Records, "records after delivering everything")
			assert.Equal(t, int64(producers*each), st.Delivered, "Stats.Delivered")
		})
	}
}

// A record found damaged when it is read back from disk (a checksum that
// fails) is counted and logged, and its event gets exactly one callback,
// a Failure matching ErrSpool, with its bytes as read; the other events are
// delivered, Flush returns, and every event is accounted for.
func TestSpoolDamageFoundWhenReadBack(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		faults := &faultFS{garble: []byte(`"event":"Damaged`)} // "Damaged" reads "DamageD"
		api := newAPI()
		g := newGate(api)
		e := newEnv(t, api, WithSpool(dir), func(c *config) { c.spool.FS = faults },
			WithMaxQueueSize(10), WithFlushAt(5), WithMaxConcurrentRequests(1))
		msgs := tracks("dmg-", 100)
		msgs[90] = Track{MessageId: "dmg-90", UserId: "u", Event: "Damaged"}
		e.enqueue(msgs...)
		synctest.Wait()
		require.Greater(t, e.client.Stats().Spool.OnDisk, int64(50), "events waiting on disk")
		g.release()
		e.flush()
		e.close()

		st := e.client.Stats()
		assert.Equal(t, int64(1), st.Spool.SkippedCorrupt, "Stats.Spool.SkippedCorrupt")
		assert.Equal(t, FailedStats{Spool: 1}, st.Failed, "Stats.Failed: the damaged event, under Spool")
		assert.Equal(t, int64(DefaultSpoolMaxBytes), st.Spool.MaxBytes, "Stats.Spool.MaxBytes")
		assert.Contains(t, e.logs.String(), "damaged record skipped", "the damage is logged")
		e.assertDeliveredOnce(append(append([]Message(nil), msgs[:90]...), msgs[91:]...))
		assert.Zero(t, api.Delivered()["dmg-90"], "the damaged event is not sent")
		fails := e.out.Failures()
		require.Len(t, fails, 1, "Failure callbacks: %v", fails)
		assert.ErrorIs(t, fails[0].Err, ErrSpool, "the damaged event's error")
		sp, ok := fails[0].Message.(Spooled)
		require.True(t, ok, "the damaged event's callback gets a Spooled, got %T", fails[0].Message)
		assert.Equal(t, "dmg-90", sp.MessageId, "its messageId, as read")
		assert.Contains(t, string(sp.JSON), `"event":"DamageD"`, "its bytes as read, damage included")
		assert.Equal(t, st.Enqueued, st.Delivered+st.Failed.Total(), "every event accounted for")
		assert.Zero(t, st.Spool.Records, "records left")
	})
}

// With WithSpool, the first event that the memory queue has no room for
// (its byte bound holds fewer than FlushAt) waits on disk and wakes the
// loop: the queued events go out at once, not at FlushInterval, and the
// one on disk after them (SPEC §11.5). The API answers after a second of
// fake time, which passes only once the test waits: until then the batch
// stays in flight, its events hold the queue's room, and the event on
// disk stays there, however soon the loop runs.
func TestSpoolFirstEventOnDiskWakesTheLoop(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		api := newAPI().Default(analyticstest.Answer{Delay: time.Second})
		e := newEnv(t, api, WithSpool(dir), WithMaxQueueBytes(40_000), WithFlushInterval(time.Hour))
		synctest.Wait() // the loop waits to be woken
		start := time.Now()
		pad := strings.Repeat("p", 2000)
		var msgs []Message
		for i := 0; e.client.Stats().Spool.OnDisk == 0; i++ {
			require.Less(t, i, 100, "events enqueued before one waits on disk")
			m := Track{MessageId: fmt.Sprintf("w-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}}
			e.enqueue(m)
			msgs = append(msgs, m)
		}
		synctest.Wait()
		assert.Equal(t, int64(len(msgs)-1), e.client.Stats().InFlight, "events sent at once, before any fake time passed")
		time.Sleep(time.Second) // the API's answer
		synctest.Wait()
		assert.Equal(t, time.Second, time.Since(start), "fake time passed")
		st := e.client.Stats()
		assert.Zero(t, st.Spool.OnDisk, "events still on disk")
		// The one read back from disk stays in memory below FlushAt, as
		// without a spool: the timer sends it.
		assert.Equal(t, int64(len(msgs)-1), st.Delivered, "events delivered without the timer")
		assert.Equal(t, 1, st.QueueDepth, "events queued")
		e.close()
		e.assertDeliveredOnce(msgs)
	})
}
