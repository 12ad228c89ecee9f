package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dualpath/analytics-go/benchmarks/sdk"
)

type orchestrator struct {
	events      int
	producers   []int // one row per count
	timeout     time.Duration
	repeat      int
	seed        uint64
	onFull      string
	sharedProps bool
	profile     string
	verbose     bool
	out         string
}

// run is one driver run against one fresh sink.
type run struct {
	drv     *driverResult // nil when the driver failed or timed out
	sink    sinkStats
	sinkCPU float64 // seconds of the sink's CPU while the driver ran
	timeout bool
	err     string
}

// sinkProc is a running sink subprocess.
type sinkProc struct {
	cmd      *exec.Cmd
	stdin    io.Closer
	endpoint string
	control  string
}

func self() (string, error) { return os.Executable() }

// startSink starts a sink with scenario and waits for its addresses.
func startSink(ctx context.Context, scenario string, seed uint64) (*sinkProc, error) {
	exe, err := self()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, exe, "-role", "sink", "-scenario", scenario, "-seed", strconv.FormatUint(seed, 10))
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 2 * time.Second
	tieToParent(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	var addr struct{ Endpoint, Control string }
	line, err := bufio.NewReader(stdout).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &addr)
	}
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, fmt.Errorf("sink did not start: %w", err)
	}
	return &sinkProc{cmd: cmd, stdin: stdin, endpoint: addr.Endpoint, control: addr.Control}, nil
}

func (s *sinkProc) stats() (sinkStats, error) {
	var st sinkStats
	resp, err := http.Get(s.control + "/stats")
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// stop ends the sink: closing its stdin is its signal to exit; a sink that
// does not is killed.
func (s *sinkProc) stop() {
	_ = s.stdin.Close()
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
	}
}

// tail keeps the last bytes written to it: a driver's stderr, for errors.
type tail struct{ b []byte }

func (t *tail) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = append(t.b[:0], t.b[len(t.b)-2048:]...)
	}
	return len(p), nil
}

