package analytics

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dualpath/analytics-go/consumer"
	"github.com/dualpath/analytics-go/queue"
)

// Client records events and uploads them in batches in the background. All
// its methods are safe for concurrent use. Create one with New, share it,
// and Close (or Shutdown) it before the program exits: events still queued
// are lost only if the process ends first.
type Client struct {
	cfg     config
	up      *consumer.Uploader
	q       *queue.Queue[consumer.Event] // where events wait to be cut into batches
	in      intake                       // memory-only or spooled: chosen once, in New
	loop    *consumer.Loop               // cuts, uploads and reports
	ownHTTP *http.Client                 // the SDK's own client, whose idle connections Close closes
	log     *slog.Logger                 // recovered panics
	failLog *slog.Logger                 // events that failed for good, throttled
	stats   counters

	stopped       atomic.Bool  // stopIntake ran
	accepting     sync.RWMutex // read-held by each Enqueue from its push until its event is counted
	beginShutdown sync.Once
	endShutdown   sync.Once
}

// New returns a client that sends events to the tracking API with writeKey,
// configured by opts, and starts its background goroutines. It returns an
// error naming the option at fault for an invalid configuration, and for an
// empty writeKey.
func New(writeKey string, opts ...Option) (*Client, error) {
	if writeKey == "" {
		return nil, invalidOption("WriteKey", "must not be empty")
	}
	cfg := defaultConfig()
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	oauth, err := cfg.oauth.uploaderOAuth()
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, log: newLogger(cfg.logger)}
	up := cfg.upload // what the options set; the rest is New's
	if up.Client == nil {
		up.Client = consumer.NewHTTPClient(up.MaxConcurrentRequests)
		c.ownHTTP = up.Client
	} else {
		// Whatever the user's redirect policy, the write key never
		// follows a redirect from https to plain http.
		up.Client = consumer.GuardRedirects(up.Client)
	}
	c.stats.latency.start = time.Now()
	c.failLog = throttled(c.cfg.logger)
	batchContext := libraryContextJSON // context.library: this SDK's, or v3's on the v3 wire
	if cfg.v3Wire {
		batchContext = `{"library":` + v3LibraryJSON + `}`
	}
	up.Endpoint = cfg.batchURLBase()
	up.WriteKey = writeKey
	up.OAuth = oauth
	up.UserAgent = "analytics-go/" + Version
	up.Context = []byte(batchContext)
	up.JSONTimes = cfg.v3Wire
	up.BatchMessageID = cfg.v3Wire
	up.MaxBodyBytes = MaxBatchBytes
	up.Logger = throttled(c.cfg.logger) // a warning per failed attempt
	c.up = consumer.New(up)
	c.q = queue.New[consumer.Event](cfg.maxQueueSize, cfg.maxQueueBytes)
	// The one place that knows whether there is a spool (SPEC §11).
	c.in = memoryIntake{c}
	if cfg.spoolDir != "" {
		sp, err := newSpoolIntake(c)
		if err != nil {
			return nil, err
		}
		c.in = sp
	}
	c.loop = consumer.NewLoop(consumer.LoopConfig{
		Queue:         c.q,
		Uploader:      c.up,
		Outcomes:      c.in,
		FlushAt:       cfg.flushAt,
		FlushInterval: cfg.flushInterval,
		CallsMayBlock: cfg.blockingCallbacks,
		Refill:        c.in.refill,
		Accepted:      c.in.accepted,
		Halted:        c.stopIntake,
		Damaged:       errDamaged, // only a spool marks events Damaged
		Logger:        c.log,
	})
	c.loop.Start()
	return c, nil
}

