// Command e2e-cli drives the SDK for the cross-SDK conformance harness
// (docs/SPEC.md §9): it reads one JSON document describing a write key, an API
// host, SDK settings and sequences of events, sends the events through an
// analytics.Client, closes it, and prints the outcome.
//
// Usage:
//
//	go build -o e2e-cli ./e2e/cli
//	e2e-cli --input '{"writeKey": "wk", "sequences": [...]}'
//	e2e-cli --input @input.json
//	e2e-cli --input - < input.json
//	e2e-cli --debug --input @input.json   # SDK logs at Debug level
//
// Input:
//
//	{
//	  "writeKey": "wk",                          required, non-empty string
//	  "apiHost": "http://127.0.0.1:8080",        optional (absent or null: https://api.segment.io)
//	  "sequences": [                             required, may be empty
//	    {"delayMs": 0,                           optional, non-negative number (ms)
//	     "events": [{"type": "track", ...}]}     required, may be empty
//	  ],
//	  "config": {...}                            optional
//	}
//
// Event fields are those of the Segment spec: type (track, identify, page,
// screen, group or alias, lower case), userId, anonymousId, messageId,
// timestamp (RFC 3339), event, properties, traits, name, category, groupId,
// previousId, context, integrations. A given messageId and timestamp are
// kept; the SDK fills only empty ones. The SDK writes timestamps in UTC
// with millisecond precision, so a timestamp reaches the API as the same
// instant, truncated to the millisecond.
//
// Config keys, all optional: flushAt, maxRetries (0 = no retry),
// maxConcurrentRequests (integers; 10.0 is 10, 10.5 is bad input), gzip
// (boolean); flushInterval, backoffBase, backoffCap (milliseconds);
// timeout, maxTotalBackoffDuration, maxRateLimitDuration,
// rateLimitRetryAfterCap (seconds). Durations may have fractions and are
// converted exactly; one finer than a nanosecond is bad input rather than
// rounded.
//
// Decisions where the spec is silent:
//   - JSON null stands for "absent" wherever a value is optional (an event
//     field, a config key, apiHost, delayMs); it is a type error where a
//     value is required (writeKey, sequences, events, type).
//   - Every Segment field is type-checked on every event, but a field the
//     message type does not have (event on an identify, traits on a track,
//     anonymousId on an alias, which analytics.Alias lacks) is then
//     ignored without a warning: harness inputs may carry them.
//   - Unknown keys (top level, in a sequence, in an event, in config) are
//     ignored with one warning per name on stderr, so that a newer harness
//     still runs.
//   - delayMs is waited before its sequence is enqueued, counted from the
//     end of the previous sequence (from the start for the first).
//   - A given apiHost, even "", goes to analytics.New, which refuses
//     anything but an absolute http(s) URL: a typo never falls back on the
//     real Segment endpoint.
//   - A config value of the right type but out of range (flushAt 0,
//     timeout -1) is bad input too: New's error, which names the SDK
//     option (FlushAt, RequestTimeout), is printed as is.
//   - An event Enqueue refuses is logged on stderr with its JSON path; its
//     error goes into errors without the path, so that like errors are
//     listed once.
//
// Output: after the last sequence the client is closed (Close waits for the
// final outcome of every batch) and one JSON line goes to stdout:
//
//	{"success":true,"sentBatches":3,"delivered":700,"failed":0,"errors":[]}
//
// sentBatches counts batches answered 2xx; delivered and failed count
// events, an event that Enqueue refused counting as failed; success is true
// when every event was delivered; errors lists each distinct final error
// once, in the order first seen. Warnings and SDK logs go to stderr.
//
// Exit status: 0 on success, 1 when any event was not delivered, 2 for bad
// input (the reason, with a JSON path, on stderr; nothing is sent). The
// write key never appears in any output.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
)

// Exit statuses.
const (
	exitSuccess  = 0 // every event was delivered
	exitFailure  = 1 // some event was not
	exitBadInput = 2 // nothing was sent
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// run is the whole command, with its streams as parameters so that tests
// run it in-process. It returns the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// The SDK logs from its upload goroutines while run writes warnings:
	// one lock keeps lines whole (and a test's bytes.Buffer race-free).
	stderr = &lockedWriter{w: stderr}

	fs := flag.NewFlagSet("e2e-cli", flag.ContinueOnError)
	fs.SetOutput(stderr)
	input := fs.String("input", "", "the input: JSON text, @file to read a file, or - to read stdin")
	debug := fs.Bool("debug", false, "log the SDK at Debug level (default Warn)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: e2e-cli [--debug] --input '<json>' | @file.json | -")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitSuccess
		}
		return exitBadInput // flag has printed the reason and the usage
	}
	if fs.NArg() > 0 {
		// Not echoed: a misplaced input document would print its write key.
		return badInput(stderr, fmt.Errorf("%d unexpected argument(s) after the flags; the input goes in --input", fs.NArg()))
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "input" })
	if !given {
		return badInput(stderr, errors.New("--input is required"))
	}

	data, err := readInput(*input, stdin)
	if err != nil {
		return badInput(stderr, err)
	}
	in, warnings, err := decodeInput(data)
	if err != nil {
		return badInput(stderr, err)
	}
	for _, w := range warnings {
		fmt.Fprintf(stderr, "e2e-cli: warning: %s\n", w)
	}

	level := slog.LevelWarn
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	res, err := send(in, logger)
	if err != nil {
		// New refused the configuration (config or apiHost); its error
		// names the option.
		return badInput(stderr, err)
	}
	if err := writeResult(stdout, res); err != nil {
		fmt.Fprintf(stderr, "e2e-cli: writing the result: %v\n", err)
		return exitFailure
	}
	if !res.Success {
		return exitFailure
	}
	return exitSuccess
}

func badInput(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "bad input: %v\n", err)
	return exitBadInput
}

// readInput returns the JSON text that the --input value stands for.
func readInput(arg string, stdin io.Reader) ([]byte, error) {
	switch {
	case arg == "-":
		data, err := io.ReadAll(stdin)
		if err != nil {
			return nil, fmt.Errorf("--input -: reading stdin: %w", err)
		}
		return data, nil
	case strings.HasPrefix(arg, "@"):
		// JSON text never starts with @, so this cannot shadow an input.
		data, err := os.ReadFile(arg[1:])
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", arg, err)
		}
		return data, nil
	default:
		return []byte(arg), nil
	}
}

// lockedWriter serializes writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
