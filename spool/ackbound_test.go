package spool

import (
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Acks in the worst order for the .ack files (every other record, one
// Ack each, shuffled: a run per record) keep the files within MaxBytes
// after every call, on both paths: the .ack files are compacted, and an
// Ack that cannot fit even so fails with ErrFull and is written later.
// Records acked by an Ack that returned nil do not come back; records
// never acked do.
func TestAckFilesWithinMaxBytesAlways(t *testing.T) {
	for _, o := range []Options{
		{Sync: 1e9, MaxBytes: 32 << 10, SegmentBytes: 4 << 10},
		{Sync: 1e9, MaxBytes: 32 << 10, SegmentBytes: 4 << 10, FS: newFaultFS()},
	} {
		name := "mapped"
		if o.FS != nil {
			name = "written"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s, err := Open(dir, o)
			require.NoError(t, err)
			all := fill(t, s, []byte("x"))
			var half []ID
			for i, id := range all {
				if i%2 == 0 {
					half = append(half, id)
				}
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(half), func(i, j int) { half[i], half[j] = half[j], half[i] })
			acked := map[ID]bool{}
			full := 0
			for _, id := range half {
				err := s.Ack([]ID{id})
				switch {
				case err == nil:
					acked[id] = true
				case errors.Is(err, ErrFull):
					full++
				default:
					require.NoError(t, err)
				}
				st := s.Stats()
				require.LessOrEqual(t, st.Bytes, o.MaxBytes)
				require.Equal(t, dirBytes(t, dir), st.Bytes)
			}
			t.Logf("%d records, %d acked one by one, %d Acks refused for room", len(all), len(half), full)
			if err := s.Close(); err != nil {
				require.ErrorIs(t, err, ErrFull, "the acks refused still do not fit")
			}

			s = openT(t, dir, Options{})
			back := map[ID]bool{}
			for _, g := range loadAll(t, s) {
				assert.False(t, acked[g.ID], "%v acked, and back", g.ID)
				back[g.ID] = true
			}
			tried := map[ID]bool{}
			for _, id := range half {
				tried[id] = true
			}
			for _, id := range all {
				if !tried[id] { // an Ack refused may be written later, or not
					assert.True(t, back[id], "%v not acked, lost", id)
				}
			}
		})
	}
}

// The bound covers the spool's files, acknowledgement files included
// (Stats.Bytes counts them; SPEC §11.5: "the spool's files are at most
// SpoolMaxBytes"). Acks one at a time of small records (batches that end
// out of order do this) grow the .ack files past the bound: Ack never
// checks it, and the runs are never compacted while the segment lives.
func TestAckFilesWithinMaxBytes(t *testing.T) {
	for _, o := range []Options{
		{Sync: 1e9, MaxBytes: 64 << 10, SegmentBytes: 8 << 10},                   // mapped on Linux
		{Sync: 1e9, MaxBytes: 64 << 10, SegmentBytes: 8 << 10, FS: newFaultFS()}, // written
	} {
		name := "mapped"
		if o.FS != nil {
			name = "written"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			s := openT(t, dir, o)
			all := fill(t, s, []byte("x"))
			// Ack every record but the last of each segment, one by one:
			// no segment is finished, so none is removed.
			for i, id := range all {
				if i+1 < len(all) && all[i+1].Seg != id.Seg || i+1 == len(all) {
					continue
				}
				require.NoError(t, s.Ack([]ID{id}))
			}
			st := s.Stats()
			assert.Equal(t, dirBytes(t, dir), st.Bytes)
			assert.LessOrEqual(t, st.Bytes, o.MaxBytes, "the spool's files over MaxBytes: %d > %d", st.Bytes, o.MaxBytes)
		})
	}
}
