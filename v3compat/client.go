package analytics

import (
	"context"
	"io"
	"sync/atomic"

	root "github.com/dualpath/analytics-go"
)

// Client is v3's client interface: Enqueue, and Close (io.Closer). New and
// NewWithConfig return one; a test double implements it with those two
// methods.
type Client interface {
	io.Closer

	// Enqueue queues msg to be sent in a batch. It waits while the queue
	// is full. It returns a FieldError for a message that misses a
	// required field, an error matching ErrMessageTooBig for one too
	// large, an error matching the root's ErrInvalidMessage for one that
	// holds a value JSON cannot, and ErrClosed after Close.
	Enqueue(msg Message) error
}

// New returns a client with the default Config that sends to the tracking
// API with writeKey. With an empty writeKey, which NewWithConfig refuses,
// it logs the ConfigError to standard error and returns a client whose
// Enqueue returns it.
func New(writeKey string) Client {
	c, err := NewWithConfig(writeKey, Config{})
	if err != nil {
		defaultLogger().Errorf("%v; every Enqueue will return this error", err)
		return &client{err: err}
	}
	return c
}

// NewWithConfig returns a client that sends to the tracking API with
// writeKey, configured by config. For a Config it cannot use, or an empty
// writeKey, it returns a nil Client and a ConfigError naming the field.
func NewWithConfig(writeKey string, config Config) (Client, error) {
	opts, logger := config.rootOptions()
	rc, err := root.New(writeKey, opts...)
	if err != nil {
		return nil, config.configError(err)
	}
	c := &client{root: rc, verbose: verboseLogger(config, logger)}
	if config.DefaultContext != nil {
		def := *config.DefaultContext
		def.Library = LibraryInfo{} // v3 sent its own on the batch, whatever this said
		c.defaultContext = &def
	}
	return c, nil
}

// client is a Client over the root package's.
type client struct {
	root           *root.Client
	err            error    // New's error when root is nil: Enqueue returns it
	defaultContext *Context // a copy of Config.DefaultContext, or nil
	verbose        *verbose // logs each queued message, or nil: see Config.Verbose
	closed         atomic.Bool
}

// Enqueue validates msg, merges the default context into it, and queues it
// with the root's EnqueueContext, waiting for room as long as it takes.
func (c *client) Enqueue(msg Message) error {
	m, err := message(msg)
	if err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed
	}
	if c.err != nil {
		return c.err
	}
	if c.defaultContext != nil {
		m = withContext(m, mergeContext(contextOf(m), c.defaultContext))
	}
	if err := c.root.EnqueueContext(context.Background(), m); err != nil {
		return err
	}
	c.verbose.queued(c.root, m)
	return nil
}

// Close sends what is queued and waits for every message's outcome, as the
// root's Close does; then no goroutine of the client is left. A second call
// returns ErrClosed at once, as in v3.
func (c *client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return ErrClosed
	}
	if c.root == nil {
		return nil
	}
	return c.root.Close()
}
