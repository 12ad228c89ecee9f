// Package testsupport is what the SDK's own test suites share: the root
// package's tests, spool's, and the real-socket suite (faults/). It is
// not for users, who have analyticstest; it imports no package of the
// SDK, so that a package's in-package tests can import it without a
// cycle (the root's tests are package analytics, spool's package spool),
// and its types fit the SDK's interfaces by their methods alone.
//
//   - SmallDisk (Linux): a small disk that only one directory uses, for
//     the spool on a nearly full disk. Each suite wraps its file system's
//     files with it (spool.FS and the root's test file system differ only
//     in the package that names them).
package testsupport
