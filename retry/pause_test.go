package retry

import (
	"errors"
	"testing"
	"time"
)

func TestPauseIsOpenUntilHeld(t *testing.T) {
	var p Pause
	policy := testPolicy()
	t0 := time.Unix(1_000_000, 0)
	if d, err := p.Wait(t0, &policy); d != 0 || err != nil {
		t.Fatalf("zero Pause: Wait = %v, %v; want open", d, err)
	}
	p.Hold(t0, 3*time.Second)
	if d, err := p.Wait(t0.Add(time.Second), &policy); d != 2*time.Second || err != nil {
		t.Fatalf("1s into a 3s pause: Wait = %v, %v; want 2s", d, err)
	}
	if d, err := p.Wait(t0.Add(3*time.Second), &policy); d != 0 || err != nil {
		t.Fatalf("at the pause's end: Wait = %v, %v; want open", d, err)
	}
	// A shorter hold never shortens the pause.
	p.Hold(t0, time.Second)
	if got := p.Until(); !got.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("Until = %v, want t0+3s", got)
	}
}

// Under sustained rate limiting every batch spends the same episode: a
// wait that would end past MaxRateLimitDuration from the episode's start
// fails, whichever batch's answer asked for it.
func TestPauseWaitsCountAgainstTheEpisode(t *testing.T) {
	var p Pause
	policy := testPolicy()
	policy.MaxRateLimitDuration = 2 * time.Second
	t0 := time.Unix(1_000_000, 0)
	p.Hold(t0, time.Second) // batch A's 429 starts the episode
	if d, err := p.Wait(t0, &policy); d != time.Second || err != nil {
		t.Fatalf("Wait = %v, %v; want 1s", d, err)
	}
	p.Hold(t0.Add(time.Second), time.Second) // batch B's 429, a second later
	if d, err := p.Wait(t0.Add(time.Second), &policy); d != time.Second || err != nil {
		t.Fatalf("a wait ending exactly at the budget: %v, %v; want 1s", d, err)
	}
	p.Hold(t0.Add(1500*time.Millisecond), time.Second) // until t0+2.5s
	if _, err := p.Wait(t0.Add(1500*time.Millisecond), &policy); !errors.Is(err, ErrRateLimitBudgetExceeded) {
		t.Fatalf("a wait ending 2.5s into a 2s episode: %v, want ErrRateLimitBudgetExceeded", err)
	}
	// An attempt answered without Retry-After ends the episode: the pause
	// already announced still holds, and counts from zero.
	p.Answered()
	if d, err := p.Wait(t0.Add(1500*time.Millisecond), &policy); d != time.Second || err != nil {
		t.Fatalf("after the episode ended: Wait = %v, %v; want the 1s left of the pause", d, err)
	}
	// The next 429 starts a new episode.
	p.Hold(t0.Add(2500*time.Millisecond), 2*time.Second)
	if d, err := p.Wait(t0.Add(2500*time.Millisecond), &policy); d != 2*time.Second || err != nil {
		t.Fatalf("a new episode: Wait = %v, %v; want 2s", d, err)
	}
}

func TestPauseWithZeroBudgetNeverWaits(t *testing.T) {
	var p Pause
	policy := testPolicy()
	policy.MaxRateLimitDuration = 0
	t0 := time.Unix(1_000_000, 0)
	p.Hold(t0, time.Second)
	if _, err := p.Wait(t0, &policy); !errors.Is(err, ErrRateLimitBudgetExceeded) {
		t.Fatalf("budget 0: %v, want ErrRateLimitBudgetExceeded", err)
	}
}
