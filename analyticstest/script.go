package analyticstest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"time"
)

// Script is everything a Server answers: what ParseScript reads from JSON,
// what Server.Load and POST /_script install.
type Script struct {
	// Responses answer one request each, in order.
	Responses []Answer
	// Rules answer the requests after Responses, in order: the first whose
	// answer is not Answer{Default: true} wins. See Server.Rule.
	Rules []func(Request) Answer
	// Default answers the rest; the zero Answer is 200.
	Default Answer
	// TokenResponses answer one token request each, in order, before the
	// token endpoint judges them (Server.TokenScript; with Server.OAuth).
	TokenResponses []Answer
}

// The JSON forms. Nested answers and rules are kept raw, then decoded one
// by one, so that an error can say which one it is about.
type (
	scriptJSON struct {
		Responses      []json.RawMessage `json:"responses"`
		Rules          []json.RawMessage `json:"rules"`
		Default        json.RawMessage   `json:"default"`
		TokenResponses []json.RawMessage `json:"tokenResponses"`
	}
	answerJSON struct {
		Action  string                  `json:"action"`
		Status  *int                    `json:"status"`
		Headers map[string]headerValues `json:"headers"`
		Body    *string                 `json:"body"`
		DelayMs *float64                `json:"delayMs"`
	}
	ruleJSON struct {
		IfEventsOver *int            `json:"ifEventsOver"`
		Then         json.RawMessage `json:"then"`
	}
)

// Actions of the JSON form; "" is "respond".
const (
	actionRespond         = "respond"
	actionDrop            = "drop"
	actionCloseBeforeRead = "close_before_read"
	actionPartial         = "partial"
)

// maxDelayMs bounds delayMs to a day, far beyond any test, well within a
// time.Duration.
const maxDelayMs = 24 * 60 * 60 * 1000

// ParseScript reads a script from JSON:
//
//	{
//	  "responses": [
//	    {"status": 503},
//	    {"status": 429, "headers": {"Retry-After": "1"}},
//	    {"action": "drop"},
//	    {"action": "close_before_read"},
//	    {"action": "partial"},
//	    {"status": 200, "delayMs": 1500, "body": "{}"}
//	  ],
//	  "rules": [{"ifEventsOver": 10, "then": {"status": 413}}],
//	  "default": {"status": 200},
//	  "tokenResponses": [{"status": 429, "headers": {"X-RateLimit-Reset": "5"}}]
//	}
//
// Every key is optional. An answer has an action: "respond" (the default:
// status, default 200, headers, body), "drop", "close_before_read" or
// "partial" (status, default 200, for the partial status line); any
// action may have a delayMs first. A header value is a string, or an
// array of strings for a repeated field. A rule "ifEventsOver": k answers
// "then" to a batch of more than k events (see MaxEvents). tokenResponses
// answer token requests, one each, before the token endpoint judges them
// (see Server.TokenScript).
//
// Decoding is strict, since a typo in a script would otherwise test
// something else than meant: an unknown key, an unknown action, a status
// outside 100–599, a field that the action does not use, or trailing data
// is an error that says where.
func ParseScript(data []byte) (*Script, error) {
	var sj scriptJSON
	if err := decodeObject(data, &sj); err != nil {
		return nil, scriptError("", err)
	}
	sc := &Script{}
	for i, raw := range sj.Responses {
		a, err := parseAnswer(raw)
		if err != nil {
			return nil, scriptError(fmt.Sprintf("responses[%d]", i), err)
		}
		sc.Responses = append(sc.Responses, a)
	}
	for i, raw := range sj.TokenResponses {
		a, err := parseAnswer(raw)
		if err != nil {
			return nil, scriptError(fmt.Sprintf("tokenResponses[%d]", i), err)
		}
		sc.TokenResponses = append(sc.TokenResponses, a)
	}
	for i, raw := range sj.Rules {
		rule, err := parseRule(raw)
		if err != nil {
			return nil, scriptError(fmt.Sprintf("rules[%d]", i), err)
		}
		sc.Rules = append(sc.Rules, rule)
	}
	if sj.Default != nil {
		a, err := parseAnswer(sj.Default)
		if err != nil {
			return nil, scriptError("default", err)
		}
		sc.Default = a
	}
	return sc, nil
}

func scriptError(where string, err error) error {
	if where == "" {
		return fmt.Errorf("mockapi: script: %w", err)
	}
	return fmt.Errorf("mockapi: script: %s: %w", where, err)
}

