// Package analyticstest is the SDK's test support, as net/http/httptest is
// net/http's: a scriptable mock of the Segment HTTP Tracking API
// (POST /v1/batch), the mock API, for three users:
//
//   - the e2e suite, which drives it from another process or language over
//     HTTP: GET /_requests lists what it received, POST /_script loads a
//     JSON script (see ParseScript), POST /_reset starts afresh;
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
// a partial response: the failures an SDK's retry loop has to survive.
//
// The mock is a referee: it decodes every batch (gzip or not) and records
// it with the status it answered, so a test can check that each messageId
// was delivered exactly once. It imports nothing of the SDK.
package analyticstest
