package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	analytics "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/internal/decimal"
)

// input is a decoded and fully validated input document: running it can
// only fail in the SDK, never on the input.
type input struct {
	writeKey  string
	apiHost   *string // nil means the SDK's default endpoint
	sequences []sequence
	config    settings
}

// sequence is a group of events enqueued together after a delay.
type sequence struct {
	delay  time.Duration // waited before the first event, after the previous sequence
	events []event
}

// event is one message to enqueue, with the JSON path it came from so that
// a refusal can be logged against the input.
type event struct {
	path string
	msg  analytics.Message
}

// total is the number of events in the input.
func (in *input) total() int {
	n := 0
	for _, s := range in.sequences {
		n += len(s.events)
	}
	return n
}

// InputError is bad input: what is wrong, and where. Path is a JSON path
// such as sequences[0].events[2].userId; it is empty when the problem is
// the document as a whole (not JSON, trailing data).
type InputError struct {
	Path   string
	Reason string
}

func (e *InputError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

func inputErr(path, format string, args ...any) error {
	return &InputError{Path: path, Reason: fmt.Sprintf(format, args...)}
}

// wantErr is the error for a value of the wrong JSON type.
func wantErr(path, want string, got any) error {
	return inputErr(path, "want %s, got %s", want, kindOf(got))
}

// kindOf names the JSON type of a value decoded with UseNumber.
func kindOf(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v) // not reached for decoded JSON
}

// join appends a member name to a path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// warnings collects one warning per distinct message.
type warnings struct {
	seen map[string]bool
	list []string
}

// unknown warns once about each unknown member name of one kind of object
// (top-level key, event field, ...), naming the object it was first seen
// in. The name is quoted: it is arbitrary input.
func (w *warnings) unknown(kind, key, in string) {
	id := kind + "\x00" + key
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	if w.seen[id] {
		return
	}
	w.seen[id] = true
	msg := fmt.Sprintf("ignoring unknown %s %q", kind, key)
	if in != "" {
		msg += " (first in " + in + ")"
	}
	w.list = append(w.list, msg)
}

// sortedKeys gives warnings a stable order: Go maps have none.
func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var topLevelKeys = []string{"writeKey", "apiHost", "sequences", "config"}

// decodeInput decodes and validates a whole input document. It returns an
// *InputError for bad input, and warnings about members it ignored.
func decodeInput(data []byte) (*input, []string, error) {
	doc, err := parseJSON(data)
	if err != nil {
		return nil, nil, err
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, nil, inputErr("", "want a JSON object at the top level, got %s", kindOf(doc))
	}
	var w warnings
	for _, k := range sortedKeys(root) {
		if !slices.Contains(topLevelKeys, k) {
			w.unknown("top-level key", k, "")
		}
	}

	in := &input{}
	// The write key is checked but never echoed: it is a secret.
	switch v := root["writeKey"].(type) {
	case string:
		if v == "" {
			return nil, nil, inputErr("writeKey", "required, got an empty string")
		}
		in.writeKey = v
	default:
		if _, present := root["writeKey"]; !present {
			return nil, nil, inputErr("writeKey", "required")
		}
		return nil, nil, wantErr("writeKey", "a string", v)
	}
	// apiHost is checked by New (an absolute http or https URL), whose
	// error names the option; even "" goes to New, to be refused rather
	// than silently replaced by the real Segment endpoint.
	switch v := root["apiHost"].(type) {
	case nil:
	case string:
		in.apiHost = &v
	default:
		return nil, nil, wantErr("apiHost", "a string", v)
	}

	seqs, present := root["sequences"]
	list, ok := seqs.([]any)
	switch {
	case !present:
		return nil, nil, inputErr("sequences", "required")
	case !ok:
		return nil, nil, wantErr("sequences", "an array", seqs)
	}
	for i, s := range list {
		seq, err := decodeSequence(s, index("sequences", i), &w)
		if err != nil {
			return nil, nil, err
		}
		in.sequences = append(in.sequences, seq)
	}

	if cfg, ok := root["config"]; ok && cfg != nil {
		obj, ok := cfg.(map[string]any)
		if !ok {
			return nil, nil, wantErr("config", "an object", cfg)
		}
		if in.config, err = decodeSettings(obj, "config", &w); err != nil {
			return nil, nil, err
		}
	}
	return in, w.list, nil
}

// parseJSON decodes exactly one JSON value, numbers kept as json.Number so
// that no integer or duration is rounded through float64.
func parseJSON(data []byte) (any, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, inputErr("", "the input is empty, want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, inputErr("", "not JSON: %s", jsonErrorText(err, data))
	}
	// Decode stops after the first value: anything but white space after
	// it is an input the harness did not mean.
	var extra any
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, inputErr("", "trailing data after the JSON value at byte %d", dec.InputOffset())
	}
	return doc, nil
}

// jsonErrorText adds the byte offset that encoding/json keeps out of its
// messages.
func jsonErrorText(err error, data []byte) string {
	var syn *json.SyntaxError
	if errors.As(err, &syn) {
		return fmt.Sprintf("%v (at byte %d)", syn, syn.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Sprintf("unexpected end of input (at byte %d)", len(data))
	}
	return err.Error()
}

var sequenceKeys = []string{"delayMs", "events"}

func decodeSequence(v any, path string, w *warnings) (sequence, error) {
	obj, ok := v.(map[string]any)
	if !ok {
		return sequence{}, wantErr(path, "an object", v)
	}
	for _, k := range sortedKeys(obj) {
		if !slices.Contains(sequenceKeys, k) {
			w.unknown("sequence key", k, path)
		}
	}
	var seq sequence
	if d, ok := obj["delayMs"]; ok && d != nil {
		p := join(path, "delayMs")
		n, ok := d.(json.Number)
		if !ok {
			return sequence{}, wantErr(p, "a non-negative number", d)
		}
		if dec, ok := decimal.Parse(n.String()); ok && dec.Negative() {
			return sequence{}, inputErr(p, "want a non-negative number, got %s", short(n.String()))
		}
		delay, err := parseDuration(n, millisecond, p)
		if err != nil {
			return sequence{}, err
		}
		seq.delay = delay
	}

	p := join(path, "events")
	evs, present := obj["events"]
	list, ok := evs.([]any)
	switch {
	case !present:
		return sequence{}, inputErr(p, "required")
	case !ok:
		return sequence{}, wantErr(p, "an array", evs)
	}
	for i, e := range list {
		ev, err := decodeEvent(e, index(p, i), w)
		if err != nil {
			return sequence{}, err
		}
		seq.events = append(seq.events, ev)
	}
	return seq, nil
}

// optString returns obj[key] as a string; absent or null is "".
func optString(obj map[string]any, path, key string) (string, error) {
	switch v := obj[key].(type) {
	case nil:
		return "", nil
	case string:
		return v, nil
	default:
		return "", wantErr(join(path, key), "a string", v)
	}
}

// optObject returns obj[key] as an object; absent or null is nil.
func optObject(obj map[string]any, path, key string) (map[string]any, error) {
	switch v := obj[key].(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return v, nil
	default:
		return nil, wantErr(join(path, key), "an object", v)
	}
}

// short keeps echoed input values to a readable length.
func short(s string) string {
	const max = 40
	if len(s) <= max {
		return s
	}
	return s[:max] + "..."
}