// Enqueue validates msg, fills its MessageId (a UUID v4) and Timestamp
// (now) when unset, encodes it, and queues it for upload. It never blocks on
// the network or on a full queue. msg is one of the six message types or a
// pointer to one (Track or *Track); the Callback gets the message value, a
// Track, with the defaults filled: a copy, with strings, maps and Context of
// its own (see Callback), so Enqueue keeps nothing of msg. It returns:
//
//   - a *FieldError wrapping ErrInvalidMessage for a nil msg or nil pointer,
//     a type of the caller's own that embeds a message, a missing required
//     field, or a value JSON cannot hold (a channel, a func, NaN, ±Inf, a
//     cycle);
//   - an error wrapping ErrMessageTooLarge when the JSON is over
//     MaxMessageBytes;
//   - ErrQueueFull when the queue is at MaxQueueSize or MaxQueueBytes (with
//     WithSpool: when the spool is at WithSpoolMaxBytes);
//   - with WithSpool, an error wrapping ErrSpool and the file system's
//     error when the spool could not write the event;
//   - ErrClosed once Close or Shutdown has begun.
//
// A refused message is not queued and gets no callback. An accepted one
// gets exactly one, Success or Failure (with WithSpool, in this process
// or, if it ends first, in the next one on the directory). With WithSpool,
// Enqueue returns once the event is written to the operating system.
func (c *Client) Enqueue(msg Message) error { return c.enqueue(context.Background(), false, msg) }

// EnqueueContext is Enqueue, except that when the queue is full it waits
// for room until ctx ends instead of returning ErrQueueFull at once. The
// wait ends when uploads end and give their events' room back (nothing
// polls), and waiting calls are served in the order they arrived: one that
// arrives while others wait queues behind them, even if its event would
// fit. A plain Enqueue does not wait in that line: it may take room the
// waiting calls are waiting for, so that it keeps its cost and never
// blocks.
//
// When ctx ends first, it returns an error that matches both ErrQueueFull
// and ctx.Err() (errors.Is(err, context.DeadlineExceeded), for one). Once
// Close or Shutdown begins, waiting calls return ErrClosed at once. An
// event that fits is accepted even if ctx has already ended. Its other
// errors are Enqueue's. It starts no goroutine.
func (c *Client) EnqueueContext(ctx context.Context, msg Message) error {
	return c.enqueue(ctx, true, msg)
}

// enqueue is EnqueueContext when wait is true, else Enqueue (ctx unused).
// It calls each message's methods on its concrete type, never through the
// Message interface or a type parameter (which the compiler cannot see
// through either), and it never keeps a string, map or pointer of the
// caller's message: what a Callback gets is a copy (kept). So nothing the
// caller passes has to live on the heap: a Track built for the call, its
// strings and its properties map stay on the caller's stack (about 310
// bytes and two allocations an event, with five properties, and the
// collector's work on them). A pointer is followed first.
func (c *Client) enqueue(ctx context.Context, wait bool, msg Message) error {
	p := enqueuing{c: c, wait: wait}
	switch m := deref(msg).(type) {
	case Track:
		if p.start(m.Validate(), m.MessageId) && p.encoded(m.encode(p.e, p.id, p.now)) {
			p.kept = m.kept(string(p.id), p.now)
		}
	case Identify:
		if p.start(m.Validate(), m.MessageId) && p.encoded(m.encode(p.e, p.id, p.now)) {
			p.kept = m.kept(string(p.id), p.now)
		}
	case Page:
		if p.start(m.Validate(), m.MessageId) && p.encoded(m.encode(p.e, p.id, p.now)) {
			p.kept = m.kept(string(p.id), p.now)
		}
	case Screen:
		if p.start(m.Validate(), m.MessageId) && p.encoded(m.encode(p.e, p.id, p.now)) {
			p.kept = m.kept(string(p.id), p.now)
		}
	case Group:
		if p.start(m.Validate(), m.MessageId) && p.encoded(m.encode(p.e, p.id, p.now)) {
			p.kept = m.kept(string(p.id), p.now)
		}
	case Alias:
		if p.start(m.Validate(), m.MessageId) && p.encoded(m.encode(p.e, p.id, p.now)) {
			p.kept = m.kept(string(p.id), p.now)
		}
	default:
		p.err = refused(msg)
	}
	err := p.push(ctx)
	if err != nil {
		// Every refusal is counted here, by the error it returns.
		c.stats.refused(err)
	}
	return err
}

