// Package analyticstest is the SDK's test support, as net/http/httptest is
// net/http's: a scriptable mock of the Segment HTTP Tracking API
// (POST /v1/batch), the mock API, for three users:
//
//   - the e2e suite, which drives it from another process or language over
//     HTTP: GET /_requests lists what it received, POST /_script loads a
//     JSON script (see ParseScript), POST /_reset starts afresh (over a
//     socket, only with a loopback Host and no cross-site Origin: see
//     Server.Public);
//   - local development: `go run ./analyticstest/cmd/mockapi`, point an app's
//     endpoint at the URL it prints, and watch each event arrive on stdout;
//   - Go tests of an application that uses the SDK, and the SDK's own,
//     over a real socket on 127.0.0.1 (Start) or in memory
//     (RoundTrip, Client), which has no socket and so runs inside a
//     testing/synctest bubble on a fake clock.
//
// A Server answers each request with the next Answer of its script; once
// the script is used up, with its rules, then its default (200 unless
// set). Besides statuses, headers and bodies, an Answer can delay, drop the
// connection after reading the request, close it before reading, or write
// a partial response: the failures an SDK's retry loop has to survive. A
// handler in front of the Server, a test's own proxy, can pick a request's
// answer itself (ServeAnswer), by the connection it came on, say.
//
// # Refusals
//
// A Server refuses what the real API refuses, so that a misconfiguration
// fails in a local test instead of in production. Before the script is
// asked, and in this order, a request gets
//
//   - 404 if its path is not /v1/batch (BatchPath): an endpoint given as
//     http://host/v1/batch posts to /v1/batch/v1/batch;
//   - 405 if its method is not POST (with Allow: POST);
//   - 401 without an Authorization header of Basic credentials whose user
//     name, the write key, is not empty; any password is accepted;
//   - 413 if its body is over 500,000 bytes after gzip decoding: the limit
//     is the SDK's own (analytics.MaxBatchBytes), measured as the SDK
//     measures it, so a body the SDK sends is never refused for its size;
//   - 400 if its gzip does not decode (Content-Encoding gzip, in any
//     case; identity or none means a plain body; any other coding is
//     refused), if the body is not a JSON object with a "batch" array, or
//     if an item of the batch is not an object with a "type" string.
//
// An item without a messageId is accepted, as the real API accepts it
// (it assigns one). A batch of more than 2,500 events is not refused:
// the real API answers 200 and rejects each event past the 2,500th
// (segment-docs, HTTP API source, "Common reasons events are not
// accepted"), so the Server, when it answers 2xx, records the request
// whole with Rejected, the number of its last events rejected; Delivered
// leaves them out and Server.Rejected counts them, so that a test sees
// what a client that trusts the 200 loses. The SDK never sends more than
// 2,500 events a batch. Each refusal has a JSON body, as have the errors of
// the control API:
//
//	{"code": "invalid_request", "message": "batch[2] has no \"type\""}
//
// with code invalid_request (400), unauthorized (401), not_found (404),
// method_not_allowed (405), payload_too_large (413) or internal_error
// (500), and a message that says what is wrong with this request. The
// request is recorded with the status of the refusal and its message as
// Err; it takes no answer from the script, so the script answers the
// requests the API would take, in order. An Answer with CloseBeforeRead
// that is next when the headers have arrived closes the connection before
// the body is read: then only the path, method and credentials are
// checked. Server.Lenient turns the refusals off.
//
// # OAuth 2.0
//
// Given an OAuth app (Server.OAuth: its client id, key id and public key,
// the audience, the life of its tokens, a skew of its clock), the Server
// is also the source's authorization server, as Segment's is: POST
// TokenPath judges a client's JWT and issues short-lived opaque tokens,
// and every batch then needs a valid one (401 otherwise), with the write
// key in its body. TokenScript scripts its failures (a 503, a 429 with
// X-RateLimit-Reset), RevokeTokens revokes what it issued, and
// TokenRequests lists what it was asked; see Server.OAuth.
//
// The mock is a referee: it decodes every batch (gzip or not) and records
// it with the status it answered, so a test can check that each messageId
// was delivered exactly once. Numbers in the recorded events are kept as
// json.Number, in Go and in GET /_requests, so an integer above 2^53 or a
// decimal arrives exactly as sent. Of the SDK it shares only the two
// limits above, 500,000 bytes a body and 2,500 events a batch, read from
// the constants the SDK reads (analytics.MaxBatchBytes, MaxBatchEvents);
// what it checks, it checks with code of its own.
package analyticstest
