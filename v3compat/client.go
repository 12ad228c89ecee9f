package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/defaults"
)

// Client is v3's client interface: Enqueue, and Close (io.Closer). New and
// NewWithConfig return one; a test double implements it with those two
// methods.
type Client interface {
	io.Closer

	// Enqueue queues msg to be sent in a batch. It waits while the queue
	// is full. As v3's, it returns a FieldError for a message that misses
	// a required field, an error for a message type it does not know, and
	// ErrClosed after Close; a message it cannot send (its JSON over
	// 32,000 bytes, a value JSON cannot hold, in it or in
	// Config.DefaultContext) is accepted, and Callback.Failure gets
	// ErrMessageTooBig or the encoding/json error.
	Enqueue(msg Message) error
}

// New returns a client with the default Config that sends to the tracking
// API with writeKey. An empty writeKey gives a client whose events fail
// with ErrEmptyWriteKey, as NewWithConfig says.
func New(writeKey string) Client {
	c, err := NewWithConfig(writeKey, Config{})
	if err != nil {
		// The zero Config is valid: this is a bug of ours. v3's New never
		// returned nil; neither does this one.
		defaultLogger().Errorf("%v; every event will fail", err)
		return &client{unsent: err, logger: defaultLogger(), done: make(chan struct{})}
	}
	return c
}

// NewWithConfig returns a client that sends to the tracking API with
// writeKey, configured by config. It returns an error, and a nil Client,
// only where v3 did: a negative Interval or BatchSize. Every other Config
// gives a working client, as in v3: with an empty writeKey, every event
// fails with ErrEmptyWriteKey; with an Endpoint the client cannot send to
// (not a URL, not http or https, no host, a query), every event fails
// with the *url.Error v3 got sending to it. NewWithConfig logs either
// once, and such a client sends nothing.
func NewWithConfig(writeKey string, config Config) (Client, error) {
	opts, logger := config.rootOptions()
	emptyKey := writeKey == ""
	if emptyKey {
		// The root refuses an empty key first: find what else it refuses.
		writeKey = "unused"
	}
	rc, err := root.New(writeKey, opts...)
	var unsent error
	var oe *root.OptionError
	switch {
	case errors.As(err, &oe) && oe.Option == "Endpoint":
		unsent = endpointError(config.Endpoint, oe.Reason)
	case err != nil:
		return nil, config.configError(err)
	case emptyKey:
		rc.Close() // nothing was enqueued: it returns at once
		rc, unsent = nil, ErrEmptyWriteKey
	}
	c := &client{root: rc, unsent: unsent, callback: config.Callback, logger: logger, done: make(chan struct{})}
	if unsent != nil {
		logger.Errorf("%v; every event will fail", unsent)
		return c, nil
	}
	c.verbose = verboseLogger(config, logger)
	if config.DefaultContext != nil {
		def := *config.DefaultContext
		def.Library = LibraryInfo{} // v3 sent its own on the batch, whatever this said
		c.defaultContext = &def
	}
	return c, nil
}

// endpointError is the error v3 got sending to an endpoint the root
// refuses: http.NewRequest's for one that is not a URL, else the
// *url.Error of its HTTP client (unsupported scheme, no host), or, for a
// query or fragment v3 would have sent to, one that says why.
func endpointError(endpoint, reason string) error {
	u := endpoint + "/v1/batch"
	req, err := http.NewRequest(http.MethodPost, u, nil)
	if err != nil {
		return err
	}
	switch {
	case req.URL.Scheme != "http" && req.URL.Scheme != "https":
		err = fmt.Errorf("unsupported protocol scheme %q", req.URL.Scheme)
	case req.URL.Host == "":
		err = errors.New("http: no Host in request URL")
	default:
		err = errors.New("analytics: the endpoint " + reason)
	}
	return &url.Error{Op: "Post", URL: req.URL.Redacted(), Err: err}
}

// client is a Client over the root package's.
type client struct {
	root           *root.Client // nil when unsent is set
	unsent         error        // every event fails with it: nothing is sent
	defaultContext *Context     // a copy of Config.DefaultContext, or nil
	callback       Callback     // Config.Callback, for failures found at Enqueue
	logger         Logger
	verbose        *verbose // logs each queued message, or nil: see Config.Verbose

	// mu orders a failure reported from Enqueue against Close: closed is
	// set under mu, and once it is no goroutine is added to reporting,
	// which Close waits for. Enqueue also reads closed without mu.
	mu        sync.Mutex
	closed    atomic.Bool
	reporting sync.WaitGroup
	done      chan struct{} // closed when the first Close has ended
	closeErr  error         // the first Close's outcome, set before done is closed
}

