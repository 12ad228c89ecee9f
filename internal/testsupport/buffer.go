package testsupport

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent use: the io.Writer a test
// hands to code that writes from goroutines of its own (a logger, a
// command's output, a child process's stderr) while the test reads what
// has been written so far. The zero value is an empty buffer ready to use.
type Buffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer. It never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns what has been written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
