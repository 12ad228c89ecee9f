package analytics

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/consumer"
)

// ownError hands users this package's error types with the same texts and
// the same errors.Is answers as the errors package consumer reported.
func TestOwnErrorKeepsTextsAndMatches(t *testing.T) {
	httpErr := &consumer.HTTPError{StatusCode: 503, Body: "busy", RetryAfter: 2 * time.Second, Location: "https://x.test/", Method: "GET"}
	transportErr := &consumer.TransportError{Phase: consumer.PhaseWritten, Err: io.ErrUnexpectedEOF}
	cases := map[string]*consumer.BatchError{
		"an HTTP error":      {Reason: ErrRetriesExhausted, Attempts: 11, Err: httpErr},
		"a transport error":  {Reason: ErrBackoffBudgetExceeded, Attempts: 1, Err: transportErr},
		"no attempt":         {Reason: shutdownCause(context.DeadlineExceeded)},
		"an unbuilt request": {Reason: ErrFatalStatus, Attempts: 1, Err: errors.New("net/http: invalid method")},
	}
	sentinels := []error{ErrRetriesExhausted, ErrBackoffBudgetExceeded, ErrRateLimitBudgetExceeded, ErrFatalStatus,
		ErrRedirect, ErrShutdown, context.DeadlineExceeded, io.ErrUnexpectedEOF}
	for name, theirs := range cases {
		t.Run(name, func(t *testing.T) {
			ours := ownError(theirs)
			assert.Equal(t, theirs.Error(), ours.Error(), "the text")
			for _, s := range sentinels {
				assert.Equal(t, errors.Is(theirs, s), errors.Is(ours, s), "errors.Is(_, %q)", s)
			}
			var be *BatchError
			require.ErrorAs(t, ours, &be)
			assert.Equal(t, theirs.Reason, be.Reason, "Reason")
			assert.Equal(t, theirs.Attempts, be.Attempts, "Attempts")
		})
	}

	ours := ownError(cases["an HTTP error"])
	var he *HTTPError
	require.ErrorAs(t, ours, &he)
	assert.Equal(t, HTTPError(*httpErr), *he, "the HTTPError's fields")
	assert.Equal(t, httpErr.Error(), he.Error(), "the HTTPError's text")

	ours = ownError(cases["a transport error"])
	var te *TransportError
	require.ErrorAs(t, ours, &te)
	assert.Equal(t, PhaseWritten, te.Phase)
	assert.Same(t, io.ErrUnexpectedEOF, te.Err, "the HTTP client's error")
	assert.True(t, te.Written(), "Written")
	assert.Equal(t, transportErr.Error(), te.Error(), "the TransportError's text")

	assert.NoError(t, ownError(nil), "no error")
}

func TestPhasesAreConsumers(t *testing.T) {
	for p, theirs := range map[Phase]consumer.Phase{
		PhaseNotConnected: consumer.PhaseNotConnected,
		PhaseConnected:    consumer.PhaseConnected,
		PhaseWritten:      consumer.PhaseWritten,
		PhaseResponding:   consumer.PhaseResponding,
		0:                 0,
	} {
		assert.Equal(t, theirs.String(), p.String(), "the name of %d", int(p))
		assert.Equal(t, theirs.Written(), p.Written(), "Written of %s", p)
	}
}
