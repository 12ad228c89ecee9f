package analyticstest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/dualpath/analytics-go/internal/defaults"
)

// BatchPath is the one tracking API path the Server answers from its
// script: the SDK posts each batch to its endpoint + BatchPath.
const BatchPath = "/v1/batch"

// maxBatchBytes is the tracking API's limit on a batch body after gzip
// decoding, the SDK's own MaxBatchBytes (docs/SPEC.md §3): a body the SDK
// may send is never refused for its size.
const maxBatchBytes = defaults.MaxBatchBytes

// maxBatchEvents is the most events of a batch the tracking API takes:
// past them it answers 200 but rejects the events (Request.Rejected). The
// SDK never sends more.
const maxBatchEvents = defaults.MaxBatchEvents

// maxReadBytes bounds what the Server reads of any request body, before
// and after gzip decoding, so that a runaway client or a gzip bomb cannot
// exhaust the memory of the process that runs the mock. A Lenient Server
// reads bodies up to this size.
const maxReadBytes = 64 << 20

// refusal is the answer of the real tracking API to a request it does not
// take, whatever the script says. It is recorded as the request's Err.
type refusal struct {
	status  int
	message string
	header  http.Header
}

func (f *refusal) Error() string { return f.message }

func refuse(status int, format string, args ...any) *refusal {
	return &refusal{status: status, message: fmt.Sprintf(format, args...)}
}

// answer is the refusal as it goes on the wire: the status and a JSON
// error body (see errorBody).
func (f *refusal) answer() Answer {
	h := http.Header{"Content-Type": {"application/json"}}
	for k, v := range f.header {
		h[k] = v
	}
	return Answer{Status: f.status, Header: h, Body: errorBody(f.status, f.message)}
}

// errorBody is the body of every error the Server itself writes, the
// refusals and the control API's errors alike:
//
//	{"code": "invalid_request", "message": "body is not JSON: ..."}
//
// The code names the status (see errorCode); the message says what is
// wrong with this request.
func errorBody(status int, message string) string {
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{errorCode(status), message}) // two strings: never fails
	return string(b)
}

// errorCode is the code of errorBody for a status.
func errorCode(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request"
	case http.StatusUnauthorized:
		return "unauthorized"
	case http.StatusForbidden:
		return "forbidden"
	case http.StatusNotFound:
		return "not_found"
	case http.StatusMethodNotAllowed:
		return "method_not_allowed"
	case http.StatusRequestEntityTooLarge:
		return "payload_too_large"
	}
	return "internal_error"
}

// writeError writes an errorBody with that status.
func writeError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(errorBody(status, message)))
}

// checkHead returns the refusal that the request's line and headers earn,
// if any: 404 for a path other than BatchPath, 405 for a method other than
// POST, 401 without Basic credentials whose user name (the write key) is
// not empty, unless oauth (the Server checks a Bearer token instead). The
// password is not checked: the SDK sends none.
func checkHead(r *http.Request, oauth bool) *refusal {
	if r.URL.Path != BatchPath {
		f := refuse(http.StatusNotFound, "no tracking API path %s: the API answers POST %s", r.URL.Path, BatchPath)
		if strings.HasSuffix(r.URL.Path, BatchPath) {
			f.message += "; an endpoint is the scheme and host only, the SDK adds " + BatchPath
		}
		return f
	}
	if r.Method != http.MethodPost {
		f := refuse(http.StatusMethodNotAllowed, "%s takes POST, not %s", BatchPath, r.Method)
		f.header = http.Header{"Allow": {http.MethodPost}}
		return f
	}
	if user, _, ok := r.BasicAuth(); !oauth && (!ok || user == "") {
		f := refuse(http.StatusUnauthorized, "no write key: want an Authorization header of Basic base64(writeKey + \":\")")
		f.header = http.Header{"Www-Authenticate": {`Basic realm="tracking API"`}}
		return f
	}
	return nil
}
