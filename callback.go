package analytics

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
