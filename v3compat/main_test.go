package analytics

import (
	"fmt"
	"sync"
	"testing"

	"go.uber.org/goleak"

	root "github.com/dualpath/analytics-go"
	"github.com/dualpath/analytics-go/analyticstest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

const testWriteKey = "wk_SECRET_do_not_log"

// lines is a Logger that records each line with its level.
type lines struct {
	mu  sync.Mutex
	got []string
}

func (l *lines) Logf(format string, args ...any)   { l.add("INFO " + fmt.Sprintf(format, args...)) }
func (l *lines) Errorf(format string, args ...any) { l.add("ERROR " + fmt.Sprintf(format, args...)) }

func (l *lines) add(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.got = append(l.got, s)
}

func (l *lines) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.got...)
}

// outcomes is a v3 Callback that records every call.
type outcomes struct {
	mu        sync.Mutex
	successes []Message
	failures  []error
}

func (o *outcomes) Success(m Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.successes = append(o.successes, m)
}

func (o *outcomes) Failure(_ Message, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures = append(o.failures, err)
}

func (o *outcomes) counts() (ok, failed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.successes), len(o.failures)
}

// newTestClient returns a client that reaches api in memory, logging to a
// lines and calling back an outcomes; cfg's other fields are kept.
func newTestClient(t *testing.T, api *analyticstest.Server, cfg Config, opts ...root.Option) (Client, *lines, *outcomes) {
	t.Helper()
	log, out := &lines{}, &outcomes{}
	cfg.Transport, cfg.Logger, cfg.Callback = api, log, out
	cfg.options = opts
	c, err := NewWithConfig(testWriteKey, cfg)
	if err != nil {
		t.Fatalf("NewWithConfig: %v", err)
	}
	return c, log, out
}