// deref returns the message a pointer to one of the six types points to,
// and any other msg as it is (a nil pointer too: refused says why).
func deref(msg Message) Message {
	switch m := msg.(type) {
	case *Track:
		if m != nil {
			return *m
		}
	case *Identify:
		if m != nil {
			return *m
		}
	case *Page:
		if m != nil {
			return *m
		}
	case *Screen:
		if m != nil {
			return *m
		}
	case *Group:
		if m != nil {
			return *m
		}
	case *Alias:
		if m != nil {
			return *m
		}
	}
	return msg
}

// refused is the error of a msg that is none of the six types nor a
// pointer to one: a Spooled's (it cannot be enqueued again), a type of
// the caller's own that embeds a message (Message is implemented by this
// package's types alone), or nil.
func refused(msg Message) error {
	switch m := msg.(type) {
	case Spooled:
		return m.Validate()
	case *Spooled:
		if m != nil {
			return m.Validate()
		}
	case nil:
	default:
		if !isNilPointer(msg) {
			return &FieldError{Type: "analytics.Message", Name: "(message)", Reason: "not one of the six message types, or a pointer to one"}
		}
	}
	return &FieldError{Type: "analytics.Message", Name: "(nil)", Reason: "a message is required"}
}

// enqueuing is one Enqueue of a message under way, in its steps: start
// (validated, the queue's room checked, the encoder and the defaults at
// hand), encoded, kept (for the callback), push. Each step runs only if
// the one before succeeded; err is the first that failed.
type enqueuing struct {
	c    *Client
	wait bool
	e    *encoder
	now  time.Time
	// id is the messageId generated for a message without one, in
	// e.id; nil when the message has its own.
	id   []byte
	err  error
	kept Message // what the callback gets; nil without one
}

// start records the message's validation error, and without wait checks
// that the queue may take it before the work of encoding it. It reports
// whether to encode: then p.e, p.now and p.id are set.
func (p *enqueuing) start(invalid error, messageID string) bool {
	if invalid != nil {
		p.err = invalid
		return false
	}
	if !p.wait {
		if p.err = p.c.in.precheck(); p.err != nil {
			return false
		}
	}
	p.e = getEncoder()
	p.e.v3Wire = p.c.cfg.v3Wire
	p.e.countKept = p.c.cfg.callback != nil // for keptBytes
	p.e.reset()
	p.now = time.Now()
	if messageID == "" {
		p.e.newID()
		p.id = p.e.id[:]
	}
	return true
}

// encoded records the error of encoding the message into p.e, or of its
// size (checkSize). It reports whether the message is to be kept for a
// callback.
func (p *enqueuing) encoded(err error) bool {
	if err = p.e.checkSize(err); err != nil {
		p.err = err
		return false
	}
	return p.e.countKept // a callback is set
}

// push queues the encoded message through the intake, with what the
// callback gets and its estimated heap, counts it, and wakes the loop at
// FlushAt; or returns the error of the step that failed, or the intake's
// refusal. The intake's own lock orders the push against shutdown's stop:
// an event is either accepted before it, or refused. The accepting lock
// makes shutdown wait until every event accepted is counted too, so that
// Stats adds up the moment Close or Shutdown returns.
func (p *enqueuing) push(ctx context.Context) error {
	if p.e == nil {
		return p.err
	}
	defer putEncoder(p.e)
	if p.err != nil {
		return p.err
	}
	c := p.c
	ev := consumer.Event{At: p.now.Sub(c.stats.latency.start), Message: p.kept}
	kept := 0
	if p.kept != nil {
		kept = keptBytes(p.kept, p.e.buf, p.e.kept)
	}
	c.accepting.RLock()
	n, err := c.in.push(ctx, p.wait, p.e.buf, ev, kept)
	if err == nil {
		c.stats.enqueued.Add(1)
	}
	c.accepting.RUnlock()
	if err != nil {
		return err
	}
	// Wake the loop when the queue reaches FlushAt. Pushes happen one at a
	// time, so exactly one of them sees n == FlushAt on the way up; above
	// it, the loop goes on cutting until the queue is below FlushAt again.
	if n == c.cfg.flushAt {
		c.loop.Wake()
	}
	return nil
}

