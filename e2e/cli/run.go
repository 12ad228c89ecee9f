package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	analytics "github.com/dualpath/analytics-go"
)

// result is the one line the CLI prints (docs/SPEC.md §9).
type result struct {
	Success     bool     `json:"success"`
	SentBatches int64    `json:"sentBatches"`
	Delivered   int64    `json:"delivered"`
	Failed      int64    `json:"failed"`
	Errors      []string `json:"errors"`
	// Error is the outcome as one string, for a harness that reads one:
	// nil (null) on success, else summary's text.
	Error *string `json:"error"`
}

// send runs the input through a client: each sequence after its delay,
// then Close, which returns once every batch has its final outcome. The
// error is New's, for a configuration it refused; then nothing was sent.
func send(in *input, logger *slog.Logger) (result, error) {
	var t tally
	opts := in.config.options()
	if in.apiHost != nil {
		opts = append(opts, analytics.WithEndpoint(*in.apiHost))
	}
	// Close waits for every final outcome, however long the retry budgets
	// allow: the harness bounds the run itself.
	opts = append(opts, analytics.WithLogger(logger), analytics.WithCallback(&t), analytics.WithCloseTimeout(0))
	client, err := analytics.New(in.writeKey, opts...)
	if err != nil {
		return result{}, err
	}

	for _, seq := range in.sequences {
		if seq.delay > 0 {
			time.Sleep(seq.delay)
		}
		for _, ev := range seq.events {
			if err := client.Enqueue(ev.msg); err != nil {
				// A refused event gets no callback: count it here, and go
				// on with the others.
				logger.Warn("event not enqueued", "input", ev.path, "error", err)
				t.Failure(nil, err)
			}
		}
	}
	if err := client.Close(); err != nil {
		logger.Error("close", "error", err) // not expected: Close has no deadline
	}

	delivered, failed, errs := t.snapshot()
	total := int64(in.total())
	res := result{
		Success:     delivered == total && failed == 0,
		SentBatches: client.Stats().BatchesDelivered,
		Delivered:   delivered,
		Failed:      failed,
		Errors:      errs,
	}
	if !res.Success {
		msg := summary(total, delivered, failed, errs)
		res.Error = &msg
	}
	return res, nil
}

// summary is the error of a run that did not deliver every event: how many
// failed out of how many, and the first distinct error, which is what a
// harness matching one string wants; the others are in errors.
func summary(total, delivered, failed int64, errs []string) string {
	if failed == 0 || len(errs) == 0 {
		// Not expected: Close reports every event. Say what is known.
		return fmt.Sprintf("%d of %d %s not delivered", total-delivered, total, plural(total, "event was", "events were"))
	}
	s := fmt.Sprintf("%d of %d %s failed: %s", failed, total, plural(total, "event", "events"), errs[0])
	if others := int64(len(errs) - 1); others > 0 {
		s += fmt.Sprintf(" (and %d other distinct %s, listed in errors)", others, plural(others, "error", "errors"))
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// writeResult prints r as one line of JSON.
func writeResult(w io.Writer, r result) error {
	if r.Errors == nil {
		r.Errors = []string{} // [] rather than null
	}
	enc := json.NewEncoder(w) // Encode ends the line
	enc.SetEscapeHTML(false)  // error texts stay readable
	return enc.Encode(r)
}

// tally counts final outcomes. The SDK calls it from several upload
// goroutines at once.
type tally struct {
	mu        sync.Mutex
	delivered int64
	failed    int64
	errs      []string
	seen      map[string]bool
}

// Success counts a delivered event.
func (t *tally) Success(analytics.Message) {
	t.mu.Lock()
	t.delivered++
	t.mu.Unlock()
}

// Failure counts a failed event and keeps its error text, once.
func (t *tally) Failure(_ analytics.Message, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.failed++
	msg := "unknown error"
	if err != nil {
		msg = err.Error()
	}
	if t.seen == nil {
		t.seen = map[string]bool{}
	}
	if !t.seen[msg] {
		t.seen[msg] = true
		t.errs = append(t.errs, msg)
	}
}

func (t *tally) snapshot() (delivered, failed int64, errs []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.delivered, t.failed, append([]string(nil), t.errs...)
}
