// Package spool is a durable log of records on disk: a caller appends
// records (byte strings of up to 1 MiB, such as encoded events), takes
// them into memory in order, and acknowledges each once done with it;
// whatever was appended and not acknowledged is handed again, in order,
// by the next Open of the directory, after a crash too. The analytics
// package keeps its events here with WithSpool (docs/SPEC.md §11), but
// nothing here knows of events, batches or HTTP.
//
// A record is framed with its length and a CRC-32C checksum. Records are
// appended to the newest segment; once a segment reaches its size it is
// closed and a new one begins. One acknowledgement file, DONE, logs the
// runs of records that are done (acknowledged), so that a later Open does
// not hand them again. A segment is removed once every record in it is
// done, in whatever order they were acknowledged (SPEC §11.6).
//
// The spool keeps a cursor, the backlog: records appended (or found at
// Open) that the caller has not taken into memory yet. Append hands a new
// record straight to the caller when the backlog is empty and the caller
// has room; otherwise the record waits on disk, and Load reads it back, in
// order, when the caller has room again. So the caller's memory stays
// bounded whatever the backlog on disk (SPEC §11.5).
//
// Append puts each record in the operating system before it returns, so
// that a SIGKILL of the process at any later moment loses none of it: on
// Linux by a store into a shared mapping of the segment's file, whose
// blocks are reserved first (a write(2) per record costs about three
// times the CPU), elsewhere by one write(2). With
// Options.Sync 0 it also waits for an fsync, which the Appends running at
// the same time share (a group commit); otherwise a goroutine of the spool
// fsyncs at most Options.Sync after a write (SPEC §11.1).
//
// A Spool is safe for concurrent use. One directory is open in one Spool
// at a time, in this process or another: Open locks it (SPEC §11.7).
package spool

import (
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/dualpath/analytics-go/internal/waitline"
)

// Version is the format version this package writes and reads. Open
// refuses a directory holding a file of a newer version, naming it and
// both versions; a file whose header reads an older one (0: no version
// wrote it) is damaged, and set aside (SPEC §11.8).
const Version = 2

// ErrFull is returned by Append when the record would take the spool's
// files over Options.MaxBytes (SPEC §11.5).
var ErrFull = errors.New("spool: full")

// ErrClosed is returned by Append and AppendWait after Seal or Close.
var ErrClosed = errors.New("spool: closed")

// ID names one record: the number of its segment, and its ordinal there
// (0 for the segment's first record).
type ID struct {
	Seg uint64
	N   uint32
}

// Options configure Open.
type Options struct {
	// MaxBytes bounds the total size of the spool's files, the
	// acknowledgement file included, and the damaged ones set aside
	// (*.corrupt, kept until someone removes them): Append refuses a
	// record that would take the segments over MaxBytes less 1/64 of it,
	// which is left to the acknowledgement file (a record alone in the
	// spool may use all of it). Space comes back when a segment whose
	// records are all done is removed. 0 (or less) sets no bound.
	MaxBytes int64
	// Sync is the fsync cadence: 0 syncs before Append returns, concurrent
	// Appends sharing one fsync; d > 0 syncs written data at most d after
	// it was written, from a goroutine the spool owns until Close. Either
	// way Append has put its record in the operating system before it
	// returns (SPEC §11.1).
	Sync time.Duration
	// SegmentBytes is the size at which a segment is closed and the next
	// one begins; 0 picks one from MaxBytes: a sixteenth of it, from 64
	// KiB to 16 MiB (16 MiB with no bound). Smaller segments give room
	// back sooner: a segment goes once all its records are done.
	SegmentBytes int64
	// FS is the file system the spool uses; nil is the operating
	// system's.
	FS FS
	// Logger gets a warning for each damaged record or file skipped; nil
	// logs nothing.
	Logger *slog.Logger
}

// FS is the file system under the spool: the operating system's, or one
// that injects faults or stands for a small disk. On Linux, a segment
// file an FS opens as an *os.File is mapped, its blocks reserved with
// fallocate(2); an FS that also has a method Allocate(fd int, size int64)
// error reserves them through it instead (one that keeps its own count of
// the disk's space). Any other File is written, a write(2) per record.
type FS interface {
	MkdirAll(path string, perm fs.FileMode) error
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	ReadDir(name string) ([]fs.DirEntry, error)
	Remove(name string) error
	Rename(oldpath, newpath string) error
	// Lock takes an exclusive lock on the directory dir for this process,
	// refused at once if another holder (in this process or another) has
	// it; unlock gives it back.
	Lock(dir string) (unlock func() error, err error)
}

