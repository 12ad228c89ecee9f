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

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q", line)
		lines = append(lines, m)
	}
	return lines
}

func TestRun(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, run(context.Background(), []string{"-events", "25"}, &out), "run; output:\n%s", &out)

	// The callback's log: one line per failed event, with the reason
	// matched by errors.Is and the details found by errors.As.
	failures := map[string]int{}
	retryWarnings := 0
	for _, l := range logLines(t, out.String()) {
		switch l["msg"] {
		case "event not delivered":
			key := fmt.Sprintf("%v status=%v attempts=%v", l["reason"], l["status"], l["attempts"])
			failures[key]++
			id, _ := l["message_id"].(string)
			if u, err := uuid.Parse(id); assert.NoError(t, err, "messageId of the failure logged: %v", l) {
				assert.Equal(t, uuid.Version(4), u.Version(), "version of messageId %q", id)
				assert.Equal(t, uuid.RFC4122, u.Variant(), "variant of messageId %q", id)
				assert.Equal(t, u.String(), id, "messageId %q in the canonical form", id)
			}
		case "analytics: upload attempt failed, will retry": // the SDK's own, through WithLogger
			retryWarnings++
		}
	}
	want := map[string]int{
		"fatal_status status=400 attempts=1":      5,
		"retries_exhausted status=503 attempts=3": 5,
	}
	assert.Equal(t, want, failures, "failures logged")
	assert.Equal(t, 4, retryWarnings, "retry warnings from the SDK: two per 503-answered batch")

	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^  delivered \(Success calls\) +15$`),
		regexp.MustCompile(`(?m)^  failed \(Failure calls\) +10$`),
		regexp.MustCompile(`(?m)^    fatal_status +5$`),
		regexp.MustCompile(`(?m)^    retries_exhausted +5$`),
		regexp.MustCompile(`(?m)^  HTTP requests +9 \(4 backoff retries\)$`),
	} {
		assert.Regexp(t, want, out.String(), "output")
	}

	// What /debug/vars served is client.Stats() as JSON.
	st := statsFromOutput(t, out.String())
	assert.Equal(t, int64(25), st.Enqueued, "/debug/vars analytics: enqueued")
	assert.Equal(t, int64(15), st.Delivered, "/debug/vars analytics: delivered")
	assert.Equal(t, int64(5), st.Failed.FatalStatus, "/debug/vars analytics: failed, fatal status")
	assert.Equal(t, int64(5), st.Failed.RetriesExhausted, "/debug/vars analytics: failed, retries exhausted")
	assert.Equal(t, int64(9), st.Attempts, "/debug/vars analytics: attempts")

	// A second run in the same process: expvar.Publish would panic on the
	// name "analytics" a second time; the variable now shows the new client.
	out.Reset()
	require.NoError(t, run(context.Background(), []string{"-events", "10"}, &out), "second run; output:\n%s", &out)
	st = statsFromOutput(t, out.String())
	assert.Equal(t, int64(10), st.Enqueued, "second run: /debug/vars analytics (the second client's): enqueued")
	assert.Equal(t, int64(5), st.Delivered, "second run: /debug/vars analytics (the second client's): delivered")
	assert.Equal(t, int64(5), st.Failed.FatalStatus, "second run: /debug/vars analytics (the second client's): failed, fatal status")
}

// statsFromOutput decodes the "analytics" variable that run printed.
func statsFromOutput(t *testing.T, out string) analytics.Stats {
	t.Helper()
	_, after, ok := strings.Cut(out, "/debug/vars, \"analytics\":\n")
	require.True(t, ok, "/debug/vars in the output:\n%s", out)
	var st analytics.Stats
	require.NoError(t, json.Unmarshal([]byte(after), &st), "decoding the analytics variable:\n%s", after)
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
		assert.Equal(t, tc.want, reasonOf(tc.err), "reasonOf(%v)", tc.err)
	}
}