// runDriverProc runs one driver process to completion or timeout and returns
// the last line it printed.
func (o *orchestrator) runDriverProc(ctx context.Context, args []string) (line []byte, timedOut bool, err error) {
	exe, err := self()
	if err != nil {
		return nil, false, err
	}
	dctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	cmd := exec.CommandContext(dctx, exe, args...)
	cmd.WaitDelay = 2 * time.Second
	tieToParent(cmd)
	var stdout bytes.Buffer
	stderr := &tail{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	runErr := cmd.Run()
	if runErr != nil && ctx.Err() != nil {
		return nil, false, ctx.Err()
	}
	if runErr != nil && errors.Is(dctx.Err(), context.DeadlineExceeded) {
		return nil, true, nil
	}
	lines := bytes.Split(bytes.TrimSpace(stdout.Bytes()), []byte("\n"))
	last := lines[len(lines)-1]
	if runErr != nil || len(last) == 0 {
		msg := strings.TrimSpace(string(stderr.b))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		return nil, false, fmt.Errorf("driver: %v: %s", runErr, msg)
	}
	return last, false, nil
}

func (o *orchestrator) runOne(ctx context.Context, sdkName, scenario string, producers, rep int) (run, error) {
	var r run
	sk, err := startSink(ctx, scenario, o.seed)
	if err != nil {
		return r, err
	}
	defer sk.stop()
	// The sink's CPU is counted from here: its start-up is not the row's.
	st0, err := sk.stats()
	if err != nil {
		return r, fmt.Errorf("sink stats: %w", err)
	}
	args := []string{"-role", "driver", "-sdk", sdkName, "-events", strconv.Itoa(o.events),
		"-endpoint", sk.endpoint, "-on-full", o.onFull, "-producers", strconv.Itoa(producers),
		"-shared-props=" + strconv.FormatBool(o.sharedProps)}
	if o.profile != "" {
		base := filepath.Join(o.profile, fmt.Sprintf("%s-%s-p%d-%d", sdkName, scenario, producers, rep))
		args = append(args, "-cpuprofile", base+".cpu.pprof", "-memprofile", base+".mem.pprof")
	}
	line, timedOut, derr := o.runDriverProc(ctx, args)
	if ctx.Err() != nil {
		return r, ctx.Err()
	}
	r.timeout = timedOut
	if derr != nil {
		r.err = derr.Error()
	} else if line != nil {
		var d driverResult
		if err := json.Unmarshal(line, &d); err != nil {
			r.err = "bad driver output: " + err.Error()
		} else {
			r.drv = &d
		}
	}
	if r.sink, err = sk.stats(); err != nil {
		return r, fmt.Errorf("sink stats: %w", err)
	}
	r.sinkCPU = r.sink.CPUSeconds - st0.CPUSeconds
	if o.verbose {
		sj, _ := json.Marshal(r.sink)
		fmt.Fprintf(os.Stderr, "  driver: %s\n  sink:   %s\n", line, sj)
	}
	return r, nil
}

func (o *orchestrator) runTable(ctx context.Context, sdks, scens []string) error {
	if o.profile != "" {
		if err := os.MkdirAll(o.profile, 0o755); err != nil {
			return err
		}
	}
	var rows []row
	n := 0
	for _, sc := range scens {
		for _, p := range o.producers {
			for _, s := range sdks {
				if s == sdk.Floor && sc != "clean" {
					continue // the floor does not retry: a fault would only show as lost events
				}
				rw := row{sdk: s, scenario: sc, producers: p}
				// The repeats of a row are spread over the whole run below,
				// so that a spell of load on the machine falls on every SDK.
				rows = append(rows, rw)
			}
		}
	}
	total := len(rows) * o.repeat
	for rep := range o.repeat {
		for i := range rows {
			rw := &rows[i]
			n++
			fmt.Fprintf(os.Stderr, "[%d/%d] %s / %s / %d producers ...", n, total, rw.sdk, rw.scenario, rw.producers)
			t0 := time.Now()
			r, err := o.runOne(ctx, rw.sdk, rw.scenario, rw.producers, rep)
			if err != nil {
				fmt.Fprintln(os.Stderr)
				return err
			}
			fmt.Fprintf(os.Stderr, " %s %s\n", time.Since(t0).Round(10*time.Millisecond), r.brief(o.events))
			rw.runs = append(rw.runs, r)
		}
	}
	props := "a fresh map per event"
	if o.sharedProps {
		props = "one shared read-only map for every event"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d track events per run (5 string properties, %s), each producer waiting for room when the queue is full, each SDK's defaults except the endpoint; %s\n",
		o.events, props, o.conditions())
	b.WriteString("\n")
	writeTable(&b, rows, o.events)
	b.WriteString("\n")
	writeTargets(&b, rows)
	fmt.Print(b.String())
	if o.out != "" {
		return os.WriteFile(o.out, []byte(b.String()), 0o644)
	}
	return nil
}

func (o *orchestrator) conditions() string {
	rep := "1 run per row"
	if o.repeat > 1 {
		rep = fmt.Sprintf("median of %d runs per row (lost and dups: the worst run)", o.repeat)
	}
	return fmt.Sprintf("%s; %s %s/%s, %d CPUs; %s",
		rep, runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().UTC().Format("2006-01-02"))
}

func (r run) brief(events int) string {
	switch {
	case r.timeout:
		return fmt.Sprintf("TIMEOUT (sink got %d distinct)", r.sink.Distinct)
	case r.drv == nil:
		return "ERROR " + r.err
	}
	sec := float64(r.drv.ElapsedNs) / 1e9
	return fmt.Sprintf("%.2fs %.0f ev/s lost %d dups %d", sec, float64(events)/sec, int64(events)-r.sink.Distinct, r.sink.Duplicates)
}
