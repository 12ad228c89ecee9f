// Package faults tests the SDK over real sockets against the ways a
// tracking API behind load balancers breaks connections. It has no code of
// its own: everything is in its tests, which use only the SDK's public API
// (package analytics, and analytics.CheckRedirect as docs/httpclient.md
// tells users to).
//
// The tests run an HTTPS tracking API on 127.0.0.1 with a test CA (see
// server_test.go): the analyticstest mock, which checks, decodes, records
// and answers each request, behind a fault layer of the tests' own, the
// network and proxies in front of the API. By script, one answer per
// request, it can give any status, or read the whole request and then close
// the TCP connection without a TLS close_notify, close it cleanly, reset it
// (RST), write a partial header block, stall past the client's request
// timeout, close or reset a connection before the TLS handshake, kill a
// pooled keep-alive connection just as the next request goes out on it,
// reset while a large body is being written, or answer 413 before reading
// the body; over HTTP/2 the connection faults become stream resets. Every
// test counts what the server received (requests, bodies, messageIds,
// X-Retry-Count) and checks the final outcome of every event and the
// failure phase; none matches an error's text, whose spelling differs
// across Go versions and platforms. None reads a clock to judge the client
// either, or takes the order in which the server recorded requests for the
// order the client sent them (on a loaded machine a handler may run late):
// a batch's attempts are put in order by their X-Retry-Count.
//
// It is the SDK's one suite of the client over real sockets: what the
// client puts on the wire over plain HTTP with its own HTTP client
// (connection reuse, headers and gzip, the redirect rule: wire_test.go)
// runs against the analyticstest mock alone; the rest against the mock
// behind the fault layer, which breaks connections in ways the mock does
// not (before the TLS handshake, without close_notify, with a reset, on
// reuse) and gives it each request's answer (analyticstest's
// Server.ServeAnswer). Unit tests stay in each package; the e2e suite
// (e2e/) checks the same contract through the conformance CLI. What this
// suite shares with the SDK's other tests (the callback recorder, the log
// store) is in internal/testsupport.
//
// Besides the fault cases: concurrency and lifecycle properties of Enqueue,
// Close and Shutdown, recovered callback panics, a randomized test of fault
// scripts (replay one with -faults.seed=N or FAULTS_SEED=N), the write
// key's absence from every log line, error and panic, and the custom CA and
// proxy setup of docs/httpclient.md (example_test.go).
//
//	go test -race -count=1 ./faults/
package faults
