package consumer

import (
	"context"
	"sync/atomic"

	"github.com/dualpath/analytics-go/retry"
)

// attempt sends the batch once, holding slot until the response has been
// read, then releasing it. id is the batch's messageId, when the body
// carries one. retryCount is the value of X-Retry-Count, 0 on a first
// attempt (no header). It returns the classified result and, unless
// the result is a success, an *HTTPError or *TransportError, scrubbed of
// the write key: every error of an attempt leaves through here.
func (u *Uploader) attempt(ctx context.Context, slot *Slot, events [][]byte, id string, retryCount int) (retry.Result, error) {
	defer slot.Release()
	res, err := u.send(ctx, events, id, retryCount)
	return res, u.scrub.error(err)
}

// send is attempt before scrubbing: it builds the request, sends it under
// the attempt's own deadline, and reads the response.
func (u *Uploader) send(ctx context.Context, events [][]byte, id string, retryCount int) (retry.Result, error) {
	u.stats.attempts.Add(1)
	// Each attempt has its own deadline, from a context, so no transport
	// level retry hidden in net/http can outlive it.
	ctx, cancel := context.WithTimeout(ctx, u.timeout)
	defer cancel()
	var phase progress
	req, err := u.newRequest(ctx, events, id, retryCount, &phase)
	if err != nil {
		// The endpoint was validated by the analytics package; a request
		// that cannot even be built will not build on a retry either.
		return retry.Result{Outcome: retry.OutcomeFatal}, err
	}
	resp, err := u.client.Do(req)
	if err != nil {
		p := phase.get()
		if p.Written() {
			u.stats.written.Add(1)
		} else {
			u.stats.notWritten.Add(1)
		}
		return retry.NoResponse(), &TransportError{Phase: p, Err: err}
	}
	return u.readResponse(ctx, resp)
}

// progress is the furthest Phase an attempt reached. httptrace hooks may run
// on the transport's goroutines, hence the atomic.
type progress struct{ p atomic.Int32 }

func (pr *progress) reach(p Phase) {
	for {
		cur := pr.p.Load()
		if int32(p) <= cur || pr.p.CompareAndSwap(cur, int32(p)) {
			return
		}
	}
}

func (pr *progress) restart(p Phase) { pr.p.Store(int32(p)) }

func (pr *progress) get() Phase {
	if p := Phase(pr.p.Load()); p > 0 {
		return p
	}
	return PhaseNotConnected
}
