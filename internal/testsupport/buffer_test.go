package testsupport

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Writers on several goroutines and a reader at the same time: every
// write arrives whole, and (under -race) none races with another or with
// String.
func TestBufferTakesConcurrentWrites(t *testing.T) {
	const writers, lines = 4, 200
	var b Buffer
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			line := strings.Repeat(string(rune('a'+w)), 16) + "\n"
			for range lines {
				_, _ = b.Write([]byte(line))
			}
		})
	}
	wg.Go(func() {
		for range lines {
			_ = b.String()
		}
	})
	wg.Wait()
	got := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	assert.Len(t, got, writers*lines, "lines written")
	for _, line := range got {
		assert.Len(t, line, 16, "a line cut by another write: %q", line)
		assert.Equal(t, strings.Repeat(line[:1], 16), line, "a line mixed with another")
	}
}
