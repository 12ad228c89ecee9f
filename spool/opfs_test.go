//go:build linux

package spool

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// opFS is the operating system's file system with every operation
// counted, on every file of the spool: FS calls (OpenFile, ReadDir,
// Remove, Rename), File calls (Write, Sync, Truncate, ReadAt, Stat,
// Close) and, through hook, the fallocate of a mapped segment. Operations
// numbered from failAt to failAt+burst-1 fail with err (a write writes
// half its bytes first when half is set). onOp, if set, runs before each
// operation is done (a crash there leaves the files as they are then).
// With mapped, segment files are handed out as the *os.File itself, so
// that the spool maps them: their writes, syncs and truncations are not
// seen, their fallocate is.
type opFS struct {
	osFS
	mapped bool

	mu     sync.Mutex
	n      int
	failAt int
	burst  int
	err    error
	half   bool
	ops    []string
	onOp   func(n int, op string)
	// match, if set, fails every operation it returns true for (its
	// description: "write 00000000000000000001.ack", say).
	match func(op string) bool
}

// op counts an operation and says whether it fails.
func (f *opFS) op(op, name string) error {
	f.mu.Lock()
	f.n++
	n := f.n
	desc := op + " " + filepath.Base(name)
	f.ops = append(f.ops, desc)
	fail := f.failAt > 0 && n >= f.failAt && n < f.failAt+f.burst
	if f.match != nil && f.match(desc) {
		fail = true
	}
	err, onOp := f.err, f.onOp
	f.mu.Unlock()
	if onOp != nil {
		onOp(n, desc)
	}
	if fail {
		return err
	}
	return nil
}

// heal stops the faults.
func (f *opFS) heal() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAt = 0
	f.onOp = nil
	f.match = nil
}

func (f *opFS) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

func (f *opFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := f.op("open", name); err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	file, err := f.osFS.OpenFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	if f.mapped && strings.HasSuffix(name, segExt) {
		return file, nil
	}
	return &opFile{File: file, fs: f, name: name}, nil
}

func (f *opFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if err := f.op("readdir", name); err != nil {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: err}
	}
	return f.osFS.ReadDir(name)
}

func (f *opFS) Remove(name string) error {
	if err := f.op("remove", name); err != nil {
		return &fs.PathError{Op: "remove", Path: name, Err: err}
	}
	return f.osFS.Remove(name)
}

func (f *opFS) Rename(from, to string) error {
	if err := f.op("rename", from); err != nil {
		return &os.LinkError{Op: "rename", Old: from, New: to, Err: err}
	}
	return f.osFS.Rename(from, to)
}

// allocate is the spool's allocate hook: fallocate, counted.
func (f *opFS) allocate(fd int, size int64) error {
	if err := f.op("fallocate", fmt.Sprint(fd)); err != nil {
		return err
	}
	return fallocate(fd, size)
}

type opFile struct {
	File
	fs   *opFS
	name string
}

func (f *opFile) Write(p []byte) (int, error) {
	if err := f.fs.op("write", f.name); err != nil {
		n := 0
		if f.fs.half && len(p) > 1 {
			n, _ = f.File.Write(p[:len(p)/2])
		}
		return n, &fs.PathError{Op: "write", Path: f.name, Err: err}
	}
	return f.File.Write(p)
}

func (f *opFile) Sync() error {
	if err := f.fs.op("sync", f.name); err != nil {
		return &fs.PathError{Op: "sync", Path: f.name, Err: err}
	}
	return f.File.Sync()
}

func (f *opFile) Truncate(size int64) error {
	if err := f.fs.op("truncate", f.name); err != nil {
		return &fs.PathError{Op: "truncate", Path: f.name, Err: err}
	}
	return f.File.Truncate(size)
}

func (f *opFile) ReadAt(p []byte, off int64) (int, error) {
	if err := f.fs.op("readat", f.name); err != nil {
		return 0, &fs.PathError{Op: "read", Path: f.name, Err: err}
	}
	return f.File.ReadAt(p, off)
}

func (f *opFile) Stat() (fs.FileInfo, error) {
	if err := f.fs.op("stat", f.name); err != nil {
		return nil, &fs.PathError{Op: "stat", Path: f.name, Err: err}
	}
	return f.File.Stat()
}

func (f *opFile) Close() error {
	err := f.fs.op("close", f.name)
	cerr := f.File.Close() // a failed close still releases the descriptor
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return cerr
}

// model is what the workload knows of the spool: which Appends were
// accepted, which records were handed, and which were acked.
type model struct {
	attempts  int
	accepted  []int        // attempt numbers whose Append returned nil, in order
	failed    map[int]bool // attempts whose Append returned an error other than ErrFull
	handed    []int        // records handed, in the order handed
	ids       map[int]ID
	unacked   []int        // handed, not yet acked
	ackedOK   map[int]bool // acked by an Ack that returned nil
	ackedErr  map[int]bool // acked by an Ack that returned an error
	inflight  []int        // the records of the call running now (Append, Ack)
	errs      []string     // the errors seen, for the failure message
	inProcess []string     // invariant breaches seen while running
	onStep    func()       // if set, runs after each step of the workload
}

func newModel() *model {
	return &model{failed: map[int]bool{}, ids: map[int]ID{}, ackedOK: map[int]bool{}, ackedErr: map[int]bool{}}
}

