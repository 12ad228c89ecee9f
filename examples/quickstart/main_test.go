package main

import (
	"bytes"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestRun(t *testing.T) {
	// Deferred first, so it runs last: after run has closed the client and
	// the listener, no goroutine of either may be left.
	defer goleak.VerifyNone(t)

	var out bytes.Buffer
	require.NoError(t, run(500, &out), "run(500); output:\n%s", &out)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^delivered \(callback successes\) +500$`),
		regexp.MustCompile(`(?m)^failed \(callback failures\) +0$`),
		regexp.MustCompile(`(?m)^server: distinct messageIds +500$`),
		regexp.MustCompile(`(?m)^retries, backoff path +3$`),
		regexp.MustCompile(`(?m)^retries, rate-limit path +1$`),
	} {
		assert.Regexp(t, want, out.String(), "output")
	}
	assert.Contains(t, out.String(), "verdict: all 500 events delivered exactly once", "the verdict in the output")
}

func TestRunRejectsNoEvents(t *testing.T) {
	assert.Error(t, run(0, &bytes.Buffer{}), "run(0)")
}
