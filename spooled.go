package analytics

import (
	"encoding/json"
	"time"
)

// Spooled is an event read back from the spool (WithSpool): one an earlier
// client left in the directory, or one that waited on disk because the
// memory queue was full (SPEC §11.3). A Callback gets it instead of the
// message Enqueue took, which the client did not keep in memory. An event
// whose record the spool finds damaged when reading it back (its checksum
// fails) gets a Failure matching ErrSpool with a Spooled of its bytes as
// read, which may be wrong (Type and MessageId are empty when they do not
// parse). It cannot be enqueued again: Validate refuses it.
type Spooled struct {
	Type      string          // "track", "identify", "page", "screen", "group" or "alias"
	MessageId string          // the messageId it was sent with
	JSON      json.RawMessage // the event as sent, byte for byte
	// Recovered is true for an event an earlier client left in the
	// directory, false for one this client accepted.
	Recovered bool
}

// Validate refuses a Spooled message: Enqueue takes the six message types
// only.
func (m Spooled) Validate() error {
	return &FieldError{Type: "analytics.Spooled", Name: "(message)", Reason: "a message read back from the spool cannot be enqueued again"}
}

func (m Spooled) encode(*encoder, []byte, time.Time) error { return m.Validate() }

func (m Spooled) kept(string, time.Time) Message { return m }

func (m Spooled) id() string { return m.MessageId }
