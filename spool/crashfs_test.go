package spool

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"
)

// crashFS is a file system in memory that can lose power: the tests'
// model of a disk under a page cache, after Pebble's crashable MemFS, the
// file system model of Vector's disk buffer tests and the ALICE paper's
// abstract persistence models (OSDI '14).
//
// It holds one directory, the spool's. Each file (an inode) keeps two
// states: what the page cache holds, which every read sees, and what the
// disk holds, what its last Sync wrote back. The directory keeps two too:
// its entries now, and its entries as of its last sync (File.Sync of the
// directory opened as a file), with the operations since (create, rename,
// remove) in order. A crash (image) keeps the synced state of each, plus:
//
//   - of a file's unsynced data, any subset of its 4 KiB blocks, each
//     block as written, as it was, or torn: each 512 B sector as written,
//     as it was, zeros, 0xFF, or written up to a byte and zeros after,
//     the bytes synced and not written since staying as they are (the
//     disk keeps what was synced: sectors are written atomically); and
//     its size as synced, as now, or a block boundary between;
//   - of the directory's unsynced operations, a prefix (journaled
//     metadata, ext4 and XFS: their operations reach the disk in order), or
//     in the weaker model any subset, each applied or not in order. A file
//     created and synced whose directory was not synced may vanish; a
//     rename or a remove not followed by a sync of the directory may be
//     undone.
//
// A file a segment is opened as can be mapped (mapper): the window the
// spool stores records into is the file's page cache itself, as a
// MAP_SHARED mapping is, so reads see the stores and a Sync writes them
// back. The FS's own state is guarded by its mutex; the stores through a
// window are not (a real mapping has no lock either): a test must order
// them with the Syncs that read them, which the model test does by driving
// the spool from one goroutine in a synctest bubble, time passing (and so
// the syncer running) only while the driver sleeps (powerloss_test.go).
type crashFS struct {
	dir    string
	mapped bool // segment files are mappers, appended to through a window

	mu      sync.Mutex
	names   map[string]*inode // the directory now
	synced  map[string]*inode // the directory on disk
	ops     []dirOp           // since its last sync, in order
	locked  bool
	nextIno int
	// before, if set, runs before each operation that changes a file or
	// the directory, with the operation's name and mu held: a crash there
	// (crashImage) leaves the state as it is before the operation.
	before func(op string)
	// misuse lists what a real file system would punish (a store past a
	// file's end through a mapping, a file grown or cut while mapped): a
	// bug of the spool's or of the model, which the test reports.
	misuse []string

	fsyncs, dirSyncs, renames int
}

// inode is a file: data is what the page cache holds (a window of a mapping
// aliases it), synced what the disk holds.
type inode struct {
	ino    int
	data   []byte
	synced []byte
	maps   int // windows mapped and not unmapped
}

type dirOpKind int

const (
	opCreate dirOpKind = iota
	opRename
	opRemove
)

// dirOp is an operation on the directory: name bound to ino (create), from
// moved to name (rename), name removed (remove).
type dirOp struct {
	kind     dirOpKind
	name     string
	from     string
	ino      *inode
	describe string
}

func newCrashFS(dir string, mapped bool) *crashFS {
	return &crashFS{dir: dir, mapped: mapped, names: map[string]*inode{}, synced: map[string]*inode{}}
}

// crashConfig chooses what a crash keeps.
type crashConfig struct {
	// anyDirOps: any subset of the directory's unsynced operations, each
	// kept with probability dirKeep percent, not a prefix; dirOp, if set,
	// chooses them instead, by their description ("remove 0…01.ack").
	anyDirOps bool
	dirKeep   int
	dirOp     func(op string) bool
	// keep is the probability, in percent, that an unsynced block is kept
	// as written; the rest are as they were, or (torn) half of them torn.
	keep int
	torn bool
}

