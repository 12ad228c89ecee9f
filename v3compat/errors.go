package analytics

import (
	"errors"
	"fmt"
	"net/http"

	root "github.com/dualpath/analytics-go"
)

// The errors of v3, as values of the root package, so that errors.Is
// matches an error against either name.
var (
	// ErrClosed is returned by Enqueue after Close, and by Close when it
	// is called again. It is the root package's ErrClosed.
	ErrClosed = root.ErrClosed

	// ErrTooManyRequests says the client can take no more messages. It is
	// the root package's ErrQueueFull. This package's Enqueue never
	// returns it (it waits for room), nor does Callback.Failure get it; it
	// exists so that v3 code that names it compiles.
	ErrTooManyRequests = root.ErrQueueFull

	// ErrMessageTooBig is what Callback.Failure gets, as in v3, for a
	// message whose JSON is over 32,000 bytes, which Enqueue accepts. It is
	// the root package's ErrMessageTooLarge.
	ErrMessageTooBig = root.ErrMessageTooLarge
)

// FieldError is the error Enqueue and ValidateFields return for a message
// that misses a required field, as a value: v3 code asserts it with
// err.(analytics.FieldError). errors.Is(err, ErrInvalidMessage) of the root
// package is true.
type FieldError struct {
	// Type is the message type, such as "analytics.Track".
	Type string
	// Name is the field at fault, such as "Event" or "UserId".
	Name string
	// Value is the field's value: "" for a missing field.
	Value any
}

// Error reads like `analytics.Track.Event: invalid field value: ""`.
func (e FieldError) Error() string {
	return fmt.Sprintf("%s.%s: invalid field value: %#v", e.Type, e.Name, e.Value)
}

// Is makes errors.Is(err, ErrInvalidMessage) of the root package true.
func (e FieldError) Is(target error) bool { return target == root.ErrInvalidMessage }

// fieldError converts the root's validation error. v3 put the field's
// value in Value; its checks only ever found it empty, so Value is an
// empty string, as it was in v3.
func fieldError(fe *root.FieldError) FieldError {
	return FieldError{Type: fe.Type, Name: fe.Name, Value: ""}
}

// ConfigError is NewWithConfig's error for a Config it cannot use.
type ConfigError struct {
	// Reason says what is wrong, such as "must be positive, got -1s".
	Reason string
	// Field is the Config field at fault, such as "Interval" or
	// "BatchSize". An empty write key and an Endpoint the client cannot
	// send to are no ConfigError (see NewWithConfig).
	Field string
	// Value is the field's value, such as -1s for a negative Interval.
	Value any
}

// Error reads as v3's: "analytics.NewWithConfig: must be positive, got
// -1s (analytics.Config.Interval: -1000000000)". It never shows the write
// key, nor an endpoint's user information.
func (e ConfigError) Error() string {
	return fmt.Sprintf("analytics.NewWithConfig: %s (analytics.Config.%s: %#v)", e.Reason, e.Field, e.Value)
}

// ErrEmptyWriteKey is what Callback.Failure gets for every event of a
// client made with an empty write key: v3 accepted the key, and each of its
// uploads failed; here nothing is sent. NewWithConfig logs it once.
var ErrEmptyWriteKey = errors.New("analytics: the write key is empty: the event was not sent")

// FailureDetail is a Callback that also wants the root package's account
// of each failure. When Config.Callback has the method, the client calls
// it instead of Failure, once per failed event, with err as Failure would
// get it (v3's error) and, for an upload that failed, the root's
// *BatchError: why the batch stopped, after how many attempts, and the
// last attempt's *HTTPError or *TransportError. batch is nil for a
// failure that is no upload's (a message JSON cannot encode, an empty
// write key).
type FailureDetail interface {
	Callback
	FailureDetail(msg Message, err error, batch *root.BatchError)
}

// v3Error is the error v3 gave Callback.Failure for what the root reports
// as err: the *url.Error of a request that got no response, as the HTTP
// client returned it; the error that cut reading an error response's body
// short; else, for a non-2xx answer, v3's status error ("400 400 Bad
// Request"). A failure no attempt made (a Shutdown cut short before the
// batch was sent) keeps the root's *BatchError, for which v3 had no
// equivalent.
func v3Error(err error) (batch *root.BatchError, v3 error) {
	if !errors.As(err, &batch) || batch.Err == nil {
		return batch, err
	}
	var te *root.TransportError
	if errors.As(batch.Err, &te) {
		return batch, te.Err
	}
	var he *root.HTTPError
	if errors.As(batch.Err, &he) {
		if he.BodyErr != nil {
			return batch, he.BodyErr
		}
		return batch, &statusError{code: he.StatusCode, batch: batch}
	}
	return batch, err
}

// statusError is v3's error for a non-2xx answer. Its text is v3's, the
// status code then the status line: "503 503 Service Unavailable". It
// unwraps to the root's *BatchError, which errors.As finds.
type statusError struct {
	code  int
	batch *root.BatchError
}

func (e *statusError) Error() string {
	text := http.StatusText(e.code)
	if text == "" {
		text = fmt.Sprintf("status code %d", e.code) // as net/http names an unknown status
	}
	return fmt.Sprintf("%d %d %s", e.code, e.code, text)
}

func (e *statusError) Unwrap() error { return e.batch }
