package analyticstest

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
)

// Request is one request the Server received, as recorded.
type Request struct {
	At     time.Time   // when its headers arrived
	Method string      // POST, or GET after a followed 301/302/303
	Path   string      // the URL path, /v1/batch for the SDK
	Header http.Header // as received
	// Body is the request body after gzip decoding; nil when it was not
	// read (CloseBeforeRead), its gzip did not decode, or it was over the
	// size limit.
	Body []byte
	// Events are the batch's events, decoded with every number a
	// json.Number, so that it keeps its exact text (an integer above 2^53,
	// a decimal); nil if the body was not a batch of JSON objects.
	Events []map[string]any
	SentAt string // the batch's sentAt
	// Context is the batch's envelope context, numbers as in Events.
	Context map[string]any
	// Status is what the Server answered; 0 when it wrote no complete
	// response (Drop, CloseBeforeRead, Partial, or a Delay cut short).
	Status int
	// Rejected is how many of Events, the last ones, the Server rejected
	// although it answered 2xx: as Segment's API does, it takes at most
	// 2,500 events of a batch, answers 200 and rejects each event past
	// the 2,500th (see the package doc, "Refusals"). Events and Body keep
	// them, as received; Delivered leaves them out and Server.Rejected
	// counts them. 0 for any other request, and on a Lenient Server.
	Rejected int
	// Err says why the Server refused the request (see Server), or, on a
	// Lenient Server, why its body could not be read or decoded.
	Err error

	writeKey string // the body's, which a batch with an OAuth token carries
}

// MessageIDs returns the messageId of every event, in order, those the
// Server rejected included (the last Rejected).
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
	Rejected   int              `json:"rejected"`
	Error      *string          `json:"error"`
}

// MarshalJSON encodes r as one element of GET /_requests: lower camelCase
// names, the body as a string, events and messageIds always arrays (never
// null), rejected a number, error null or its message.
func (r Request) MarshalJSON() ([]byte, error) {
	w := requestJSON{
		At: r.At, Method: r.Method, Path: r.Path, Headers: r.Header,
		Body: string(r.Body), Events: r.Events, MessageIDs: r.MessageIDs(),
		SentAt: r.SentAt, Context: r.Context, Status: r.Status, Rejected: r.Rejected,
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
// another process can read GET /_requests into []Request. Numbers in
// events and context become json.Number, as in the Server's own record;
// Err becomes an error with the same message; an empty events array
// becomes nil.
func (r *Request) UnmarshalJSON(data []byte) error {
	var w requestJSON
	if err := unmarshalExact(data, &w); err != nil {
		return err
	}
	*r = Request{
		At: w.At, Method: w.Method, Path: w.Path, Header: w.Headers,
		SentAt: w.SentAt, Context: w.Context, Status: w.Status, Rejected: w.Rejected,
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

// decode reads the body of r into req, at most limit bytes after gzip
// decoding, and decodes a POST's body as a batch. It sets req.Err and
// returns the refusal the body earns: 413 over limit, 400 for gzip that
// does not decode, a body that is not a JSON object with a "batch" array,
// or a batch item that is not an object with a "type".
func (req *Request) decode(r *http.Request, limit int) *refusal {
	f := req.read(r, limit)
	if f == nil && r.Method == http.MethodPost {
		f = req.decodeBatch()
	}
	if f != nil {
		req.Err = f
	}
	return f
}

// read reads the body, gzip-decoded when the Content-Encoding says gzip in
// any case (HTTP content codings are case-insensitive).
func (req *Request) read(r *http.Request, limit int) *refusal {
	if r.Body == nil {
		return nil
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxReadBytes+1))
	if err != nil {
		return refuse(http.StatusBadRequest, "reading the body: %v", err)
	}
	if len(raw) > maxReadBytes {
		return refuse(http.StatusRequestEntityTooLarge, "body larger than %d bytes", maxReadBytes)
	}
	body := raw
	switch enc := strings.TrimSpace(r.Header.Get("Content-Encoding")); {
	case enc == "", strings.EqualFold(enc, "identity"):
	case strings.EqualFold(enc, "gzip"), strings.EqualFold(enc, "x-gzip"):
		zr, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return refuse(http.StatusBadRequest, "gzip: %v", err)
		}
		body, err = io.ReadAll(io.LimitReader(zr, int64(limit)+1))
		if err != nil {
			return refuse(http.StatusBadRequest, "gzip: %v", err)
		}
	default:
		return refuse(http.StatusBadRequest, "Content-Encoding %q is not supported: send gzip, or no Content-Encoding", enc)
	}
	if len(body) > limit {
		return refuse(http.StatusRequestEntityTooLarge, "body larger than %d bytes after gzip decoding", limit)
	}
	req.Body = body
	return nil
}

// decodeBatch decodes req.Body as a batch, numbers kept exact
// (json.Number). Events are set only when every item is an object.
func (req *Request) decodeBatch() *refusal {
	if !json.Valid(req.Body) {
		err := json.Unmarshal(req.Body, new(any)) // says where
		return refuse(http.StatusBadRequest, "body is not JSON: %v", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(req.Body, &top); err != nil || top == nil {
		return refuse(http.StatusBadRequest, "body is not a JSON object")
	}
	// sentAt and context are recorded when they have the expected type and
	// never refused: the API reads neither to accept a batch.
	_ = json.Unmarshal(top["sentAt"], &req.SentAt)
	_ = json.Unmarshal(top["writeKey"], &req.writeKey)
	_ = unmarshalExact(top["context"], &req.Context)
	var items []json.RawMessage
	if err := json.Unmarshal(top["batch"], &items); err != nil || items == nil {
		return refuse(http.StatusBadRequest, `body has no "batch" array`)
	}
	events := make([]map[string]any, len(items))
	for i, item := range items {
		if err := unmarshalExact(item, &events[i]); err != nil || events[i] == nil {
			return refuse(http.StatusBadRequest, "batch[%d] is not a JSON object", i)
		}
	}
	req.Events = events
	for i, e := range events {
		if typ, _ := e["type"].(string); typ == "" {
			return refuse(http.StatusBadRequest, `batch[%d] has no "type"`, i)
		}
	}
	return nil
}

// unmarshalExact is json.Unmarshal with numbers decoded as json.Number,
// which keeps their text: an integer above 2^53 or a decimal such as 0.1
// survives the record and GET /_requests exactly.
func unmarshalExact(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}