// Enqueue validates msg, merges the default context into it, and queues it
// with the root's EnqueueContext, waiting for room as long as it takes.
// What v3 accepted and then failed is reported to Callback.Failure, from
// a goroutine of its own (v3 reported it from its own too, so a program
// that waits for the callback after Enqueue goes on), which Close waits
// for.
func (c *client) Enqueue(msg Message) error {
	m, err := message(msg)
	if err != nil {
		return err
	}
	if c.closed.Load() {
		return ErrClosed // the root's close may not have begun yet
	}
	if c.unsent != nil {
		return c.fail(m, c.unsent)
	}
	if c.defaultContext != nil {
		m = withContext(m, mergeContext(contextOf(m), c.defaultContext))
	}
	err = c.root.EnqueueContext(context.Background(), m)
	switch {
	case errors.Is(err, root.ErrMessageTooLarge):
		return c.fail(m, ErrMessageTooBig)
	case errors.Is(err, root.ErrInvalidMessage):
		// message validated the fields: this is a value JSON cannot hold.
		// v3 reported encoding/json's error.
		if _, jerr := json.Marshal(v3Message(m)); jerr != nil {
			err = jerr
		}
		return c.fail(m, err)
	}
	if err != nil {
		return err
	}
	c.verbose.queued(c.root, m)
	return nil
}

// fail reports m as failed with err, as v3 did for a message it accepted
// and could not send, and returns what Enqueue returns: nil, or ErrClosed
// once Close has begun.
func (c *client) fail(m root.Message, err error) error {
	c.mu.Lock()
	if c.closed.Load() {
		c.mu.Unlock()
		return ErrClosed
	}
	if c.callback == nil {
		c.mu.Unlock()
		if c.unsent == nil {
			c.logger.Errorf("analytics: event not sent: %v", err)
		}
		return nil
	}
	c.reporting.Add(1)
	c.mu.Unlock()
	go func() {
		defer c.reporting.Done()
		defer func() {
			if p := recover(); p != nil {
				c.logger.Errorf("analytics: callback panicked: %v", p)
			}
		}()
		runCallback(c.callback, v3Message(m), false, err, nil)
	}()
	return nil
}

// Close sends what is queued and returns once every message has its
// outcome and no goroutine of the client is left. As v3's, it makes one
// last attempt of each queued batch and retries none: what fails is
// reported to Callback.Failure at once (Config.CloseTimeout waits for
// retries instead). Any later Close waits for the same end and returns
// ErrClosed.
//
// Called from a Callback, where waiting would never end (v3's Close
// deadlocked there: it waits for every callback, its caller's among
// them), Close begins the close and returns at once, nil for the first
// call and ErrClosed for a later one; the close ends, and the client's
// goroutines with it, once the callbacks have returned.
func (c *client) Close() error {
	c.mu.Lock()
	first := !c.closed.Swap(true)
	c.mu.Unlock()
	callback := inCallback()
	switch {
	case first && callback:
		go c.shutdown()
		return nil
	case first:
		c.shutdown()
		return c.closeErr
	case !callback:
		<-c.done
	}
	return ErrClosed
}

// shutdown closes the root client and waits for every callback, then
// closes done. It runs once, for the first Close.
func (c *client) shutdown() {
	if c.root != nil {
		c.closeErr = c.root.Close()
	}
	c.reporting.Wait()
	close(c.done)
}

// runCallback calls the user's Callback: Success(msg) when ok, else
// FailureDetail(msg, err, batch) when cb has it, else Failure(msg, err).
// Every call of a Callback goes through here, so that inCallback finds it
// on the stack.
//
//go:noinline
func runCallback(cb Callback, msg Message, ok bool, err error, batch *root.BatchError) {
	switch d, detail := cb.(FailureDetail); {
	case ok:
		cb.Success(msg)
	case detail:
		d.FailureDetail(msg, err, batch)
	default:
		cb.Failure(msg, err)
	}
}

// runCallbackName is runCallback's name as the runtime reports it.
var runCallbackName = runtime.FuncForPC(reflect.ValueOf(runCallback).Pointer()).Name()

// inCallback reports whether the caller runs inside a call of the user's
// Callback: whether runCallback is on its goroutine's stack. Only Close
// asks, once.
func inCallback() bool {
	pcs := make([]uintptr, 256)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if f.Function == runCallbackName {
			return true
		}
		if !more {
			return false
		}
	}
}

// uploadFailure passes a failure the root reported to cb, with v3's
// error.
func uploadFailure(cb Callback, msg Message, err error) {
	batch, v3 := v3Error(err)
	runCallback(cb, msg, false, v3, batch)
}

// The root's bounds on FlushAt and FlushInterval. v3 accepted any
// positive BatchSize and Interval; a larger one is taken as the bound.
// Past 2,500 events a batch, Segment's API answers 200 but rejects the
// events, which v3 reported delivered.
const (
	maxBatchSize = defaults.MaxBatchEvents
	maxInterval  = defaults.MaxWait
)

// v3Lifecycle are the root's options that make Close and callbacks behave
// as v3's: a close with one last attempt and no retry, unless
// Config.CloseTimeout asks to wait; and callbacks that may block, since
// v3's Enqueue, which a callback may call, waits for room.
func v3Lifecycle(c Config) []root.Option {
	opts := []root.Option{root.WithBlockingCallbacks(true)}
	if c.CloseTimeout > 0 {
		return append(opts, root.WithCloseTimeout(c.CloseTimeout))
	}
	return append(opts, root.WithCloseRetries(false))
}