// crashImage returns a new crashFS holding what a power loss at this moment
// may leave, chosen with rng: see crashFS. f.mu is held.
func (f *crashFS) crashImage(rng *rand.Rand, cfg crashConfig) *crashFS {
	names := maps.Clone(f.synced)
	k := len(f.ops)
	if !cfg.anyDirOps {
		k = rng.IntN(len(f.ops) + 1)
	}
	for i, op := range f.ops {
		switch {
		case cfg.dirOp != nil:
			if !cfg.dirOp(op.describe) {
				continue
			}
		case i >= k || cfg.anyDirOps && rng.IntN(100) >= cfg.dirKeep:
			continue
		}
		switch op.kind {
		case opCreate:
			names[op.name] = op.ino
		case opRename:
			delete(names, op.from)
			names[op.name] = op.ino
		case opRemove:
			delete(names, op.name)
		}
	}
	img := newCrashFS(f.dir, f.mapped)
	contents := map[*inode]*inode{}
	for _, name := range slices.Sorted(maps.Keys(names)) { // rng's draws in a fixed order
		ino := names[name]
		c, ok := contents[ino]
		if !ok {
			img.nextIno++
			data := crashContent(ino, rng, cfg)
			c = &inode{ino: img.nextIno, data: data, synced: slices.Clone(data)}
			contents[ino] = c
		}
		img.names[name] = c
		img.synced[name] = c
	}
	return img
}

const (
	crashBlock  = 4 << 10
	crashSector = 512
)

// crashContent is what a crash leaves of a file: its synced data, and of
// what was written since, a subset of the blocks, some torn (crashFS).
func crashContent(ino *inode, rng *rand.Rand, cfg crashConfig) []byte {
	old, cur := ino.synced, ino.data
	if bytes.Equal(old, cur) {
		return slices.Clone(old)
	}
	size := len(cur)
	if len(old) != len(cur) {
		switch rng.IntN(3) {
		case 0:
			size = len(old)
		case 1: // a block boundary between: written back part way
			lo, hi := min(len(old), len(cur)), max(len(old), len(cur))
			size = min(hi, (lo/crashBlock+1+rng.IntN(hi/crashBlock-lo/crashBlock+1))*crashBlock)
		}
	}
	at := func(b []byte, i int) byte {
		if i < len(b) {
			return b[i]
		}
		return 0
	}
	// window returns b's bytes lo to hi, zeros past its end.
	window := func(b []byte, lo, hi int) []byte {
		if hi <= len(b) {
			return b[lo:hi]
		}
		w := make([]byte, hi-lo)
		if lo < len(b) {
			copy(w, b[lo:])
		}
		return w
	}
	out := make([]byte, size)
	copy(out, old)
	for blk := 0; blk < size; blk += crashBlock {
		end := min(blk+crashBlock, size)
		if bytes.Equal(window(old, blk, end), window(cur, blk, end)) {
			continue
		}
		switch r := rng.IntN(100); {
		case r < cfg.keep:
			copy(out[blk:end], window(cur, blk, end))
		case !cfg.torn || r < cfg.keep+(100-cfg.keep)/2: // as it was
		default: // torn, sector by sector; what was synced and not written since stays
			synced := func(i int) bool { return i < len(old) && i < len(cur) && old[i] == cur[i] }
			fill := func(lo, hi int, b byte) {
				for i := lo; i < hi; i++ {
					if !synced(i) {
						out[i] = b
					}
				}
			}
			for sec := blk; sec < end; sec += crashSector {
				send := min(sec+crashSector, end)
				switch rng.IntN(5) {
				case 0: // as written
					for i := sec; i < send; i++ {
						out[i] = at(cur, i)
					}
				case 1: // as it was
				case 2:
					fill(sec, send, 0)
				case 3:
					fill(sec, send, 0xFF)
				case 4: // written up to a byte, zeros after
					cut := sec + rng.IntN(send-sec)
					for i := sec; i < cut; i++ {
						out[i] = at(cur, i)
					}
					fill(cut, send, 0)
				}
			}
		}
	}
	return out
}

// name returns the file name of path in f's directory, or an error.
func (f *crashFS) name(op, path string) (string, error) {
	if filepath.Dir(path) != f.dir {
		return "", &fs.PathError{Op: op, Path: path, Err: errors.New("not in the crash file system's directory")}
	}
	return filepath.Base(path), nil
}

// change runs f.before for op. f.mu is held.
func (f *crashFS) change(op string) {
	if f.before != nil {
		f.before(op)
	}
}

