package analytics

// Callback receives the final outcome of every event the client accepted:
// exactly one call per event, Success or Failure. Failures of single
// attempts that will be retried are not reported here (see WithLogger and
// Stats).
//
// The calls come from the client's upload goroutines, several at once:
// implementations must be safe for concurrent use, and should return
// quickly, since a batch's upload slot is held until its callbacks return.
// A panic in a callback is recovered and logged. A callback must return:
// one that calls Flush, Close or Shutdown waits for the uploads, which wait
// for it, and one that ends its goroutine (runtime.Goexit, t.Fatal) leaves
// the rest of its batch without callbacks.
type Callback interface {
	// Success is called when the tracking API accepted msg (a 2xx).
	Success(msg Message)
	// Failure is called when msg will not be delivered; err says why (see
	// BatchError).
	Failure(msg Message, err error)
}