// decodeObject decodes one JSON object, strictly, into v.
func decodeObject(data []byte, v any) error {
	if t := bytes.TrimSpace(data); len(t) == 0 || t[0] != '{' {
		return errors.New("want a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describe(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// describe rewords a decoding error in the script's terms: encoding/json
// names Go types ("Go struct field answerJSON.status of type int") where a
// script's author wants JSON ones.
func describe(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		want := "an object"
		switch te.Type.Kind() {
		case reflect.Int:
			want = "an integer"
		case reflect.Float64:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Slice:
			want = "an array"
		}
		return fmt.Errorf("%q must be %s, got %s", te.Field, want, te.Value)
	}
	return errors.New(strings.TrimPrefix(err.Error(), "json: "))
}

func parseRule(raw json.RawMessage) (func(Request) Answer, error) {
	var rj ruleJSON
	if err := decodeObject(raw, &rj); err != nil {
		return nil, err
	}
	if rj.IfEventsOver == nil {
		return nil, errors.New(`"ifEventsOver" is required`)
	}
	if *rj.IfEventsOver < 0 {
		return nil, fmt.Errorf(`"ifEventsOver" %d is negative`, *rj.IfEventsOver)
	}
	if rj.Then == nil {
		return nil, errors.New(`"then" is required`)
	}
	then, err := parseAnswer(rj.Then)
	if err != nil {
		return nil, fmt.Errorf("then: %w", err)
	}
	return MaxEvents(*rj.IfEventsOver, then), nil
}

func parseAnswer(raw json.RawMessage) (Answer, error) {
	var aj answerJSON
	if err := decodeObject(raw, &aj); err != nil {
		return Answer{}, err
	}
	var a Answer
	switch aj.Action {
	case "", actionRespond:
	case actionDrop:
		a.Drop = true
	case actionCloseBeforeRead:
		a.CloseBeforeRead = true
	case actionPartial:
		a.Partial = true
	default:
		return Answer{}, fmt.Errorf("unknown action %q; want %s, %s, %s or %s",
			aj.Action, actionRespond, actionDrop, actionCloseBeforeRead, actionPartial)
	}
	if a.action() != respond {
		// A field that the action ignores is a mistake in the script.
		var unused []string
		if aj.Status != nil && !a.Partial {
			unused = append(unused, "status")
		}
		if aj.Headers != nil {
			unused = append(unused, "headers")
		}
		if aj.Body != nil {
			unused = append(unused, "body")
		}
		if len(unused) > 0 {
			return Answer{}, fmt.Errorf("action %q takes no %s", aj.Action, strings.Join(unused, ", "))
		}
	}
	if aj.Status != nil {
		if *aj.Status < 100 || *aj.Status > 599 {
			return Answer{}, fmt.Errorf("status %d is outside 100–599", *aj.Status)
		}
		a.Status = *aj.Status
	}
	if aj.DelayMs != nil {
		ms := *aj.DelayMs
		if !(ms >= 0 && ms <= maxDelayMs) {
			return Answer{}, fmt.Errorf("delayMs %v is outside 0–%d", ms, maxDelayMs)
		}
		a.Delay = time.Duration(math.Round(ms * float64(time.Millisecond)))
	}
	if aj.Body != nil {
		a.Body = *aj.Body
	}
	if len(aj.Headers) > 0 {
		a.Header = http.Header{}
		for name, values := range aj.Headers {
			if err := checkHeader(name, values); err != nil {
				return Answer{}, err
			}
			for _, v := range values {
				a.Header.Add(name, v)
			}
		}
	}
	return a, nil
}

// headerValues is a header's value in JSON: a string, or an array of
// strings for a field sent on several lines.
type headerValues []string

// UnmarshalJSON accepts a string or an array of strings.
func (h *headerValues) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return errors.New("a header value is a string or an array of strings, not null")
	}
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*h = headerValues{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(data, &many); err != nil || many == nil {
		return fmt.Errorf("a header value is a string or an array of strings, not %s", data)
	}
	*h = many
	return nil
}

// checkHeader rejects what net/http would not send as written: a name
// that is not an RFC 9110 token, a value with a line break or NUL, or no
// value at all.
func checkHeader(name string, values []string) error {
	if name == "" || strings.IndexFunc(name, func(r rune) bool { return !isTokenChar(r) }) >= 0 {
		return fmt.Errorf("header name %q is not a valid field name", name)
	}
	if len(values) == 0 {
		return fmt.Errorf("header %s has no value", name)
	}
	for _, v := range values {
		if strings.ContainsAny(v, "\r\n\x00") {
			return fmt.Errorf("header %s: value %q has a line break or NUL", name, v)
		}
	}
	return nil
}

func isTokenChar(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	}
	return strings.ContainsRune("!#$%&'*+-.^_`|~", r)
}
