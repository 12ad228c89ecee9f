package spool

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// seedSegments are real segment files for the fuzzers' corpus: whole, cut
// short, a byte flipped, a bad length, another magic or version.
func seedSegments() [][]byte {
	whole := appendHeader(nil, segMagic)
	for i := range 5 {
		whole = appendFrame(whole, event(i))
	}
	flipped := append([]byte(nil), whole...)
	flipped[headerSize+frameSize+40] ^= 4
	badLength := append([]byte(nil), whole...)
	binary.LittleEndian.PutUint32(badLength[headerSize:], maxRecord+1)
	version := append([]byte(nil), whole...)
	version[len(segMagic)] = 2
	tornVersion := append([]byte(nil), whole...)
	clear(tornVersion[len(segMagic):headerSize])
	magic := append([]byte("NOTSPOOL"), whole[len(segMagic):]...)
	// What a crash leaves of a mapped segment (mmap_linux.go): records,
	// then the rest of its reserve, zeros; maybe after the head of a
	// record and part of its payload, or after the last record's head.
	reserve := append(bytes.Clone(whole), make([]byte, 600)...)
	next := appendFrame(nil, event(5))
	torn := bytes.Clone(reserve)
	copy(torn[len(whole):], next[:len(next)/2])
	headOnly := bytes.Clone(reserve)
	copy(headOnly[len(whole):], next[:frameSize])
	zerosThenBytes := bytes.Clone(reserve)
	zerosThenBytes[len(zerosThenBytes)-3] = 7
	// The last record torn in a reserve it fills: no zero after it.
	tornFilling := bytes.Clone(whole)
	clear(tornFilling[len(tornFilling)-10:])
	return [][]byte{whole, whole[:len(whole)-7], whole[:headerSize+3], whole[:5], flipped, badLength, version, tornVersion, magic, appendHeader(nil, segMagic), make([]byte, 600),
		reserve, torn, headOnly, zerosThenBytes, tornFilling, append(appendHeader(nil, segMagic), make([]byte, 100)...)}
}

// reference frames a segment file the way the format says, simply: the
// payloads of its whole records with a valid checksum, in order, until a
// record cut short, a length that cannot be one, or zeros to the end of
// the file (a crash's reserve, mmap_linux.go), which may follow one record
// whose checksum fails (torn, not damaged), or such a record last in the
// file, its payload ending in a zero (torn, filling its reserve). It
// returns too the damage
// Open counts (a damaged header, set aside, counts one), and the file's size
// once Open has cut a torn tail; ok is false for a file of a newer version
// (Open must fail).
func reference(b []byte) (payloads []string, corrupt int64, size int, ok bool) {
	if len(b) < headerSize {
		return nil, 0, 0, true
	}
	zeros := func(p []byte) bool { return !slices.ContainsFunc(p, func(c byte) bool { return c != 0 }) }
	magic, version := string(b[:len(segMagic)]) == segMagic, binary.LittleEndian.Uint32(b[len(segMagic):])
	switch {
	case magic && version > Version:
		return nil, 0, len(b), false
	case magic && version == Version:
	case zeros(b): // nothing written: removed
		return nil, 0, 0, true
	default: // a damaged header: set aside
		return nil, 1, len(b), true
	}
	off := headerSize
	for len(b)-off >= frameSize {
		p := b[off:]
		length, sum := binary.LittleEndian.Uint32(p), binary.LittleEndian.Uint32(p[4:])
		if length == 0 && zeros(p) {
			return payloads, corrupt, off, true
		}
		if length == 0 || length > maxRecord {
			return payloads, corrupt + 1, len(b), true
		}
		if uint64(len(p)-frameSize) < uint64(length) {
			return payloads, corrupt, off, true
		}
		payload, rest := p[frameSize:frameSize+length], p[frameSize+length:]
		switch {
		case crc32.Checksum(payload, castagnoli) == sum:
			payloads = append(payloads, string(payload))
		case len(rest) > 0 && zeros(rest):
			return payloads, corrupt, off, true
		case len(rest) == 0 && payload[length-1] == 0: // torn in a reserve it fills
			return payloads, corrupt, off, true
		default:
			corrupt++
		}
		off += frameSize + int(length)
	}
	return payloads, corrupt, off, true
}