// File is an open file of an FS.
type File interface {
	io.Writer
	io.ReaderAt
	io.Closer
	Sync() error
	Truncate(size int64) error
	Stat() (fs.FileInfo, error)
}

// Stats are a spool's counts now.
type Stats struct {
	Bytes     int64 // size of the spool's files
	Records   int64 // records not done (acknowledged) yet
	Backlog   int64 // of them, records not handed to the caller yet
	Recovered int64 // records found at Open that were not done
	Corrupt   int64 // damaged records (or unreadable stretches) skipped since Open
	// Handed is the records handed to the caller (by Append's direct or
	// by Load) since Open, plus the Backlog: the records the caller has
	// taken or will take, in order. A record that a later Load finds
	// damaged counts only until then.
	Handed uint64
}

// Spool is an open spool directory. It is safe for concurrent use.
type Spool struct {
	dir       string
	fs        FS
	log       *slog.Logger  // Options.Logger, or one that discards
	maxBytes  int64         // Options.MaxBytes; 0 for no bound
	segBytes  int64         // Options.SegmentBytes, or its default
	syncEvery time.Duration // Options.Sync
	unlock    func() error  // gives the directory lock back
	// allocate reserves a new mapped segment's blocks (mmap_linux.go):
	// fallocate when nil, or the FS's Allocate; tests inject a full disk
	// through it.
	allocate func(fd int, size int64) error

	mu sync.Mutex
	// cond is signalled, with mu, when a sync ends or a record is
	// decided: what Appends waiting on a group commit, and Close, wait
	// for (commit.go).
	cond   sync.Cond
	sealed bool
	closed bool
	// closeOnce runs the first Close, closeErr its error: a Close that
	// finds the spool closing waits for it, so that no Close returns with
	// the files still open or the directory locked.
	closeOnce sync.Once
	closeErr  error

	segs   []*segment // every segment, by number, oldest first
	active *segment   // the one appended to; nil until the next Append creates one
	rotate bool       // the next Append starts a new segment: a write or sync failed
	// nextNum is the number of the next segment created; 0 once a
	// segment numbered math.MaxUint64 exists or existed: no number is
	// left above it. Numbers never wrap: a segment numbered below an
	// older one would sort before it, out of the log's order.
	nextNum uint64
	// cutAt is the size at which a written (not mapped) segment is
	// closed: segBytes, or less once a write found the disk full
	// (store).
	cutAt int64

	// stats are the counts Stats returns, but for Handed, which holds
	// the records handed since Open only: Stats adds the backlog.
	stats Stats

	// The backlog is every record from the cursor on: cur (nil when no
	// segment holds one yet), at ordinal curN, curOff bytes into it.
	// Records before it were handed, or are done.
	cur    *segment
	curN   uint32
	curOff int64

	wbuf []byte   // a record as written, reused by every Append
	rd   reader   // Load's read-ahead
	done doneFile // the acknowledgement file, and Ack's buffers

	commitState
	line waitline.Line[int64] // AppendWait calls waiting for room, oldest first
}

// Append writes data as a record, to the operating system before it
// returns (to the disk too when Options.Sync is 0; SPEC §11.1). Then, if
// the backlog is empty, it calls direct with the record's ID: direct
// returns true if the caller took the record into memory; when it returns false, or the
// backlog was not empty, the record joins the end of the backlog. Append
// and Load calls are serialized, and direct runs with the spool's lock
// held: it must not call the spool.
//
// It returns ErrFull when the record would take the files over MaxBytes,
// ErrClosed after Seal or Close, or an error wrapping the file system's
// (no space, an I/O error). Nothing already written is lost by a failed
// Append, and a later one succeeds once the file system does (SPEC
// §11.9). A record of
// no bytes, or of more than 1 MiB, is refused with an error; so is every
// Append that needs a new segment once the directory holds one numbered
// math.MaxUint64 (there is no next number; the records already there are
// loaded and acknowledged as ever).
func (s *Spool) Append(data []byte, direct func(ID) bool) (ID, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sealed {
		return ID{}, ErrClosed
	}
	return s.appendLocked(data, direct)
}

// Stats returns the spool's counts now.
func (s *Spool) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Handed += uint64(st.Backlog)
	return st
}

// Seal makes every later Append and AppendWait return ErrClosed, and ends
// the waiting ones. It returns once every Append in flight has decided its
// record (handed it to direct, put it in the backlog, or failed), so that
// nothing is handed after it. Load and Ack go on working.
func (s *Spool) Seal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seal()
}
