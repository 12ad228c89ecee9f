package analytics

import (
	"cmp"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// The child side of the spool crash tests (spool_crash_test.go): the test
// binary run again as a separate process, which a parent SIGKILLs.

// crashChildEnv marks a child process and carries its crashChildConfig as
// JSON. It is not an ANALYTICS_ variable: OptionsFromEnv refuses unknown
// ones.
const crashChildEnv = "SPOOLCRASH_CHILD"

// crashChildConfig is what a parent asks of one child.
type crashChildConfig struct {
	// Mode is what the child does with its client:
	//   - "run": enqueue events until killed;
	//   - "final": enqueue Count events, Close, print its Stats;
	//   - "down": enqueue Count events with fixed timestamps against an API
	//     that is down, then wait to be killed;
	//   - "recover": enqueue nothing, Close, print its callbacks and Stats.
	Mode     string `json:"mode"`
	Endpoint string `json:"endpoint"`
	Dir      string `json:"dir"`
	Prefix   string `json:"prefix"` // messageIds are Prefix + number
	First    int    `json:"first"`  // the number of the first event
	Count    int    `json:"count"`
	// WriteKey tells the API which child sent a request (the mock takes
	// any); "" is testWriteKey.
	WriteKey string `json:"writeKey,omitempty"`
}

// crashTimestamp is the Timestamp of event n in the "down" mode: a whole
// millisecond, as the wire layout keeps them.
func crashTimestamp(n int) time.Time {
	return time.Date(2026, time.January, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(n) * time.Millisecond)
}

// crashCallback is what a "recover" child prints of each callback.
type crashCallback struct {
	Type      string          `json:"type"` // the message's Go type: analytics.Spooled
	MessageID string          `json:"messageId"`
	Recovered bool            `json:"recovered"`
	JSON      json.RawMessage `json:"json,omitempty"`
	Err       string          `json:"err,omitempty"`
}

// runCrashChild is the child process: TestMain runs it, instead of the
// tests, when crashChildEnv is set, and exits with what it returns. It
// writes one line per fact to stdout, each in one write (so a
// kill never leaves half a line): "ready <recovered>" once the client is
// built, "id <messageId>" after each Enqueue that returned nil, then, by
// mode, "done", "cb <json>" and "stats <json>". The SDK logs to stderr.
func runCrashChild(raw string) int {
	var cfg crashChildConfig
	if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
		return crashFail("%s: %v", crashChildEnv, err)
	}
	say := func(format string, args ...any) {
		if _, err := os.Stdout.Write(fmt.Appendf(nil, format+"\n", args...)); err != nil {
			os.Exit(crashFail("stdout: %v", err))
		}
	}

	opts := []Option{
		WithEndpoint(cfg.Endpoint),
		WithSpool(cfg.Dir), // WithSpoolSync left at its default
		WithFlushAt(20),
		WithFlushInterval(10 * time.Millisecond),
		WithBackoffBase(time.Millisecond),
		WithBackoffCap(20 * time.Millisecond),
		WithRetryCount(1000),
		WithCloseTimeout(0),
		WithLogger(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))),
	}
	var (
		mu  sync.Mutex
		cbs []crashCallback
	)
	switch cfg.Mode {
	case "down":
		// Slow retries: no batch may use its retries up (and fail for
		// good, leaving nothing to recover) before the kill.
		opts = append(opts, WithFlushAt(10), WithBackoffBase(500*time.Millisecond), WithBackoffCap(5*time.Second))
	case "recover":
		opts = append(opts, WithCallback(CallbackFunc(func(m Message, err error) {
			cb := crashCallback{Type: fmt.Sprintf("%T", m), MessageID: MessageID(m)}
			if s, ok := m.(Spooled); ok {
				cb.Recovered, cb.JSON = s.Recovered, s.JSON
			}
			if err != nil {
				cb.Err = err.Error()
			}
			mu.Lock()
			cbs = append(cbs, cb)
			mu.Unlock()
		})))
	}
	c, err := New(cmp.Or(cfg.WriteKey, testWriteKey), opts...)
	if err != nil {
		say("fail New: %v", err)
		return crashFail("New: %v", err)
	}
	say("ready %d", c.Stats().Spool.Recovered)

	enqueue := func(n int, ts time.Time) {
		id := fmt.Sprintf("%s%d", cfg.Prefix, n)
		err := c.Enqueue(Track{MessageId: id, UserId: "u-crash", Event: "Crash Test", Timestamp: ts,
			Properties: Properties{"n": n}})
		if err != nil {
			say("fail Enqueue %s: %v", id, err)
			os.Exit(crashFail("Enqueue %s: %v", id, err))
		}
		say("id %s", id)
	}
	switch cfg.Mode {
	case "run":
		// Paced at about ten events a millisecond, so that a run of a few
		// hundred milliseconds makes thousands of events, not the hundreds
		// of thousands the mock would have to keep: the pace is the
		// test's load, not a wait for the client.
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for n := cfg.First; ; n++ {
			enqueue(n, time.Time{})
			if n%10 == 9 {
				<-tick.C
			}
		}
	case "down":
		for n := cfg.First; n < cfg.First+cfg.Count; n++ {
			enqueue(n, crashTimestamp(n))
		}
		say("done")
		// Wait for the kill: the parent never writes to stdin, and a read
		// of it blocks without keeping a CPU busy.
		_, _ = os.Stdin.Read(make([]byte, 1))
		return crashFail("stdin closed: the parent went away before killing the child")
	case "final":
		for n := cfg.First; n < cfg.First+cfg.Count; n++ {
			enqueue(n, time.Time{})
		}
	case "recover":
	default:
		return crashFail("unknown mode %q", cfg.Mode)
	}
	if err := c.Close(); err != nil {
		say("fail Close: %v", err)
		return crashFail("Close: %v", err)
	}
	mu.Lock()
	for _, cb := range cbs {
		line, _ := json.Marshal(cb)
		say("cb %s", line)
	}
	mu.Unlock()
	stats, _ := json.Marshal(c.Stats())
	say("stats %s", stats)
	return 0
}

// crashFail reports why a child gave up, on stderr, which the parent
// shows, and returns the child's exit code.
func crashFail(format string, args ...any) int {
	fmt.Fprintf(os.Stderr, "crash child: "+format+"\n", args...)
	return 1
}
