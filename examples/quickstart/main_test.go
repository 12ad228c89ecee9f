package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestRun(t *testing.T) {
	// Deferred first, so it runs last: after run has closed the client and
	// the listener, no goroutine of either may be left.
	defer goleak.VerifyNone(t)

	var out bytes.Buffer
	if err := run(500, &out); err != nil {
		t.Fatalf("run(500) = %v; output:\n%s", err, &out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^delivered \(callback successes\) +500$`),
		regexp.MustCompile(`(?m)^failed \(callback failures\) +0$`),
		regexp.MustCompile(`(?m)^server: distinct messageIds +500$`),
		regexp.MustCompile(`(?m)^retries, backoff path +3$`),
		regexp.MustCompile(`(?m)^retries, rate-limit path +1$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("output does not match %s:\n%s", want, &out)
		}
	}
	if !strings.Contains(out.String(), "verdict: all 500 events delivered exactly once") {
		t.Errorf("no success verdict in the output:\n%s", &out)
	}
}

func TestRunRejectsNoEvents(t *testing.T) {
	if err := run(0, &bytes.Buffer{}); err == nil {
		t.Error("run(0) = nil, want an error")
	}
}
