package analyticstest

import (
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Answer is what the Server does with one request. The zero Answer answers
// 200 with an empty body.
//
// At most one of Drop, CloseBeforeRead and Partial should be set; if
// several are, CloseBeforeRead wins over Drop, and Drop over Partial.
type Answer struct {
	// Status is the response status; 0 means 200. With Partial it is the
	// status of the partial status line.
	Status int
	// Header is added to the response.
	Header http.Header
	// Body is the response body.
	Body string
	// Delay is waited before the answer, or until the request's context
	// ends, whichever comes first; a request whose context ends first is
	// recorded with Status 0 and not answered.
	Delay time.Duration
	// Drop reads the request, then answers nothing: over a socket the
	// connection is closed; in memory the round trip fails with ErrDropped.
	// The client may have delivered the request: "maybe delivered".
	Drop bool
	// CloseBeforeRead closes the connection before reading the request
	// body; the request is recorded with its headers, no body, Status 0.
	// In memory the round trip fails with ErrClosedBeforeRead and the
	// request is never reported written.
	//
	// The server only knows this before reading when the answer comes from
	// the script or the default with no rule set: a rule needs the body to
	// decide, so a CloseBeforeRead from a rule closes after the read (over
	// a socket, like Drop).
	CloseBeforeRead bool
	// Partial reads the request, writes a status line and an incomplete
	// header block, then closes the connection: the client has received
	// its first response byte, then an error. Recorded with Status 0. In
	// memory the round trip fails with ErrPartialResponse.
	Partial bool
	// Default stands for the Server's default answer, whatever the other
	// fields say: a rule returns it for the requests it leaves alone.
	Default bool
}

// Errors of an in-memory round trip (RoundTrip) that got no response. Each
// wraps ErrDropped, so errors.Is(err, ErrDropped) matches all three.
var (
	// ErrDropped is the error of an Answer with Drop.
	ErrDropped = errors.New("mockapi: connection dropped")
	// ErrClosedBeforeRead is the error of an Answer with CloseBeforeRead.
	ErrClosedBeforeRead = fmt.Errorf("%w before the request was read", ErrDropped)
	// ErrPartialResponse is the error of an Answer with Partial.
	ErrPartialResponse = fmt.Errorf("%w after a partial response", ErrDropped)
)

// Status returns an Answer with that status.
func Status(code int) Answer { return Answer{Status: code} }

// RetryAfter returns an Answer with that status and Retry-After value.
func RetryAfter(code int, value string) Answer {
	return Answer{Status: code, Header: http.Header{"Retry-After": {value}}}
}

// MaxEvents returns a rule (for Server.Rule or Script.Rules) that answers
// over to a batch of more than k events and leaves any other request to
// the default. MaxEvents(n, Status(413)) mocks a proxy with a smaller body
// limit than the API's.
func MaxEvents(k int, over Answer) func(Request) Answer {
	return func(r Request) Answer {
		if len(r.Events) > k {
			return over
		}
		return Answer{Default: true}
	}
}

// action is what an Answer does with the connection.
type action int

const (
	respond action = iota
	drop
	closeBeforeRead
	partial
)

func (a Answer) action() action {
	switch {
	case a.CloseBeforeRead:
		return closeBeforeRead
	case a.Drop:
		return drop
	case a.Partial:
		return partial
	}
	return respond
}

// status is the status an answer writes: 0 means 200.
func (a Answer) status() int {
	if a.Status == 0 {
		return http.StatusOK
	}
	return a.Status
}