// refusal returns the error an enqueue returns when the queue refuses its
// event (Closed or Full), or the spool does (closed, or at its bound); nil
// when it was admitted. A Full after waiting means
// ctx ended first: EnqueueContext's error then matches both ErrQueueFull
// and ctx.Err().
func refusal(ctx context.Context, res queue.Admission, waited bool) error {
	switch res {
	case queue.Closed:
		return ErrClosed
	case queue.Full:
		if err := ctx.Err(); waited && err != nil {
			return &wrapped{ErrQueueFull, err}
		}
		return ErrQueueFull
	}
	return nil
}

// Flush sends everything queued so far without waiting for FlushAt or
// FlushInterval, and returns when each of those events has reached its
// final outcome (delivered or failed), or when ctx ends, returning
// ctx.Err(). Events still in flight when ctx ends go on as usual. After
// Close it returns ErrClosed; so does a Flush still waiting when a Close
// or Shutdown ends that left some of its events in the spool (WithSpool).
func (c *Client) Flush(ctx context.Context) error {
	if c.isClosed() {
		return ErrClosed
	}
	return c.loop.Flush(ctx, c.in.accepted())
}

// Close stops accepting events, sends everything queued, and waits until
// every event has reached its final outcome, including batches waiting to
// retry, for at most the close timeout (WithCloseTimeout: 30 s by default;
// 0 waits as long as the retry budgets allow). When the timeout runs out,
// uploads in progress are cancelled and every event not yet delivered is
// reported to Callback.Failure with an error wrapping ErrShutdown and
// context.DeadlineExceeded, as Shutdown does; Close then returns such an
// error too. With WithCloseRetries(false), it waits for one last attempt
// of each batch instead of their retries. Waiting calls of EnqueueContext return ErrClosed at once.
//
// It is safe to call from several goroutines. As in segmentio/analytics-go
// v3, only the call that closes the client reports how it went: any other
// Close, later or at the same time, or after Shutdown, waits for the same
// end and returns ErrClosed. When it returns, every callback has returned
// and no goroutine of the client is running.
//
// With WithSpool, what Close could not deliver in time stays in the spool
// for the next New on the directory instead of failing: it gets no
// callback, Close returns nil, and the log and Stats().Spool.Left say how
// many events were left.
func (c *Client) Close() error {
	ctx := context.Background()
	if c.cfg.closeTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.cfg.closeTimeout)
		defer cancel()
	}
	first, err := c.shutdown(ctx)
	switch {
	case !first:
		return ErrClosed
	case err != nil:
		return c.in.shutdownError(err) // with a spool, nil: what is left is kept, not failed
	}
	return nil
}

// Shutdown is Close bounded by ctx instead of the close timeout. If ctx
// ends first, uploads in progress are cancelled and every event not yet
// delivered is reported to Callback.Failure with an error wrapping
// ErrShutdown and ctx.Err(); none is dropped silently. Shutdown then
// returns ctx.Err() once the client's goroutines have ended, and nil
// otherwise, however many times it is called. Any caller's context ending
// cuts the shutdown short for all; a ctx that has ended already does it
// before anything more is sent. With WithSpool, the events not yet
// delivered stay in the spool instead, as with Close.
func (c *Client) Shutdown(ctx context.Context) error {
	_, err := c.shutdown(ctx)
	return err
}

