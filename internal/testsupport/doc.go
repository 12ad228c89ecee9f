// Package testsupport is what the SDK's own test suites share: the root
// package's tests, spool's, the real-socket suite (faults/), the examples'
// and the mock API command's. It is not for users, who have analyticstest;
// it imports no package of the SDK, so that a package's in-package tests
// can import it without a cycle (the root's tests are package analytics,
// spool's package spool), and its types fit the SDK's interfaces by their
// methods alone.
//
//   - Buffer: a bytes.Buffer safe for concurrent use, for the output of a
//     logger, a command or a child process that the test reads as it
//     comes.
//   - SmallDisk (Linux): a small disk that only one directory uses, for
//     the spool on a nearly full disk. Each suite wraps its file system's
//     files with it (spool.FS and the root's test file system differ only
//     in the package that names them).
//   - Outcomes: a Callback that records each event's Success and Failure
//     calls by messageId, and checks that each got exactly one (Split).
//     Generic in the message type, so that it is an analytics.Callback
//     without importing analytics.
//   - LogStore and its slog Handler: every log record kept with every
//     attribute, and every error in it printed in full (RenderError), for
//     the tests that search the logs.
//   - WriteKeyForms: the forms a write key takes on the wire, for the
//     tests that look for it where it must not be.
//   - RSAKey and RSAKeys: RSA keys in the PEM forms WithOAuth reads, for
//     the OAuth tests and the mock's token endpoint.
package testsupport
