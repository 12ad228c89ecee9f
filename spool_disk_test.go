//go:build linux

package analytics

import (
	"fmt"
	"io/fs"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/testsupport"
	"github.com/dualpath/analytics-go/spool"
)

// smallDiskFS is the operating system's file system on a small disk that
// only the spool's directory uses (testsupport.SmallDisk). Segment files
// are handed out as the *os.File itself, so that the spool maps them, as
// it does the operating system's, reserving their blocks through the
// disk's Allocate (promoted from SmallDisk).
type smallDiskFS struct {
	osSpoolFS
	*testsupport.SmallDisk
}

func (d *smallDiskFS) OpenFile(name string, flag int, perm fs.FileMode) (spool.File, error) {
	return d.open(name, flag, perm, func(f *os.File) spool.File {
		if strings.HasSuffix(name, ".seg") {
			return f
		}
		return &smallDiskFile{File: f, disk: d.SmallDisk}
	})
}

type smallDiskFile struct {
	*os.File
	disk *testsupport.SmallDisk
}

// Write appends what fits.
func (f *smallDiskFile) Write(p []byte) (int, error) { return f.disk.Write(f.File, f.Name(), p) }

// The spool on a nearly full disk (400 KiB free; 100 KiB with
// WithSpoolMaxBytes of 1 MiB, whose segments are 64 KiB) and a healthy
// API: every Enqueue succeeds, through several times what the disk holds,
// and every event is delivered once. The disk refuses the spool's first
// choice of reserve, 16 MiB (64 KiB): the spool makes do with less.
func TestSpoolNearlyFullDisk(t *testing.T) {
	for _, tt := range []struct {
		name string
		free int64
		opts []Option
	}{
		{"defaults", 400 << 10, nil},
		{"1MiB bound", 100 << 10, []Option{WithSpoolMaxBytes(1 << 20)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			disk := &smallDiskFS{SmallDisk: testsupport.NewSmallDisk(dir, tt.free)}
			opts := append([]Option{WithSpool(dir), func(c *config) { c.spool.FS = disk }}, tt.opts...)
			e := newEnv(t, newAPI(), opts...)
			pad := strings.Repeat("p", 100) // about 300 bytes an event, as written
			msgs := make([]Message, 3000)
			for i := range msgs {
				msgs[i] = Track{MessageId: fmt.Sprintf("d-%d", i), UserId: "u", Event: "E", Properties: Properties{"pad": pad}}
				require.NoError(t, e.client.Enqueue(msgs[i]), "Enqueue %d", i)
				if i%100 == 99 {
					e.flush() // the API keeps up: a hundred events at most not delivered
				}
			}
			e.flush()
			assert.Positive(t, disk.Refusals(), "the disk refused a reserve: the test is of a nearly full disk")
			e.close()
			e.assertDeliveredOnce(msgs)
			st := e.client.Stats()
			assert.Zero(t, st.Rejected.Spool)
			assert.Zero(t, st.Spool.Left)
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, left, "every event delivered: no file left")
		})
	}
}