// shutdown begins the shutdown if no call has (first is then true), and
// waits for its end or for ctx to end, which cuts it short.
func (c *Client) shutdown(ctx context.Context) (first bool, err error) {
	c.beginShutdown.Do(func() {
		first = true
		c.stopIntake()
		if !c.cfg.closeRetries {
			c.up.StopRetries()
		}
		if err = ctx.Err(); err != nil {
			// Ended already: cut short before the loop may send, so that
			// what is sent does not depend on how soon it runs.
			c.loop.Cancel(shutdownCause(err))
		}
		c.loop.Close()
	})
	done := c.loop.Done()
	select {
	case <-done:
		// Finished already: a ctx that ended after the shutdown began
		// does not matter.
	default:
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
			c.loop.Cancel(shutdownCause(err))
			<-done
		}
	}
	c.endShutdown.Do(c.finishShutdown)
	return first, err
}

// finishShutdown runs once, after the loop and every upload have ended:
// whatever a cancelled shutdown left queued is failed, or kept in the
// spool, and the Flush calls still waiting end (SPEC §8).
func (c *Client) finishShutdown() {
	c.in.finish()
	c.loop.EndFlushes(ErrClosed) // what they wait for stays in the spool
	c.loop.Cancel(nil)
	if c.ownHTTP != nil {
		c.ownHTTP.CloseIdleConnections()
	}
}

// stopIntake makes every later Enqueue return ErrClosed, and ends the
// waiting EnqueueContext calls. With a spool, the queue stays open: the
// backlog on disk still comes into it to be sent.
func (c *Client) stopIntake() {
	c.stopped.Store(true)
	c.in.stop()
	// Every push from now on is refused, and the waiting ones have been
	// woken to be: once the calls under way have counted their events,
	// Stats.Enqueued is final.
	c.accepting.Lock()
	//lint:ignore SA2001 an empty critical section is the barrier: it waits for the readers.
	c.accepting.Unlock()
}

// isClosed reports whether the client takes no more events: Close or
// Shutdown has begun, or an internal error stopped it.
func (c *Client) isClosed() bool { return c.stopped.Load() }

// Callback receives the final outcome of every event the client accepted:
// exactly one call per event, Success or Failure (SPEC §8). Failures of single
// attempts that will be retried are not reported here (see WithLogger and
// Stats). A single function can serve as a Callback: see CallbackFunc.
//
// The calls come from the client's upload goroutines, several at once:
// implementations must be safe for concurrent use, and should return
// quickly, since a batch's upload slot is held until its callbacks return
// (WithBlockingCallbacks gives it back before they run).
// A panic in a callback is recovered and logged. A callback must return:
// one that calls Flush, Close or Shutdown waits for the uploads, which wait
// for it, and one that ends its goroutine (runtime.Goexit, t.Fatal) leaves
// the rest of its batch without callbacks.
//
// The msg a callback gets is a copy of the message Enqueue took, made
// then: its strings, its maps and its Context are its own, holding the
// same members (the values inside the maps are shared), and its Timestamp
// is the same instant, in UTC or Local when the caller's was, else in a
// fixed zone of the same name and offset. What the caller changes in its
// message after Enqueue shows in neither the callback nor the wire.
type Callback interface {
	// Success is called when the tracking API accepted msg (a 2xx).
	Success(msg Message)
	// Failure is called when msg will not be delivered; err says why (see
	// BatchError) and is never nil.
	Failure(msg Message, err error)
}

// CallbackFunc lets an ordinary function serve as a Callback, as
// http.HandlerFunc does for an http.Handler: Success(msg) calls f(msg,
// nil), and Failure(msg, err) calls f(msg, err), so err is nil exactly when
// msg was delivered. f is called as any Callback is: from several
// goroutines at once, once per event.
type CallbackFunc func(msg Message, err error)

// Success calls f(msg, nil).
func (f CallbackFunc) Success(msg Message) { f(msg, nil) }

// Failure calls f(msg, err).
func (f CallbackFunc) Failure(msg Message, err error) { f(msg, err) }
