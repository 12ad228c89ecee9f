package analytics

import (
	"fmt"

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

	// ErrMessageTooBig is matched (errors.Is) by the error Enqueue returns
	// for a message whose JSON is over 32,000 bytes. It is the root
	// package's ErrMessageTooLarge. v3 reported it to Callback.Failure
	// instead.
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
	// Field is the Config field at fault, such as "Interval", or
	// "WriteKey" for an empty write key.
	Field string
	// Value is the field's value. It is nil for an Endpoint with user
	// information, which may hold a password.
	Value any
}

// Error reads as v3's: "analytics.NewWithConfig: must be positive, got
// -1s (analytics.Config.Interval: -1000000000)". It never shows the write
// key, nor an endpoint's user information.
func (e ConfigError) Error() string {
	return fmt.Sprintf("analytics.NewWithConfig: %s (analytics.Config.%s: %#v)", e.Reason, e.Field, e.Value)
}
