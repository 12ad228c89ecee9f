package main

import (
	"encoding/json"
	"slices"
	"testing"
)

func scanIDs(t *testing.T, body string) ([]string, error) {
	t.Helper()
	var got []string
	err := batchIDs([]byte(body), func(raw []byte) { got = append(got, string(raw)) })
	return got, err
}

func TestBatchIDs(t *testing.T) {
	for _, tc := range []struct {
		body string
		want []string
	}{
		{`{"batch":[{"messageId":"a","event":"E","properties":{"x":[1,2.5e3,-0.1,true,null]}},{"messageId":"b"}],"sentAt":"t","context":{}}`, []string{"a", "b"}},
		{`{"api_key":"k","batch":[{"uuid":"u1","properties":{"$lib":"posthog-go"}},{"type":"capture","uuid":"u2"}]}`, []string{"u1", "u2"}},
		{` { "batch" : [ { "uuid" : "u" , "messageId" : "m" } ] } `, []string{"m"}},
		{`{"batch":[{"event":"no id"},"x",{"messageId":"q\"\u00e9"}]}`, []string{"", "", `q\"\u00e9`}},
		{`{"batch":[]}`, nil},
		{`{}`, nil},
	} {
		got, err := scanIDs(t, tc.body)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("batchIDs(%s) = %q, %v; want %q", tc.body, got, err, tc.want)
		}
	}
}

func TestBatchIDsRejects(t *testing.T) {
	for _, body := range []string{
		``, `[]`, `{"batch":[}`, `{"batch":[{"messageId":"a"}]`, `{"batch":[1,]}`, `{"a":01}`, `{"a":1.}`,
		`{"a":"\x"}`, `{"a":"\u12"}`, "{\"a\":\"\n\"}", `{"a":tru}`, `{"a":1} x`, `{"a" 1}`, `{a:1}`,
	} {
		if _, err := scanIDs(t, body); err == nil {
			t.Errorf("batchIDs(%q) accepted invalid JSON", body)
		}
	}
}

// FuzzBatchIDs checks the scanner's syntax against encoding/json for
// bodies that are objects.
func FuzzBatchIDs(f *testing.F) {
	f.Add(`{"batch":[{"messageId":"a","n":-1.5E+2,"o":{"p":[null,false]}}]}`)
	f.Add(`{"api_key":"k","batch":[{"uuid":"u"}]}`)
	f.Fuzz(func(t *testing.T, body string) {
		err := batchIDs([]byte(body), func([]byte) {})
		valid := json.Valid([]byte(body))
		if err == nil && !valid {
			t.Fatalf("accepted what encoding/json rejects: %q", body)
		}
		var obj map[string]json.RawMessage
		if valid && json.Unmarshal([]byte(body), &obj) == nil && obj != nil && err != nil {
			t.Fatalf("rejected a valid object: %q: %v", body, err)
		}
	})
}
