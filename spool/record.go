package spool

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
)

// The format, version 2 (docs/spool.md, "How it is stored").
//
// A segment, NNNNNNNNNNNNNNNNNNNN.seg (its number in 20 decimal digits), is
// a header, segMagic and the version as a little-endian uint32, then
// records: [length uint32 LE][CRC-32C of the payload uint32 LE][payload].
// The acknowledgement file, DONE, is doneMagic and the version, then
// records framed the same way whose payloads are uvarint triples
// (segment, first ordinal, count): runs of records that are done.
// (Version 1 had an acknowledgement file per segment.)
const (
	segMagic   = "AGSPOOL\n"
	doneMagic  = "AGSPDON\n"
	headerSize = len(segMagic) + 4
	frameSize  = 8 // length and checksum ahead of each payload
	// maxRecord bounds a payload. Events are at most 32 KB; a length
	// field above this is damage, not a record. A length of 0 is damage
	// too: a stretch of zeros (what some file systems show after a crash)
	// would otherwise read as empty records with a valid checksum.
	maxRecord = 1 << 20
	// maxAckPayload is where a done record is cut, so that however many
	// runs one Ack writes, each record stays far below maxRecord.
	maxAckPayload = 64 << 10
)

// castagnoli is the CRC-32C table; built once, read only.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errInUse is the lock's answer when another holder has the directory.
var errInUse = errors.New("in use by another client")

// appendHeader appends a file header with magic and Version.
func appendHeader(b []byte, magic string) []byte {
	b = append(b, magic...)
	return binary.LittleEndian.AppendUint32(b, Version)
}

// appendFrame appends payload framed as a record.
func appendFrame(b []byte, payload []byte) []byte {
	b = binary.LittleEndian.AppendUint32(b, uint32(len(payload)))
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(payload, castagnoli))
	return append(b, payload...)
}

// frameHead reads a record's length and checksum from its first frameSize
// bytes.
func frameHead(b []byte) (length, sum uint32) {
	return binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:])
}

// framable reports whether a length field can be a record's.
func framable(length uint32) bool { return length > 0 && length <= maxRecord }

// File names: the number, 20 digits (a uint64 in full), and a suffix.
const (
	numDigits  = 20
	segExt     = ".seg"
	corruptExt = ".corrupt"
	doneName   = "DONE"
	lockName   = "LOCK"
)

func fileName(num uint64, ext string) string {
	return fmt.Sprintf("%0*d%s", numDigits, num, ext)
}

// parseName splits a file name of the spool into its number and what
// follows it; ok is false for a name that is not one.
func parseName(name string) (num uint64, ext string, ok bool) {
	if len(name) < numDigits {
		return 0, "", false
	}
	num, err := strconv.ParseUint(name[:numDigits], 10, 64) // digits only: no sign, no underscore in base 10
	if err != nil {
		return 0, "", false
	}
	return num, name[numDigits:], true
}

func (s *Spool) segPath(num uint64) string { return filepath.Join(s.dir, fileName(num, segExt)) }
func (s *Spool) donePath() string          { return filepath.Join(s.dir, doneName) }

// ioErr is a file system error as the spool returns it: the operation and
// the file, and the cause for errors.Is (syscall.ENOSPC, say; SPEC §11.9). A
// *fs.PathError's own op and path are dropped, so the path is not said
// twice. A nil err stays nil.
func ioErr(op, path string, err error) error {
	if err == nil {
		return nil
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("spool: %s %s: %w", op, path, err)
}

// writeAll writes b to f in one write; a short write is an error.
func writeAll(f File, b []byte) (int, error) {
	n, err := f.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	return n, err
}