func (f *crashFS) MkdirAll(path string, _ fs.FileMode) error {
	if path != f.dir {
		return &fs.PathError{Op: "mkdir", Path: path, Err: errors.New("not the crash file system's directory")}
	}
	return nil
}

func (f *crashFS) Lock(dir string) (func() error, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.locked {
		return nil, errInUse
	}
	f.locked = true
	return func() error {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.locked = false
		return nil
	}, nil
}

func (f *crashFS) OpenFile(path string, flag int, _ fs.FileMode) (File, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if path == f.dir {
		return &crashDirFile{fs: f}, nil
	}
	name, err := f.name("open", path)
	if err != nil {
		return nil, err
	}
	ino := f.names[name]
	switch {
	case ino == nil && flag&os.O_CREATE == 0:
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	case ino != nil && flag&(os.O_CREATE|os.O_EXCL) == os.O_CREATE|os.O_EXCL:
		return nil, &fs.PathError{Op: "open", Path: path, Err: fs.ErrExist}
	case ino == nil:
		f.change("create " + name)
		f.nextIno++
		ino = &inode{ino: f.nextIno}
		f.names[name] = ino
		f.ops = append(f.ops, dirOp{kind: opCreate, name: name, ino: ino, describe: "create " + name})
	case flag&os.O_TRUNC != 0 && len(ino.data) > 0:
		f.change("truncate " + name)
		if ino.maps > 0 {
			f.misuse = append(f.misuse, "truncated while mapped: "+name)
		}
		ino.data = nil
	}
	cf := &crashFile{fs: f, ino: ino, name: name, flag: flag}
	if f.mapped && filepath.Ext(name) == segExt {
		return &crashMappedFile{cf}, nil
	}
	return cf, nil
}

func (f *crashFS) ReadDir(path string) ([]fs.DirEntry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if path != f.dir {
		return nil, &fs.PathError{Op: "readdir", Path: path, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for _, name := range slices.Sorted(maps.Keys(f.names)) {
		out = append(out, crashEntry{name, int64(len(f.names[name].data))})
	}
	return out, nil
}

func (f *crashFS) Remove(path string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	name, err := f.name("remove", path)
	if err != nil {
		return err
	}
	if f.names[name] == nil {
		return &fs.PathError{Op: "remove", Path: path, Err: fs.ErrNotExist}
	}
	f.change("remove " + name)
	delete(f.names, name)
	f.ops = append(f.ops, dirOp{kind: opRemove, name: name, describe: "remove " + name})
	return nil
}

func (f *crashFS) Rename(from, to string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	fname, err := f.name("rename", from)
	if err != nil {
		return err
	}
	tname, err := f.name("rename", to)
	if err != nil {
		return err
	}
	ino := f.names[fname]
	if ino == nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: fs.ErrNotExist}
	}
	f.change("rename " + fname + " " + tname)
	f.renames++
	delete(f.names, fname)
	f.names[tname] = ino
	f.ops = append(f.ops, dirOp{kind: opRename, name: tname, from: fname, ino: ino, describe: "rename " + fname + " " + tname})
	return nil
}

// files returns the directory's file names and sizes now.
func (f *crashFS) files() map[string]int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]int64{}
	for name, ino := range f.names {
		out[name] = int64(len(ino.data))
	}
	return out
}

type crashEntry struct {
	name string
	size int64
}

func (e crashEntry) Name() string               { return e.name }
func (e crashEntry) IsDir() bool                { return false }
func (e crashEntry) Type() fs.FileMode          { return 0 }
func (e crashEntry) Info() (fs.FileInfo, error) { return crashInfo(e), nil }

type crashInfo crashEntry

func (i crashInfo) Name() string       { return i.name }
func (i crashInfo) Size() int64        { return i.size }
func (i crashInfo) Mode() fs.FileMode  { return 0o600 }
func (i crashInfo) ModTime() time.Time { return time.Time{} }
func (i crashInfo) IsDir() bool        { return false }
func (i crashInfo) Sys() any           { return nil }

// crashDirFile is the directory opened as a file: its Sync makes its entries
// durable.
type crashDirFile struct{ fs *crashFS }

func (d *crashDirFile) Sync() error {
	f := d.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	f.change("sync " + filepath.Base(f.dir) + "/")
	f.dirSyncs++
	f.synced = maps.Clone(f.names)
	f.ops = nil
	return nil
}