// clone copies what a check after a crash needs.
func (m *model) clone() *model {
	c := newModel()
	c.accepted = slices.Clone(m.accepted)
	c.inflight = slices.Clone(m.inflight)
	for k, v := range m.failed {
		c.failed[k] = v
	}
	for k, v := range m.ackedOK {
		c.ackedOK[k] = v
	}
	for k, v := range m.ackedErr {
		c.ackedErr[k] = v
	}
	return c
}

// workload runs a scripted mix of Appends (handed directly or left in
// the backlog), Loads and Acks (of handed records, in random subsets) on
// s, steps times, from seed.
func workload(t testing.TB, s *Spool, m *model, seed uint64, steps int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	hand := func(id ID, data []byte) {
		i := recNum(t, string(data))
		m.handed = append(m.handed, i)
		m.ids[i] = id
		m.unacked = append(m.unacked, i)
	}
	for range steps {
		if m.onStep != nil {
			m.onStep()
		}
		switch r := rng.IntN(10); {
		case r < 6:
			i := m.attempts
			m.attempts++
			data := rec(i)
			takeIt := len(m.unacked) < 6 && rng.IntN(2) == 0
			var direct ID
			took := false
			m.inflight = []int{i}
			id, err := s.Append(data, func(id ID) bool {
				if takeIt {
					direct, took = id, true
				}
				return takeIt
			})
			m.inflight = nil
			switch {
			case err == nil:
				m.accepted = append(m.accepted, i)
				if took {
					if direct != id {
						m.inProcess = append(m.inProcess, fmt.Sprintf("direct got %v, Append returned %v", direct, id))
					}
					hand(id, data)
				}
			case errors.Is(err, ErrFull):
			default:
				m.failed[i] = true
				m.errs = append(m.errs, err.Error())
			}
		case r < 8:
			k := rng.IntN(6)
			_, err := s.Load(func(id ID, data []byte, _ bool) bool {
				if k == 0 {
					return false
				}
				k--
				hand(id, data)
				return true
			}, nil)
			if err != nil {
				m.errs = append(m.errs, err.Error())
			}
		default:
			if len(m.unacked) == 0 {
				continue
			}
			rng.Shuffle(len(m.unacked), func(a, b int) { m.unacked[a], m.unacked[b] = m.unacked[b], m.unacked[a] })
			n := 1 + rng.IntN(len(m.unacked))
			batch := m.unacked[:n]
			var ids []ID
			for _, i := range batch {
				ids = append(ids, m.ids[i])
			}
			m.inflight = slices.Clone(batch)
			err := s.Ack(ids)
			m.inflight = nil
			for _, i := range batch {
				if err == nil {
					m.ackedOK[i] = true
				} else {
					m.ackedErr[i] = true
				}
			}
			if err != nil {
				m.errs = append(m.errs, err.Error())
			}
			m.unacked = slices.Clone(m.unacked[n:])
		}
	}
}

// checkRecovered checks what an Open of dir hands against m: every
// accepted record not acked comes back exactly once, in order; no record
// acked (by an Ack that returned nil) comes back; nothing else comes
// back but records whose fate was not settled (an Append or Ack running
// at the crash, an Ack that failed) and, reported as phantoms, records
// whose Append failed. Stats agree with the files and the records.
// It returns the breaches, empty when none.
func checkRecovered(t testing.TB, dir string, m *model) (breaches []string, phantoms []int) {
	s, err := Open(dir, Options{MaxBytes: 1 << 30})
	if err != nil {
		return []string{"Open: " + err.Error()}, nil
	}
	defer s.Close()
	st := s.Stats()
	var got []int
	_, err = s.Load(func(id ID, data []byte, recovered bool) bool {
		got = append(got, recNum(t, string(data)))
		return true
	}, nil)
	if err != nil {
		breaches = append(breaches, "Load: "+err.Error())
	}
	maybe := map[int]bool{}
	for _, i := range m.inflight {
		maybe[i] = true
	}
	for i := range m.ackedErr {
		maybe[i] = true
	}
	seen := map[int]bool{}
	for k, i := range got {
		switch {
		case seen[i]:
			breaches = append(breaches, fmt.Sprintf("record %d handed twice", i))
		case m.ackedOK[i] && !maybe[i]:
			breaches = append(breaches, fmt.Sprintf("record %d acked, and back", i))
		case m.failed[i]:
			phantoms = append(phantoms, i)
		}
		seen[i] = true
		if k > 0 && got[k-1] > i {
			breaches = append(breaches, fmt.Sprintf("record %d after %d: out of order", i, got[k-1]))
		}
	}
	for _, i := range m.accepted {
		if !seen[i] && !m.ackedOK[i] && !maybe[i] {
			breaches = append(breaches, fmt.Sprintf("accepted record %d lost", i))
		}
	}
	for _, i := range got {
		if !slices.Contains(m.accepted, i) && !m.failed[i] && !maybe[i] {
			breaches = append(breaches, fmt.Sprintf("record %d back, never accepted", i))
		}
	}
	if st.Records != int64(len(got)) || st.Recovered != int64(len(got)) {
		breaches = append(breaches, fmt.Sprintf("Stats.Records %d, Recovered %d, records handed %d", st.Records, st.Recovered, len(got)))
	}
	if st.Corrupt != 0 {
		breaches = append(breaches, fmt.Sprintf("Stats.Corrupt %d after clean faults", st.Corrupt))
	}
	if b := dirBytes(t, dir); s.Stats().Bytes != b {
		breaches = append(breaches, fmt.Sprintf("Stats.Bytes %d, files %d", s.Stats().Bytes, b))
	}
	return breaches, phantoms
}
