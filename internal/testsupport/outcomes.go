package testsupport

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Outcomes is a Callback (Success and Failure of M, the SDK's Message)
// that records every call by the messageId that id returns, in the order
// the calls came. Its methods are safe for concurrent use.
//
//	out := testsupport.NewOutcomes(analytics.MessageID)
//	client, err := analytics.New(key, analytics.WithCallback(out))
type Outcomes[M any] struct {
	id func(M) string

	mu        sync.Mutex
	successes map[string]int
	failures  map[string][]error
	order     []Outcome[M]
	hook      func(id string, err error)
}

// Outcome is one callback: a Success if Err is nil.
type Outcome[M any] struct {
	ID      string // the message's id
	Message M
	Err     error
}

// String shows the message's id and the error's text ("ok" for a
// Success): fmt would show the error as a pointer.
func (o Outcome[M]) String() string {
	if o.Err == nil {
		return o.ID + ": ok"
	}
	return fmt.Sprintf("%s: %v", o.ID, o.Err)
}

// NewOutcomes returns an empty recorder that names each message by id.
func NewOutcomes[M any](id func(M) string) *Outcomes[M] {
	return &Outcomes[M]{id: id, successes: map[string]int{}, failures: map[string][]error{}}
}

// Success records a Success callback.
func (o *Outcomes[M]) Success(m M) { o.add(m, nil) }

// Failure records a Failure callback; err must not be nil.
func (o *Outcomes[M]) Failure(m M, err error) { o.add(m, err) }

func (o *Outcomes[M]) add(m M, err error) {
	id := o.id(m)
	o.mu.Lock()
	if err == nil {
		o.successes[id]++
	} else {
		o.failures[id] = append(o.failures[id], err)
	}
	o.order = append(o.order, Outcome[M]{ID: id, Message: m, Err: err})
	hook := o.hook
	o.mu.Unlock()
	if hook != nil {
		hook(id, err)
	}
}

// SetHook makes f run after each call is recorded, with the message's id
// and the Failure's error (nil for a Success); a test makes it panic.
func (o *Outcomes[M]) SetHook(f func(id string, err error)) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.hook = f
}

// Calls returns how many callbacks were made, successes and failures.
func (o *Outcomes[M]) Calls() (ok, failed int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, n := range o.successes {
		ok += n
	}
	for _, errs := range o.failures {
		failed += len(errs)
	}
	return ok, failed
}

// All returns every callback so far, in the order they came.
func (o *Outcomes[M]) All() []Outcome[M] {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Outcome[M](nil), o.order...)
}

// Successes returns the messages of the Success callbacks so far, in the
// order they came.
func (o *Outcomes[M]) Successes() []M {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []M
	for _, c := range o.order {
		if c.Err == nil {
			out = append(out, c.Message)
		}
	}
	return out
}

// Failures returns the Failure callbacks so far, in the order they came.
func (o *Outcomes[M]) Failures() []Outcome[M] {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []Outcome[M]
	for _, c := range o.order {
		if c.Err != nil {
			out = append(out, c)
		}
	}
	return out
}

// ByID counts, by message id, the Success and the Failure callbacks.
func (o *Outcomes[M]) ByID() (successes, failures map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	successes, failures = map[string]int{}, map[string]int{}
	for id, n := range o.successes {
		successes[id] = n
	}
	for id, errs := range o.failures {
		failures[id] = len(errs)
	}
	return successes, failures
}

// Split checks that each of want got exactly one callback and nothing else
// got any, and returns the delivered ids and the failed ones with their
// errors.
func (o *Outcomes[M]) Split(t testing.TB, want []string) (delivered []string, failed map[string]error) {
	t.Helper()
	o.mu.Lock()
	defer o.mu.Unlock()
	failed = map[string]error{}
	wanted := map[string]bool{}
	for _, id := range want {
		wanted[id] = true
		n := o.successes[id] + len(o.failures[id])
		if !assert.Equal(t, 1, n, "event %s: callbacks (%d Success, %d Failure)", id, o.successes[id], len(o.failures[id])) {
			continue
		}
		if o.successes[id] == 1 {
			delivered = append(delivered, id)
		} else {
			failed[id] = o.failures[id][0]
		}
	}
	for id, n := range o.successes {
		assert.True(t, wanted[id], "Success for %s (%d times), an event that was never accepted", id, n)
	}
	for id := range o.failures {
		assert.True(t, wanted[id], "Failure for %s, an event that was never accepted", id)
	}
	return delivered, failed
}