var errIsDir = errors.New("is a directory")

func (d *crashDirFile) Write([]byte) (int, error)         { return 0, errIsDir }
func (d *crashDirFile) ReadAt([]byte, int64) (int, error) { return 0, errIsDir }
func (d *crashDirFile) Close() error                      { return nil }
func (d *crashDirFile) Truncate(int64) error              { return errIsDir }
func (d *crashDirFile) Stat() (fs.FileInfo, error)        { return nil, errIsDir }

// crashFile is an open file of a crashFS.
type crashFile struct {
	fs     *crashFS
	ino    *inode
	name   string
	flag   int
	pos    int64
	closed bool
}

func (c *crashFile) Write(p []byte) (int, error) {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.closed {
		return 0, os.ErrClosed
	}
	if c.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, &fs.PathError{Op: "write", Path: c.name, Err: errors.New("opened read-only")}
	}
	f.change("write " + c.name)
	if c.flag&os.O_APPEND != 0 {
		c.pos = int64(len(c.ino.data))
	}
	end := c.pos + int64(len(p))
	if end > int64(len(c.ino.data)) {
		if c.ino.maps > 0 {
			f.misuse = append(f.misuse, "grown by a write while mapped: "+c.name)
		}
		c.ino.data = append(c.ino.data, make([]byte, end-int64(len(c.ino.data)))...)
	}
	copy(c.ino.data[c.pos:], p)
	c.pos = end
	return len(p), nil
}

func (c *crashFile) ReadAt(p []byte, off int64) (int, error) {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.closed {
		return 0, os.ErrClosed
	}
	if off >= int64(len(c.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, c.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (c *crashFile) Sync() error {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.closed {
		return os.ErrClosed
	}
	f.change("sync " + c.name)
	f.fsyncs++
	c.ino.synced = slices.Clone(c.ino.data)
	return nil
}

func (c *crashFile) Truncate(size int64) error {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.closed {
		return os.ErrClosed
	}
	f.change("truncate " + c.name)
	if c.ino.maps > 0 && size != int64(len(c.ino.data)) {
		f.misuse = append(f.misuse, fmt.Sprintf("cut to %d while mapped: %s", size, c.name))
	}
	c.resize(size)
	return nil
}

// resize makes the file size bytes, zeros after what it held. f.mu is
// held.
func (c *crashFile) resize(size int64) {
	if size <= int64(len(c.ino.data)) {
		c.ino.data = c.ino.data[:size:size] // a later growth copies: no window aliases what it gets
		return
	}
	data := make([]byte, size)
	copy(data, c.ino.data)
	c.ino.data = data
}

func (c *crashFile) Stat() (fs.FileInfo, error) {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	return crashInfo{c.name, int64(len(c.ino.data))}, nil
}

func (c *crashFile) Close() error {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if c.closed {
		return os.ErrClosed
	}
	c.closed = true
	return nil
}

// crashMappedFile is a crashFile that the spool maps for appends.
type crashMappedFile struct{ *crashFile }

var _ mapper = crashMappedFile{}

func (c crashMappedFile) allocate(size int64) error {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if size <= int64(len(c.ino.data)) {
		return nil
	}
	f.change("fallocate " + c.name)
	if c.ino.maps > 0 {
		f.misuse = append(f.misuse, "grown while mapped: "+c.name)
	}
	c.resize(size)
	return nil
}

// mmap returns the page cache's own bytes: stores through it are in the
// file at once, as a MAP_SHARED mapping's are.
func (c crashMappedFile) mmap(off int64, n int) ([]byte, error) {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	if off%int64(os.Getpagesize()) != 0 || off+int64(n) > int64(len(c.ino.data)) {
		f.misuse = append(f.misuse, fmt.Sprintf("mapped %d bytes at %d of %d: %s", n, off, len(c.ino.data), c.name))
		return nil, errors.New("mapping past the end of the file")
	}
	c.ino.maps++
	return c.ino.data[off : off+int64(n) : off+int64(n)], nil
}

func (c crashMappedFile) munmap([]byte) error {
	f := c.fs
	f.mu.Lock()
	defer f.mu.Unlock()
	c.ino.maps--
	return nil
}
