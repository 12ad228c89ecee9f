package spool

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// openOrNamed opens dir: it must not panic, and if it fails, its error
// names want (the path at fault).
func openOrNamed(t *testing.T, dir, want string) (*Spool, error) {
	t.Helper()
	var s *Spool
	var err error
	require.NotPanics(t, func() { s, err = Open(dir, Options{MaxBytes: 1 << 30}) })
	if err != nil {
		assert.Contains(t, err.Error(), want, "the error names the culprit")
		return nil, err
	}
	t.Cleanup(func() { s.Close() })
	return s, nil
}

// Directories hold things the spool did not write. Nothing panics; what
// Open cannot get past, it names; otherwise the spool's records come
// back and its Stats agree with the files.
func TestHostileDirectory(t *testing.T) {
	t.Run("a directory named like a segment", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(segFile(dir, 1), 0o700))
		writeSegment(t, dir, 2, event(0))
		// The spool opens its files for writing, which a directory
		// refuses (EISDIR): Open fails, and names it.
		_, err := openOrNamed(t, dir, fileName(1, segExt))
		require.Error(t, err, "Open of a directory whose name is a segment's")
	})
	t.Run("a directory named DONE", func(t *testing.T) {
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0))
		require.NoError(t, os.Mkdir(filepath.Join(dir, doneName), 0o700))
		_, err := openOrNamed(t, dir, doneName)
		require.Error(t, err, "Open of a directory whose name is DONE")
	})
	t.Run("a directory named like DONE's rewrite", func(t *testing.T) {
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0))
		tmp := filepath.Join(dir, doneName+".tmp")
		require.NoError(t, os.MkdirAll(filepath.Join(tmp, "x"), 0o700))
		s, _ := openOrNamed(t, dir, tmp)
		require.NotNil(t, s, "a stray it cannot remove is only logged")
		assert.Equal(t, events(0, 1), datas(loadAll(t, s)))
	})
	t.Run("LOCK is a directory", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.Mkdir(filepath.Join(dir, lockName), 0o700))
		_, err := openOrNamed(t, dir, dir)
		require.Error(t, err)
	})
	t.Run("a symlink to a segment elsewhere", func(t *testing.T) {
		dir, elsewhere := t.TempDir(), t.TempDir()
		writeSegment(t, elsewhere, 7, event(0), event(1))
		require.NoError(t, os.Symlink(segFile(elsewhere, 7), segFile(dir, 1)))
		s, _ := openOrNamed(t, dir, "")
		require.NotNil(t, s)
		g := loadAll(t, s)
		assert.Equal(t, events(0, 2), datas(g))
		require.NoError(t, s.Ack(ids(g)))
		_, err := os.Stat(segFile(elsewhere, 7))
		assert.NoError(t, err, "the link goes, not what it points to")
	})
	t.Run("zero-length and header-only files", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(segFile(dir, 1), nil, 0o600))
		writeSegment(t, dir, 2)           // a header, no record
		writeSegment(t, dir, 3, event(0)) // a record
		require.NoError(t, os.WriteFile(filepath.Join(dir, doneName), nil, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, doneName+".tmp"), []byte("junk"), 0o600))
		s, _ := openOrNamed(t, dir, "")
		require.NotNil(t, s)
		assert.EqualValues(t, 1, s.Stats().Records)
		assert.Equal(t, events(0, 1), datas(loadAll(t, s)))
		assert.Equal(t, []string{fileName(3, segExt), lockName}, files(t, dir))
		assert.Equal(t, dirBytes(t, dir), s.Stats().Bytes)
		// Acks work with the empty DONE removed.
		require.NoError(t, s.Ack([]ID{{Seg: 3, N: 0}}))
		assert.Equal(t, []string{lockName}, files(t, dir))
	})
	t.Run("numbers with gaps and names not ours", func(t *testing.T) {
		dir := t.TempDir()
		writeSegment(t, dir, 5, event(0))
		writeSegment(t, dir, 1, event(1)) // older, by number
		writeSegment(t, dir, 1000, event(2))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "99999999999999999999.seg"), []byte("over uint64"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "0000000000000000001.seg"), []byte("19 digits"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "README"), []byte("hi"), 0o600))
		s, _ := openOrNamed(t, dir, "")
		require.NotNil(t, s)
		g := loadAll(t, s)
		assert.Equal(t, []string{string(event(1)), string(event(0)), string(event(2))}, datas(g), "by segment number")
		id, err := s.Append(event(3), take)
		require.NoError(t, err)
		assert.EqualValues(t, 1001, id.Seg)
		assert.Equal(t, dirBytes(t, dir)-int64(len("over uint64")+len("19 digits")), s.Stats().Bytes, "the files not the spool's are not counted")
	})
	t.Run("ack runs huge, duplicate, overlapping, empty", func(t *testing.T) {
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0), event(1), event(2), event(3), event(4), event(5))
		var p []byte
		for _, r := range [][2]uint64{{1, 2}, {1, 2}, {2, 1}, {4, 0}, {1 << 40, 1 << 62}, {1<<32 + 5, 1}, {5, 1 << 63}} {
			p = binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(p, 1), r[0]), r[1])
		}
		ack := appendFrame(appendHeader(nil, doneMagic), p)
		ack = appendFrame(ack, p) // again
		require.NoError(t, os.WriteFile(filepath.Join(dir, doneName), ack, 0o600))
		s, _ := openOrNamed(t, dir, "")
		require.NotNil(t, s)
		st := s.Stats()
		assert.EqualValues(t, 3, st.Records, "0, 3, 4 not done")
		assert.Zero(t, st.Corrupt)
		g := loadAll(t, s)
		assert.Equal(t, []string{string(event(0)), string(event(3)), string(event(4))}, datas(g))
		require.NoError(t, s.Ack(ids(g)))
		require.NoError(t, s.Close())
		assert.Equal(t, []string{lockName}, files(t, dir))
	})
	t.Run("DONE of a future version", func(t *testing.T) {
		dir := t.TempDir()
		writeSegment(t, dir, 1, event(0))
		b := appendFrame(appendHeader(nil, doneMagic), binary.AppendUvarint(binary.AppendUvarint(binary.AppendUvarint(nil, 1), 0), 1))
		binary.LittleEndian.PutUint32(b[len(doneMagic):], Version+1)
		require.NoError(t, os.WriteFile(filepath.Join(dir, doneName), b, 0o600))
		_, err := Open(dir, Options{})
		require.Error(t, err)
		assert.Contains(t, err.Error(), filepath.Join(dir, doneName))
		assert.Contains(t, err.Error(), fmt.Sprintf("version %d", Version+1))
	})
}

