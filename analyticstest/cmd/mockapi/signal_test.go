//go:build unix

package main

import (
	"bufio"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/internal/testsupport"
)

// hangAfter bounds each wait on the child process: far beyond what a
// start or a stop takes, it only tells a hang from a slow machine.
const hangAfter = 60 * time.Second

// TestStopsBySignal builds the command, runs it as a process of its own
// and stops it by PID, as a script does with `./mockapi & kill $!`.
func TestStopsBySignal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "mockapi")
	build := exec.Command("go", "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			cmd := exec.Command(bin, "-addr", "127.0.0.1:0")
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr testsupport.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())

			// Read stdout to its end (the process's exit) on a goroutine;
			// Wait only after that, as os/exec asks.
			lines := make(chan string, 100)
			exited := make(chan struct{})
			var waitErr error
			go func() {
				defer close(exited)
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					select {
					case lines <- sc.Text():
					default: // the test reads one line: never block the exit on more
					}
				}
				waitErr = cmd.Wait()
			}()
			t.Cleanup(func() {
				select {
				case <-exited:
				default: // still running: the test failed before it stopped
					_ = cmd.Process.Kill()
					<-exited
				}
			})

			var first string
			select {
			case first = <-lines:
			case <-time.After(hangAfter):
				require.FailNow(t, "no output", "within %v; stderr:\n%s", hangAfter, &stderr)
			}
			url, ok := strings.CutPrefix(first, "listening on http://")
			require.True(t, ok, "first line %q, want listening on http://127.0.0.1:port", first)
			conn, err := net.Dial("tcp", url)
			require.NoError(t, err, "the port is open")
			require.NoError(t, conn.Close())

			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case <-exited:
				assert.NoError(t, waitErr, "exit status; stderr:\n%s", &stderr)
			case <-time.After(hangAfter):
				require.FailNow(t, "still running", "%v after %v; stderr:\n%s", hangAfter, sig, &stderr)
			}
			assert.Contains(t, stderr.String(), "mockapi: stopping", "stderr")
			_, err = net.Dial("tcp", url)
			assert.Error(t, err, "the port is closed")
		})
	}
}
