package analytics

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/dualpath/analytics-go/analyticstest"
)

// The spool's durability contract, tested across real process deaths: an
// event whose Enqueue returned nil survives a SIGKILL at any later moment,
// and a client started again on the same directory sends it. Only an event
// whose outcome was unknown at the kill may arrive twice, with the same
// messageId. Each test runs this test binary again as children
// (runCrashChild, in spool_crash_child_test.go, which TestMain runs) and kills them.

// crashSeedEnv sets the seed of TestSpoolCrash, to rerun a failure with
// the same kill delays and the same sequence of mock answers (which
// events are in flight at a kill still depends on the machine).
const crashSeedEnv = "SPOOLCRASH_SEED"

// crashChild is one child process.
type crashChild struct {
	cmd    *exec.Cmd
	lines  chan string // its stdout, line by line; closed at EOF
	stderr *logBuffer  // the SDK's logs, race reports, panics
	once   sync.Once
	err    error // Wait's
}

// startCrashChild starts a child with cfg. Cleanup kills it and waits for
// it, if the test has not.
func startCrashChild(t *testing.T, ctx context.Context, cfg crashChildConfig) *crashChild {
	t.Helper()
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$", "-test.count=1", "-test.timeout=2m")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+string(raw))
	cmd.WaitDelay = 5 * time.Second
	ch := &crashChild{cmd: cmd, lines: make(chan string, 256), stderr: &logBuffer{}}
	cmd.Stderr = ch.stderr
	// stdin is a pipe the parent never writes: a "down" child blocks on it.
	_, err = cmd.StdinPipe()
	require.NoError(t, err)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start(), "starting the child")
	go func() {
		defer close(ch.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = ch.cmd.Process.Kill()
		for range ch.lines {
		}
		_ = ch.wait()
	})
	return ch
}

// kill sends SIGKILL; the caller goes on reading lines until they end.
func (ch *crashChild) kill() { _ = ch.cmd.Process.Kill() }

// wait waits for the child to exit, once its stdout has been read to the
// end, and returns Wait's error.
func (ch *crashChild) wait() error {
	ch.once.Do(func() { ch.err = ch.cmd.Wait() })
	return ch.err
}

// killed reports whether the child died of a signal (our SIGKILL).
func (ch *crashChild) killed() bool {
	return ch.cmd.ProcessState != nil && ch.cmd.ProcessState.ExitCode() == -1
}

// checkStderr fails the test if the child's stderr shows a data race or a
// panic, which a killed child has no exit status to report.
func (ch *crashChild) checkStderr(t *testing.T, name string) {
	t.Helper()
	if s := ch.stderr.String(); strings.Contains(s, "DATA RACE") || strings.Contains(s, "panic:") {
		t.Errorf("%s: stderr shows a race or a panic:\n%s", name, s)
	}
}

// cutLine splits a child's line into its verb and the rest.
func cutLine(line string) (verb, arg string) {
	verb, arg, _ = strings.Cut(line, " ")
	return verb, arg
}

// flakyRule answers at random, from rng: 15% 503, 5% a dropped connection
// (read, then closed unanswered: maybe delivered, for the client), 10% a
// 200 that comes 20 ms late (so that batches are in flight at a kill), the
// rest the default, 200. It runs under the Server's lock, which serializes
// its use of rng.
func flakyRule(rng *rand.Rand) func(analyticstest.Request) analyticstest.Answer {
	return func(analyticstest.Request) analyticstest.Answer {
		switch p := rng.IntN(100); {
		case p < 15:
			return analyticstest.Status(503)
		case p < 20:
			return analyticstest.Answer{Drop: true}
		case p < 30:
			return analyticstest.Answer{Delay: 20 * time.Millisecond}
		}
		return analyticstest.Answer{Default: true}
	}
}

func crashSeed(t *testing.T) uint64 {
	t.Helper()
	if s := os.Getenv(crashSeedEnv); s != "" {
		seed, err := strconv.ParseUint(s, 10, 64)
		require.NoError(t, err, crashSeedEnv)
		return seed
	}
	return uint64(time.Now().UnixNano())
}

