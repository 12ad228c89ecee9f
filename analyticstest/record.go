package analyticstest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Request is one request the Server received, as recorded.
type Request struct {
	At     time.Time   // when its headers arrived
	Method string      // POST, or GET after a followed 301/302/303
	Path   string      // the URL path, /v1/batch for the SDK
	Header http.Header // as received
	// Body is the request body after gzip decoding; nil when it was not
	// read (CloseBeforeRead).
	Body []byte
	// Events are the batch's events, decoded; nil if the body was not a
	// batch.
	Events []map[string]any
	SentAt string // the batch's sentAt
	// Context is the batch's envelope context.
	Context map[string]any
	// Status is what the Server answered; 0 when it wrote no complete
	// response (Drop, CloseBeforeRead, Partial, or a Delay cut short).
	Status int
	// Err says why the body could not be read or decoded, if it could not.
	Err error
}

// MessageIDs returns the messageId of every event, in order.
func (r Request) MessageIDs() []string {
	ids := make([]string, len(r.Events))
	for i, e := range r.Events {
		ids[i], _ = e["messageId"].(string)
	}
	return ids
}

// requestJSON is the wire form of a Request in GET /_requests. Its field
// names are a contract with harnesses in other languages: change none.
type requestJSON struct {
	At         time.Time        `json:"at"`
	Method     string           `json:"method"`
	Path       string           `json:"path"`
	Headers    http.Header      `json:"headers"`
	Body       string           `json:"body"`
	Events     []map[string]any `json:"events"`
	MessageIDs []string         `json:"messageIds"`
	SentAt     string           `json:"sentAt"`
	Context    map[string]any   `json:"context"`
	Status     int              `json:"status"`
	Error      *string          `json:"error"`
}

// MarshalJSON encodes r as one element of GET /_requests: lower camelCase
// names, the body as a string, events and messageIds always arrays (never
// null), error null or its message.
func (r Request) MarshalJSON() ([]byte, error) {
	w := requestJSON{
		At: r.At, Method: r.Method, Path: r.Path, Headers: r.Header,
		Body: string(r.Body), Events: r.Events, MessageIDs: r.MessageIDs(),
		SentAt: r.SentAt, Context: r.Context, Status: r.Status,
	}
	if w.Headers == nil {
		w.Headers = http.Header{}
	}
	if w.Events == nil {
		w.Events = []map[string]any{}
	}
	if r.Err != nil {
		msg := r.Err.Error()
		w.Error = &msg
	}
	return json.Marshal(w)
}

// UnmarshalJSON decodes what MarshalJSON encodes, so that a Go harness in
// another process can read GET /_requests into []Request. Err becomes an
// error with the same message; an empty events array becomes nil.
func (r *Request) UnmarshalJSON(data []byte) error {
	var w requestJSON
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	*r = Request{
		At: w.At, Method: w.Method, Path: w.Path, Header: w.Headers,
		SentAt: w.SentAt, Context: w.Context, Status: w.Status,
	}
	if w.Body != "" {
		r.Body = []byte(w.Body)
	}
	if len(w.Events) > 0 {
		r.Events = w.Events
	}
	if w.Error != nil {
		r.Err = errors.New(*w.Error)
	}
	return nil
}

// newRequest records what is known once the headers have arrived.
func newRequest(r *http.Request) Request {
	return Request{At: time.Now(), Method: r.Method, Path: r.URL.Path, Header: r.Header.Clone()}
}

// decode reads the body of r into req and decodes it as a batch.
func (req *Request) decode(r *http.Request) {
	req.Body, req.Err = readBody(r)
	if req.Err != nil || r.Method != http.MethodPost {
		return
	}
	var b struct {
		Batch   []map[string]any `json:"batch"`
		SentAt  string           `json:"sentAt"`
		Context map[string]any   `json:"context"`
	}
	if err := json.Unmarshal(req.Body, &b); err != nil {
		req.Err = fmt.Errorf("body is not JSON: %w", err)
		return
	}
	req.Events, req.SentAt, req.Context = b.Batch, b.SentAt, b.Context
}

func readBody(r *http.Request) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	raw, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	if r.Header.Get("Content-Encoding") != "gzip" {
		return raw, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	body, err := io.ReadAll(zr)
	if err != nil {
		return body, fmt.Errorf("gzip: %w", err)
	}
	return body, nil
}