// FuzzOpenSegment opens a directory holding one segment of any bytes:
// Open and Load never panic, Open fails only for a newer version, and
// what Load hands is exactly the whole records with a valid checksum, each
// within bounds, with the damage counted as the reference counts it and a
// torn tail (or a reserve's zeros) cut; a second Open hands them again.
func FuzzOpenSegment(f *testing.F) {
	for _, seed := range seedSegments() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, fileName(1, segExt))
		require.NoError(t, os.WriteFile(path, b, 0o600))
		want, corrupt, size, ok := reference(b)
		for round := range 2 {
			s, err := Open(dir, Options{MaxBytes: 1 << 30})
			if !ok {
				require.Error(t, err)
				return
			}
			require.NoError(t, err)
			if round == 0 {
				assert.Equal(t, corrupt, s.Stats().Corrupt)
				if st, err := os.Stat(path); err == nil { // not removed or set aside
					assert.EqualValues(t, size, st.Size())
				}
			}
			var handed []string
			_, err = s.Load(func(id ID, data []byte, recovered bool) bool {
				assert.True(t, len(data) > 0 && len(data) <= maxRecord)
				assert.True(t, recovered)
				handed = append(handed, string(data))
				return true
			}, nil)
			require.NoError(t, err)
			assert.Equal(t, want, handed)
			st := s.Stats()
			assert.EqualValues(t, len(want), st.Recovered)
			assert.EqualValues(t, len(want), st.Records)
			require.NoError(t, s.Close())
		}
	})
}

// FuzzOpenDone opens a directory holding a valid segment of five records
// and a DONE of any bytes: no panic, and what Load hands is some of
// the five, in order, the same after a second Open.
func FuzzOpenDone(f *testing.F) {
	seg := seedSegments()[0]
	ack := func(runs ...uint64) []byte {
		var p []byte
		for _, r := range runs {
			p = binary.AppendUvarint(p, r)
		}
		return appendFrame(appendHeader(nil, doneMagic), p)
	}
	valid := ack(1, 0, 2, 1, 3, 1)
	f.Add(valid)
	f.Add(valid[:len(valid)-1])
	f.Add(append(append([]byte(nil), valid...), valid[headerSize:]...))
	f.Add(ack(1, 1<<40, 5, 1, 0, 1<<63, 1<<63, 0, 1))
	f.Add(append(appendHeader(nil, doneMagic), 0xff, 0xff, 0xff, 0xff))
	f.Add(appendHeader(nil, segMagic))
	f.Add([]byte("AGSPDON\n\x03\x00\x00\x00"))
	f.Add([]byte("AGSPDON\n\x00\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, fileName(1, segExt)), seg, 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(dir, doneName), b, 0o600))
		var magic bool
		var version uint32
		if len(b) >= headerSize {
			magic, version = string(b[:len(doneMagic)]) == doneMagic, binary.LittleEndian.Uint32(b[len(doneMagic):])
		}
		var first []ID
		for round := range 2 {
			s, err := Open(dir, Options{MaxBytes: 1 << 30})
			if err != nil {
				require.True(t, magic && version > Version, "Open refused a DONE of version %d: %v", version, err)
				return // a newer version: refused, and nothing to check
			}
			var got []ID
			_, err = s.Load(func(id ID, data []byte, _ bool) bool {
				assert.Less(t, id.N, uint32(5))
				assert.Equal(t, string(event(int(id.N))), string(data))
				got = append(got, id)
				return true
			}, nil)
			require.NoError(t, err)
			for i := 1; i < len(got); i++ {
				assert.Less(t, got[i-1].N, got[i].N)
			}
			assert.EqualValues(t, len(got), s.Stats().Records)
			if round == 0 && len(b) >= headerSize && version != Version {
				assert.Len(t, got, 5, "a DONE with a damaged header is set aside: every record comes again")
			}
			if round == 0 {
				first = got
			} else {
				assert.Equal(t, first, got)
			}
			require.NoError(t, s.Close())
		}
	})
}