// answers summarizes what the mock answered: "120×200 20×503 7×dropped".
func answers(api *analyticstest.Server) string {
	counts := map[int]int{}
	for _, r := range api.Requests() {
		counts[r.Status]++
	}
	codes := make([]int, 0, len(counts))
	for c := range counts {
		codes = append(codes, c)
	}
	slices.Sort(codes)
	var parts []string
	for _, c := range codes {
		name := strconv.Itoa(c)
		if c == 0 {
			name = "unanswered"
		}
		parts = append(parts, fmt.Sprintf("%d×%s", counts[c], name))
	}
	return strings.Join(parts, " ")
}

// TestSpoolCrash kills a client that enqueues as fast as it is paced,
// against a flaky tracking API, at random moments, and starts it again on
// the same directory each time; a last one enqueues a few more and Closes.
// Every event whose Enqueue returned nil must then have reached the API in
// a 2xx-answered request.
func TestSpoolCrash(t *testing.T) {
	start := time.Now()
	seed := crashSeed(t)
	t.Logf("seed %d (rerun with %s=%d)", seed, crashSeedEnv, seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	api := analyticstest.New().Rule(flakyRule(rand.New(rand.NewPCG(seed, 2))))
	ln, err := api.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	dir := t.TempDir()
	// A bound on the whole test: a child that hangs is killed by it.
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()

	const (
		kills      = 5
		finalCount = 200
	)
	var (
		accepted   = map[string]bool{} // ids a child said Enqueue accepted
		unreported []string            // ids a killed child may have accepted without saying so
		recovered  []int64             // Stats().Spool.Recovered of each child at start
		delays     []time.Duration
		lives      []crashLife // each child's, in order
		next       int         // the number of the next child's first event
		final      Stats
		gotStats   bool
	)
	// read takes a child's lines until they end; it kills the child after
	// delay from its "ready" (delay 0: never).
	read := func(ch *crashChild, name string, delay time.Duration, life crashLife) {
		last := next - 1
		var killAt <-chan time.Time
		for lines := ch.lines; lines != nil; {
			select {
			case line, ok := <-lines:
				if !ok {
					lines = nil
					continue
				}
				switch verb, arg := cutLine(line); verb {
				case "ready":
					n, err := strconv.ParseInt(arg, 10, 64)
					require.NoError(t, err, "%s: %q", name, line)
					recovered = append(recovered, n)
					if delay > 0 {
						// The stimulus: a kill at a random moment of the
						// run, not a wait for the client to do something.
						killAt = time.After(delay)
					}
				case "id":
					accepted[arg] = true
					n, err := strconv.Atoi(strings.TrimPrefix(arg, "e-"))
					require.NoError(t, err, "%s: %q", name, line)
					last = n
				case "stats":
					require.NoError(t, json.Unmarshal([]byte(arg), &final), "%s: %q", name, line)
					gotStats = true
				case "fail":
					t.Errorf("%s: %s", name, arg)
				}
			case <-killAt:
				life.kill = time.Now()
				ch.kill()
				killAt = nil
			}
		}
		err := ch.wait()
		life.end = time.Now()
		lives = append(lives, life)
		ch.checkStderr(t, name)
		if delay > 0 {
			require.True(t, ch.killed(), "%s ended before its kill (%v); stderr:\n%s", name, err, ch.stderr)
			// The child may have accepted event last+1 and died before
			// saying so: skip its number, so that no messageId stands for
			// two events.
			unreported = append(unreported, fmt.Sprintf("e-%d", last+1))
			next = last + 2
		} else {
			require.NoError(t, err, "%s; stderr:\n%s", name, ch.stderr)
		}
	}

	for k := range kills {
		delay := time.Duration(50+rng.IntN(351)) * time.Millisecond
		delays = append(delays, delay)
		life := crashLife{start: time.Now()}
		ch := startCrashChild(t, ctx, crashChildConfig{Mode: "run", Endpoint: ln.URL, Dir: dir, Prefix: "e-", First: next,
			WriteKey: crashWriteKey(len(lives))})
		read(ch, fmt.Sprintf("child %d (killed after %v)", k+1, delay), delay, life)
	}
	life := crashLife{start: time.Now()}
	ch := startCrashChild(t, ctx, crashChildConfig{Mode: "final", Endpoint: ln.URL, Dir: dir, Prefix: "e-", First: next,
		Count: finalCount, WriteKey: crashWriteKey(len(lives))})
	read(ch, "final child", 0, life)
	require.True(t, gotStats, "the final child printed no stats")

	delivered := api.Delivered()
	var missing []string
	for id := range accepted {
		if delivered[id] == 0 {
			missing = append(missing, id)
		}
	}
	slices.Sort(missing)
	dups, extra := 0, 0
	var strangers []string
	for id, n := range delivered {
		if n > 1 {
			dups++
			extra += n - 1
		}
		if !accepted[id] && !slices.Contains(unreported, id) {
			strangers = append(strangers, id)
		}
	}
	unreportedSent := 0
	for _, id := range unreported {
		if delivered[id] > 0 {
			unreportedSent++
		}
	}
	var sum int64
	for _, n := range recovered {
		sum += n
	}
	t.Logf("%d kills after %v; %d events accepted; %d delivered (%d of %d unreported ones too); %d delivered more than once (%d extra copies); recovered at each start %v; mock answered %s",
		kills, delays, len(accepted), len(delivered), unreportedSent, len(unreported), dups, extra, recovered, answers(api))
	again := redeliveries(api, lives)
	t.Logf("of the ids delivered more than once, %d were delivered twice by one child; the others' first 2xx request arrived %s before the kill of the child that sent it",
		len(again.sameChild), again.lags())
	t.Logf("final child's Stats: enqueued %d, delivered %d, failed %d; Spool %+v; test took %v",
		final.Enqueued, final.Delivered, final.Failed.Total(), final.Spool, time.Since(start).Round(time.Millisecond))

	if len(missing) > 0 {
		t.Errorf("seed %d: %d of %d accepted events never delivered (2xx): %v", seed, len(missing), len(accepted), head(missing, 50))
	}
	assert.Empty(t, strangers, "delivered ids no child enqueued")
	// A child that had its 2xx and lived on marked the events done: it
	// must not send them again itself.
	assert.Empty(t, again.sameChild, "ids one child delivered twice: %s", again.sameDetail)
	assert.Positive(t, sum, "events recovered over all restarts")
	assert.Zero(t, final.Failed.Total(), "the final child's failed events")
	assert.Zero(t, final.Spool.Left, "events the final Close left in the spool")
	assert.Zero(t, final.Spool.Records, "events in the spool after the final Close")
}

// crashLife is when a child was started, killed (zero: not killed) and
// seen dead.
type crashLife struct{ start, kill, end time.Time }

// crashWriteKey is the write key of child i (from 0), by which the mock's
// record tells which child sent a request: a request sent just before a
// kill may be read after the next child started.
func crashWriteKey(i int) string { return fmt.Sprintf("crash-child-%d", i) }

// writeKeyOf returns the write key of a recorded request: the user name of
// its Basic credentials.
func writeKeyOf(r analyticstest.Request) string {
	b64, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Basic ")
	if !ok {
		return ""
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return ""
	}
	user, _, _ := strings.Cut(string(raw), ":")
	return user
}

// crashRedeliveries describes the ids delivered (2xx) more than once.
type crashRedeliveries struct {
	// sameChild are ids one child delivered twice or more; sameDetail
	// says when and in which requests, one line per set of requests.
	sameChild  []string
	sameDetail []string
	// lag is, for each other id, how long before the kill of the child
	// that first delivered it that request arrived at the mock: short,
	// when only events whose outcome was unknown at the kill come again.
	lag []time.Duration
}

func redeliveries(api *analyticstest.Server, lives []crashLife) crashRedeliveries {
	type delivery struct {
		child, req int
		at         time.Time
	}
	byID := map[string][]delivery{}
	reqs := api.Requests()
	for k, r := range reqs {
		if r.Status < 200 || r.Status > 299 {
			continue
		}
		child := -1
		for i := range lives {
			if writeKeyOf(r) == crashWriteKey(i) {
				child = i
			}
		}
		for _, id := range r.MessageIDs() {
			byID[id] = append(byID[id], delivery{child, k, r.At})
		}
	}
	var out crashRedeliveries
	details := map[string]bool{}
	for id, ds := range byID {
		if len(ds) < 2 {
			continue
		}
		seen := map[int]bool{}
		for _, d := range ds {
			if seen[d.child] {
				out.sameChild = append(out.sameChild, id)
				var b strings.Builder
				for _, d := range ds {
					r := reqs[d.req]
					ids := r.MessageIDs()
					fmt.Fprintf(&b, "[request %d, child %d, at +%v, %d events %s..%s, %d] ", d.req, d.child+1,
						d.at.Sub(lives[max(d.child, 0)].start).Round(time.Millisecond), len(ids), ids[0], ids[len(ids)-1], r.Status)
				}
				details[b.String()] = true
				break
			}
			seen[d.child] = true
		}
		first := ds[0]
		if first.child >= 0 && !lives[first.child].kill.IsZero() {
			out.lag = append(out.lag, lives[first.child].kill.Sub(first.at))
		}
	}
	for d := range details {
		out.sameDetail = append(out.sameDetail, d)
	}
	slices.Sort(out.sameChild)
	slices.Sort(out.sameDetail)
	slices.Sort(out.lag)
	return out
}

// lags summarizes the lags: "12ms median, 40ms max (213 ids)".
func (r crashRedeliveries) lags() string {
	if len(r.lag) == 0 {
		return "– (none)"
	}
	ms := func(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
	return fmt.Sprintf("%s median, %s at most (%d ids)", ms(r.lag[len(r.lag)/2]), ms(r.lag[len(r.lag)-1]), len(r.lag))
}

// head returns the first n of s.
func head(s []string, n int) []string { return s[:min(n, len(s))] }

// TestSpoolCrashRecovery: a client enqueues K events while the API is down
// and is SIGKILLed right after the last Enqueue returned. A client started
// on the same directory against a healthy API recovers all K and delivers
// each exactly once, with its messageId and timestamp, and its callback
// gets an analytics.Spooled with Recovered set for each.
func TestSpoolCrashRecovery(t *testing.T) {
	const k = 50
	down := analyticstest.New().Default(analyticstest.Status(503))
	dl, err := down.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = dl.Close() })
	up := analyticstest.New()
	ul, err := up.Start()
	require.NoError(t, err)
	t.Cleanup(func() { _ = ul.Close() })
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), 45*time.Second)
	defer cancel()

	// The first client: K events, each with its own timestamp, then SIGKILL.
	ch := startCrashChild(t, ctx, crashChildConfig{Mode: "down", Endpoint: dl.URL, Dir: dir, Prefix: "d-", Count: k})
	var ids []string
	for line := range ch.lines {
		switch verb, arg := cutLine(line); verb {
		case "id":
			ids = append(ids, arg)
		case "done":
			ch.kill()
		case "fail":
			t.Errorf("down child: %s", arg)
		}
	}
	err = ch.wait()
	ch.checkStderr(t, "down child")
	require.True(t, ch.killed(), "the down child ended before its kill (%v); stderr:\n%s", err, ch.stderr)
	require.Len(t, ids, k, "events the down child accepted")
	require.Empty(t, down.Delivered(), "the down API answers 503 to every request")

	// The second: nothing of its own, Close.
	ch = startCrashChild(t, ctx, crashChildConfig{Mode: "recover", Endpoint: ul.URL, Dir: dir})
	var (
		recovered = int64(-1)
		cbs       []crashCallback
		stats     Stats
	)
	for line := range ch.lines {
		switch verb, arg := cutLine(line); verb {
		case "ready":
			recovered, err = strconv.ParseInt(arg, 10, 64)
			require.NoError(t, err, line)
		case "cb":
			var cb crashCallback
			require.NoError(t, json.Unmarshal([]byte(arg), &cb), line)
			cbs = append(cbs, cb)
		case "stats":
			require.NoError(t, json.Unmarshal([]byte(arg), &stats), line)
		case "fail":
			t.Errorf("recover child: %s", arg)
		}
	}
	err = ch.wait()
	ch.checkStderr(t, "recover child")
	require.NoError(t, err, "recover child; stderr:\n%s", ch.stderr)
	t.Logf("recovered %d at New; Stats: delivered %d, failed %d, Spool %+v; mock answered %s",
		recovered, stats.Delivered, stats.Failed.Total(), stats.Spool, answers(up))

	assert.Equal(t, int64(k), recovered, "Stats().Spool.Recovered right after New")
	assert.Equal(t, int64(k), stats.Spool.Recovered, "Stats().Spool.Recovered after Close")
	assert.Zero(t, stats.Failed.Total(), "failed events")
	assert.Zero(t, stats.Spool.Left, "events Close left in the spool")

	// Each event delivered exactly once, as the first client encoded it.
	delivered := up.Delivered()
	assert.Len(t, delivered, k, "distinct messageIds delivered")
	sent := map[string]map[string]any{} // by messageId, as the down API received it (if it did)
	for _, r := range down.Requests() {
		for i, id := range r.MessageIDs() {
			sent[id] = r.Events[i]
		}
	}
	for _, r := range up.Requests() {
		if r.Status < 200 || r.Status > 299 {
			continue
		}
		for i, id := range r.MessageIDs() {
			n, err := strconv.Atoi(strings.TrimPrefix(id, "d-"))
			if !assert.NoError(t, err, "delivered messageId %q", id) {
				continue
			}
			assertCrashTimestamp(t, r.Events[i]["timestamp"], n, "delivered event "+id)
			if s, ok := sent[id]; ok {
				assert.Equal(t, s, r.Events[i], "event %s as delivered vs as first sent", id)
			}
		}
	}
	for _, id := range ids {
		assert.Equal(t, 1, delivered[id], "times %s was delivered", id)
	}

	// One callback per event: a recovered Spooled, delivered.
	assert.Len(t, cbs, k, "callbacks")
	seen := map[string]int{}
	for _, cb := range cbs {
		seen[cb.MessageID]++
		assert.Equal(t, "analytics.Spooled", cb.Type, "callback message type of %s", cb.MessageID)
		assert.True(t, cb.Recovered, "Spooled.Recovered of %s", cb.MessageID)
		assert.Empty(t, cb.Err, "callback error of %s", cb.MessageID)
		var ev struct {
			MessageID string `json:"messageId"`
			Timestamp any    `json:"timestamp"`
		}
		if assert.NoError(t, json.Unmarshal(cb.JSON, &ev), "Spooled.JSON of %s: %s", cb.MessageID, cb.JSON) {
			assert.Equal(t, cb.MessageID, ev.MessageID, "messageId inside Spooled.JSON")
			if n, err := strconv.Atoi(strings.TrimPrefix(cb.MessageID, "d-")); assert.NoError(t, err) {
				assertCrashTimestamp(t, ev.Timestamp, n, "Spooled.JSON of "+cb.MessageID)
			}
		}
	}
	for _, id := range ids {
		assert.Equal(t, 1, seen[id], "callbacks for %s", id)
	}
}

// assertCrashTimestamp checks that ts, a decoded "timestamp", is the one
// the down child set on event n.
func assertCrashTimestamp(t *testing.T, ts any, n int, what string) {
	t.Helper()
	s, ok := ts.(string)
	if !assert.True(t, ok, "%s: timestamp %v is not a string", what, ts) {
		return
	}
	got, err := time.Parse(time.RFC3339Nano, s)
	if assert.NoError(t, err, "%s: timestamp", what) {
		assert.True(t, got.Equal(crashTimestamp(n)), "%s: timestamp %s, want %s", what, s, crashTimestamp(n).Format(time.RFC3339Nano))
	}
}