// Many segments, a record each: Open reads them all in order, and they
// go, acked in reverse order, one at a time.
func TestManySegments(t *testing.T) {
	dir := t.TempDir()
	const n = 3000
	for i := range n {
		writeSegment(t, dir, uint64(i+1), event(i))
	}
	// Sync an hour: with Sync 0, each Ack that removes a segment syncs the
	// directory before it returns, which is not what this test is about.
	s := openT(t, dir, Options{Sync: time.Hour})
	assert.EqualValues(t, n, s.Stats().Records)
	g := loadAll(t, s)
	require.Len(t, g, n)
	assert.Equal(t, events(0, n), datas(g))
	for i := n - 1; i >= 0; i-- {
		require.NoError(t, s.Ack([]ID{g[i].ID}))
	}
	assert.Zero(t, s.Stats().Records)
	assert.Equal(t, []string{lockName}, files(t, dir))
	assert.Zero(t, s.Stats().Bytes)
}

// unreadableFS refuses to open one file, as the operating system refuses
// a file of mode 000 to anyone but root (the tests may run as root).
type unreadableFS struct {
	FS
	path string
}

func (u unreadableFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if name == u.path {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return u.FS.OpenFile(name, flag, perm)
}

// A segment that cannot be read makes Open fail, naming the file and
// matching the cause, rather than go on without its records.
func TestUnreadableSegment(t *testing.T) {
	dir := t.TempDir()
	writeSegment(t, dir, 1, event(0))
	var err error
	require.NotPanics(t, func() {
		_, err = Open(dir, Options{MaxBytes: 1 << 30, FS: unreadableFS{FS: osFS{}, path: segFile(dir, 1)}})
	})
	require.Error(t, err, "Open with an unreadable segment")
	assert.Contains(t, err.Error(), segFile(dir, 1), "the error names the file")
	assert.ErrorIs(t, err, fs.ErrPermission, "the error wraps the cause")
	s, err := Open(dir, Options{MaxBytes: 1 << 30}) // the lock was given back
	require.NoError(t, err, "Open once the segment is readable")
	assert.Equal(t, []string{string(event(0))}, datas(loadAll(t, s)))
	require.NoError(t, s.Close())
}

// The bytes of a closed spool are the documented format, field by field,
// computed here without the package's encoders: the segment's header
// "AGSPOOL\n" and version 2 LE, then [len LE][CRC-32C LE][payload];
// DONE's header "AGSPDON\n" and version 2, then records of uvarint
// (segment, first, count) triples.
func TestBytesOnDisk(t *testing.T) {
	for _, mapped := range []bool{true, false} {
		t.Run(fmt.Sprint("mapped=", mapped), func(t *testing.T) {
			dir := t.TempDir()
			o := Options{Sync: 1e9}
			if !mapped {
				o.FS = newFaultFS()
			}
			s := openT(t, dir, o)
			recs := [][]byte{[]byte("a"), []byte(`{"x":1}`), []byte(strings.Repeat("z", 300)), []byte("q"), []byte("r"), []byte("s")}
			var all []ID
			for _, r := range recs {
				id, err := s.Append(r, take)
				require.NoError(t, err)
				all = append(all, id)
			}
			require.NoError(t, s.Ack([]ID{all[2], all[0], all[1]})) // one run, 0..2
			require.NoError(t, s.Ack([]ID{all[5]}))
			require.NoError(t, s.Close())

			tab := crc32.MakeTable(crc32.Castagnoli)
			le := binary.LittleEndian
			want := []byte("AGSPOOL\n\x02\x00\x00\x00")
			for _, r := range recs {
				want = le.AppendUint32(want, uint32(len(r)))
				want = le.AppendUint32(want, crc32.Checksum(r, tab))
				want = append(want, r...)
			}
			got, err := os.ReadFile(filepath.Join(dir, "00000000000000000001.seg"))
			require.NoError(t, err)
			assert.Equal(t, want, got)

			wantAck := []byte("AGSPDON\n\x02\x00\x00\x00")
			// The first written whole: the last segment number used (a run
			// of none), then the runs; then one record per Ack.
			for _, p := range [][]byte{{1, 0, 0, 1, 0, 3}, {1, 5, 1}} {
				wantAck = le.AppendUint32(wantAck, uint32(len(p)))
				wantAck = le.AppendUint32(wantAck, crc32.Checksum(p, tab))
				wantAck = append(wantAck, p...)
			}
			got, err = os.ReadFile(filepath.Join(dir, "DONE"))
			require.NoError(t, err)
			assert.Equal(t, wantAck, got)
			for _, name := range []string{"00000000000000000001.seg", "DONE", lockName} {
				st, err := os.Stat(filepath.Join(dir, name))
				require.NoError(t, err)
				assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), name)
			}

			s = openT(t, dir, Options{})
			assert.Equal(t, []string{"q", "r"}, datas(loadAll(t, s)))
		})
	}
}

// One Ack of tens of thousands of scattered records: its runs take more
// than one done record (maxAckPayload), and a reopen reads them all.
func TestAckManyRuns(t *testing.T) {
	dir := t.TempDir()
	s := openT(t, dir, Options{Sync: 1e9, SegmentBytes: 16 << 20})
	var all []ID
	for i := range 60000 {
		id, err := s.Append([]byte{byte(i)}, take)
		require.NoError(t, err)
		all = append(all, id)
	}
	var even []ID
	for i := 0; i < len(all); i += 2 {
		even = append(even, all[i])
	}
	require.NoError(t, s.Ack(even))
	st, err := os.Stat(filepath.Join(dir, doneName))
	require.NoError(t, err)
	require.Greater(t, st.Size(), int64(maxAckPayload), "more than one ack record")
	require.NoError(t, s.Close())
	s = openT(t, dir, Options{})
	assert.EqualValues(t, len(all)/2, s.Stats().Records)
	assert.Zero(t, s.Stats().Corrupt)
	g := loadAll(t, s)
	require.Len(t, g, len(all)/2)
	for k, r := range g {
		assert.Equal(t, all[2*k+1], r.ID)
	}
}
