package consumer

import (
	"bytes"
	"compress/gzip"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Each payload compress returns is its own: the compressor's buffer it was
// written into serves the next body, whatever size, and neither changes a
// payload handed out before, which an attempt may still be sending.
func TestCompressPayloadsOutliveTheCompressor(t *testing.T) {
	ctx := []byte(`{"library":{"name":"analytics-go","version":"test"}}`)
	now := time.Now()
	var bodies []batchBody
	var payloads [][]byte
	for _, n := range []int{250, 1, 2500, 3, 250} {
		b := newBatchBody(events(n), envelope{context: ctx}, "", now)
		bodies = append(bodies, b)
		payloads = append(payloads, compress(b))
	}
	for i, p := range payloads {
		want, err := io.ReadAll(bodies[i].Reader())
		require.NoError(t, err)
		zr, err := gzip.NewReader(bytes.NewReader(p))
		require.NoError(t, err)
		got, err := io.ReadAll(zr)
		require.NoError(t, err)
		require.Equal(t, string(want), string(got), "payload %d", i)
	}
}
