package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/goleak"

	analytics "github.com/dualpath/analytics-go"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// logLines decodes the JSON log lines of the output.
func logLines(t *testing.T, out string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	for line := range strings.Lines(out) {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		lines = append(lines, m)
	}
	return lines
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), []string{"-events", "25"}, &out); err != nil {
		t.Fatalf("run = %v; output:\n%s", err, &out)
	}

	// The callback's log: one line per failed event, with the reason
	// matched by errors.Is and the details found by errors.As.
	failures := map[string]int{}
	retryWarnings := 0
	for _, l := range logLines(t, out.String()) {
		switch l["msg"] {
		case "event not delivered":
			key := fmt.Sprintf("%v status=%v attempts=%v", l["reason"], l["status"], l["attempts"])
			failures[key]++
			if id, _ := l["message_id"].(string); len(id) != 36 {
				t.Errorf("failure logged without its messageId: %v", l)
			}
		case "analytics: upload attempt failed, will retry": // the SDK's own, through WithLogger
			retryWarnings++
		}
	}
	want := map[string]int{
		"fatal_status status=400 attempts=1":      5,
		"retries_exhausted status=503 attempts=3": 5,
	}
	if fmt.Sprint(failures) != fmt.Sprint(want) {
		t.Errorf("failures logged: %v, want %v", failures, want)
	}
	if retryWarnings != 4 {
		t.Errorf("%d retry warnings from the SDK, want 4 (two per 503-answered batch)", retryWarnings)
	}

	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  delivered \(Success calls\) +15$`),
		regexp.MustCompile(`(?m)^  failed \(Failure calls\) +10$`),
		regexp.MustCompile(`(?m)^    fatal_status +5$`),
		regexp.MustCompile(`(?m)^    retries_exhausted +5$`),
		regexp.MustCompile(`(?m)^  HTTP requests +9 \(4 backoff retries\)$`),
	} {
		if !want.MatchString(out.String()) {
			t.Errorf("output does not match %s:\n%s", want, &out)
		}
	}

	// What /debug/vars served is client.Stats() as JSON.
	st := statsFromOutput(t, out.String())
	if st.Enqueued != 25 || st.Delivered != 15 || st.Failed.FatalStatus != 5 || st.Failed.RetriesExhausted != 5 || st.Attempts != 9 {
		t.Errorf("/debug/vars analytics = %+v", st)
	}

	// A second run in the same process: expvar.Publish would panic on the
	// name "analytics" a second time; the variable now shows the new client.
	out.Reset()
	if err := run(context.Background(), []string{"-events", "10"}, &out); err != nil {
		t.Fatalf("second run = %v; output:\n%s", err, &out)
	}
	st = statsFromOutput(t, out.String())
	if st.Enqueued != 10 || st.Delivered != 5 || st.Failed.FatalStatus != 5 {
		t.Errorf("second run: /debug/vars analytics = %+v, want the second client's", st)
	}
}

// statsFromOutput decodes the "analytics" variable that run printed.
func statsFromOutput(t *testing.T, out string) analytics.Stats {
	t.Helper()
	_, after, ok := strings.Cut(out, "/debug/vars, \"analytics\":\n")
	if !ok {
		t.Fatalf("no /debug/vars in the output:\n%s", out)
	}
	var st analytics.Stats
	if err := json.Unmarshal([]byte(after), &st); err != nil {
		t.Fatalf("decoding the analytics variable: %v\n%s", err, after)
	}
	return st
}

func TestReasonOf(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&analytics.BatchError{Reason: analytics.ErrFatalStatus, Attempts: 1, Err: &analytics.HTTPError{StatusCode: 400}}, "fatal_status"},
		{&analytics.BatchError{Reason: analytics.ErrRetriesExhausted, Attempts: 11}, "retries_exhausted"},
		{&analytics.BatchError{Reason: analytics.ErrBackoffBudgetExceeded}, "retry_budget_spent"},
		{&analytics.BatchError{Reason: analytics.ErrRateLimitBudgetExceeded}, "retry_budget_spent"},
		{&analytics.BatchError{Reason: analytics.ErrRedirect}, "redirect"},
		{&analytics.BatchError{Reason: fmt.Errorf("%w: %w", analytics.ErrShutdown, context.DeadlineExceeded)}, "shutdown_deadline"},
		{errors.New("something else"), "other"},
	} {
		if got := reasonOf(tc.err); got != tc.want {
			t.Errorf("reasonOf(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
